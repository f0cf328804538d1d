"""Reduce: one batch of mapped documents of a KB -> summary, entity and concept pages.

One batch per KB at a time (the Redis active-batch lock). A batch takes at most
``ingest_batch_size`` documents (the last op of each document wins), resolves every extracted
entity and concept to a page (same slug, else the top-K trigram-similar titles PostgreSQL
returns, decided by ``wiki.dedup``; items of the batch are merged with each other first),
writes the pages ``ingest_reduce_parallel`` slugs at a time, queues the touched slugs on the
finalize lane and settles the batch in one transaction. Work read or written is bounded by
the batch, never by the KB.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import dramatiq
import structlog

from actors.args import KbArgs
from actors.coordination import ActiveBatchLock, active_key
from actors.deps import Deps, get_deps
from actors.lanes import FINALIZE, INGEST, OP_RETRACT, OP_TOUCH, REDUCE, SCOPE_KB
from actors.triggers import clear_trigger, send_trigger
from wiki.dedup import choose_existing
from wiki.models import Document, ExtractedItem, Extraction, Page, PageLite, SourceRef
from wiki.render import render_item_page, render_summary_page
from wiki.slugs import normalize_name, slugify, summary_slug

log = structlog.get_logger(__name__)

SIMILAR_K = 5
MAX_FACT_SOURCES = 20  # per-source facts kept on a page; source refs are all kept


@dataclass
class SlugPlan:
    """Everything a batch changes on one slug: contributions to add and sources to drop."""

    title: str
    page_type: str
    add: dict[str, dict] = field(default_factory=dict)      # knowledge id -> fact
    refs: dict[str, str] = field(default_factory=dict)      # knowledge id -> document title
    drop: set[str] = field(default_factory=set)             # knowledge ids retracted here
    aliases: set[str] = field(default_factory=set)
    summary_of: tuple[Document, Extraction] | None = None   # summary pages only


@dataclass
class BatchResult:
    """Counts of one reduce batch (logged, and returned for tests and benchmarks)."""

    documents: int = 0
    retracted: int = 0
    failed: int = 0
    written: int = 0
    deleted: int = 0
    requeued: int = 0
    touched: list[str] = field(default_factory=list)


def run_reduce_batch(deps: Deps, tenant_id: int, knowledge_base_id: str) -> BatchResult:
    """Reduce one batch of the KB's reduce lane (the caller holds the active-batch lock)."""
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    tun = deps.tunables(kb)
    claimed = deps.ops.claim(REDUCE, SCOPE_KB, kb.id, tun.batch_size, deps.settings.stale_claim_s)
    result = BatchResult()
    if not claimed:
        return result
    last = {}
    for op in claimed:  # id order: the last op of a document wins
        last[op.dedup_key] = op
    docs = deps.docs.get_many(list(last))
    ingests: list[tuple[Document, Extraction]] = []
    retracts: list[str] = []
    requeue: list[str] = []
    for kid, op in last.items():
        doc = docs.get(kid)
        if op.op == OP_RETRACT or doc is None or doc.status in ("deleting", "deleted"):
            retracts.append(kid)
            continue
        extraction = deps.extractions.get(kb.id, kid, op.payload.get("content_hash", doc.content_hash),
                                          op.payload.get("extractor", deps.extractor.name))
        if extraction is None:  # no cached extraction for this content (changed since map): map again
            requeue.append(kid)
            continue
        ingests.append((doc, extraction))

    plan: dict[str, SlugPlan] = {}
    existing_by_doc = {kid: deps.pages.slugs_by_source(kb.id, kid) for kid in [*retracts, *(d.id for d, _ in ingests)]}
    for kid, slugs in existing_by_doc.items():
        for slug in slugs:
            plan.setdefault(slug, SlugPlan(title="", page_type="")).drop.add(kid)

    planner = _Planner(deps, kb.id, plan, existing_by_doc)
    failed_ops = []
    for doc, extraction in ingests:
        try:
            planner.add_document(doc, extraction)
        except Exception as exc:
            failed_ops.append((doc.id, exc))

    def write(item: tuple[str, SlugPlan]) -> str:
        return _write_slug(deps, kb.tenant_id, kb.id, item[0], item[1])

    # item pages first, summaries last: a summary's links then point at pages that exist
    ordered = sorted(plan.items(), key=lambda kv: (kv[1].summary_of is not None, kv[0]))
    with ThreadPoolExecutor(max_workers=tun.reduce_parallel) as pool:
        outcomes = list(pool.map(write, ordered))
    deleted = [slug for (slug, _), outcome in zip(ordered, outcomes) if outcome == "deleted"]
    touched = sorted(slug for (slug, _), outcome in zip(ordered, outcomes) if outcome == "written")
    # pages that linked to a deleted page need their links repaired: bounded by those in-links
    touched += [s for s in deps.pages.in_link_sources(kb.id, deleted) if s not in touched]

    failed_ids = {kid for kid, _ in failed_ops}
    with deps.pool.connection() as conn:
        for kid, exc in failed_ops:
            _count_failure(deps, kb.id, [o for o in claimed if o.dedup_key == kid], exc, conn)
        deps.ops.move([o.id for o in claimed if o.dedup_key in requeue], INGEST, conn=conn)
        done = [o.id for o in claimed if o.dedup_key not in failed_ids and o.dedup_key not in requeue]
        deps.ops.delete_by_ids(done, conn=conn)
        if touched:
            deps.ops.enqueue(tenant_id=kb.tenant_id, task_type=FINALIZE, scope=SCOPE_KB, scope_id=kb.id,
                             op=OP_TOUCH, payload={"slugs": touched}, conn=conn)
        deps.docs.set_status([d.id for d, _ in ingests if d.id not in failed_ids], "done", conn=conn)
        deps.docs.mark_deleted(retracts, conn=conn)
    result.documents, result.retracted, result.failed = len(ingests) - len(failed_ops), len(retracts), len(failed_ops)
    result.written, result.deleted, result.touched = len(touched), len(deleted), touched
    result.requeued = len(requeue)
    return result


class _Planner:
    """Turns documents' extractions into per-slug plans, resolving each item to one page."""

    def __init__(self, deps: Deps, kb_id: str, plan: dict[str, SlugPlan], existing_by_doc: dict[str, list[str]]):
        self.deps, self.kb_id, self.plan = deps, kb_id, plan
        self.existing_by_doc = existing_by_doc
        self.batch_keys: dict[str, tuple[str, str]] = {}  # normalize_name of a batch name/alias -> (slug, type)

    def add_document(self, doc: Document, extraction: Extraction) -> None:
        summary = self._summary_slug(doc)
        resolved = self._resolve_items(extraction.items)
        item_links = []
        for item, (slug, page_type) in zip(extraction.items, resolved):
            sp = self.plan.setdefault(slug, SlugPlan(title=item.name, page_type=page_type))
            if not sp.title:
                sp.title, sp.page_type = item.name, page_type
            sp.add[doc.id] = {"doc_title": doc.title, "summary_slug": summary, "description": item.description,
                              "evidence": item.evidence[:3]}
            sp.refs[doc.id] = doc.title
            sp.drop.discard(doc.id)
            sp.aliases.update(a for a in [item.name, *item.aliases] if normalize_name(a) != normalize_name(sp.title))
            item_links.append((item.kind, slug, item.name, item.description))
        sp = self.plan.setdefault(summary, SlugPlan(title=doc.title, page_type="summary"))
        sp.title, sp.page_type = doc.title, "summary"
        sp.refs[doc.id] = doc.title
        sp.drop.discard(doc.id)
        sp.summary_of = (doc, extraction.model_copy(update={"items": []}))
        sp.add[doc.id] = {"links": item_links}

    def _summary_slug(self, doc: Document) -> str:
        """The document's current summary slug, else a new one (suffixed when another doc has it)."""
        mine = self.deps.pages.lite_by_slugs(self.kb_id, self.existing_by_doc.get(doc.id, []))
        for lite in mine.values():
            if lite.page_type == "summary":
                return lite.slug
        slug = summary_slug(doc.title)
        taken = slug in self.plan and self.plan[slug].page_type == "summary" or self.deps.pages.existing_slugs(self.kb_id, [slug])
        return f"{slug}-{doc.id[:8]}" if taken else slug

    def _resolve_items(self, items: Iterable[ExtractedItem]) -> list[tuple[str, str]]:
        items = list(items)
        base = [slugify(i.name) for i in items]
        existing = self.deps.pages.lite_by_slugs(self.kb_id, base)
        out = []
        for item, slug in zip(items, base):
            out.append(self._resolve(item, slug, existing.get(slug)))
        return out

    def _resolve(self, item: ExtractedItem, slug: str, same_slug: PageLite | None) -> tuple[str, str]:
        keys = [normalize_name(n) for n in [item.name, *item.aliases]]
        for key in keys:  # the batch (this document included) against itself first
            if key in self.batch_keys:
                return self.batch_keys[key]
        if same_slug is not None and same_slug.page_type in ("entity", "concept"):
            target = (same_slug.slug, same_slug.page_type)
        elif slug in self.plan and self.plan[slug].page_type in ("entity", "concept"):
            target = (slug, self.plan[slug].page_type)
        else:
            candidates = self.deps.pages.similar_titles(self.kb_id, item.name, k=SIMILAR_K)
            hit = choose_existing(item.name, item.aliases, candidates)
            if hit is not None:
                target = (hit, next(c.page_type for c in candidates if c.slug == hit))
            else:
                if same_slug is not None or (slug in self.plan and self.plan[slug].page_type not in ("entity", "concept")):
                    slug = f"{slug}-{item.kind}"  # the slug belongs to a summary/index page
                target = (slug, item.kind)
        for key in keys:
            self.batch_keys.setdefault(key, target)
        return target


def _write_slug(deps: Deps, tenant_id: int, kb_id: str, slug: str, sp: SlugPlan) -> str:
    """Apply one slug's plan in its own transaction; returns ``written``, ``deleted`` or ``unchanged``."""
    with deps.pool.connection() as conn:
        page = deps.pages.get(kb_id, slug, conn=conn, for_update=True)
        refs = {r.knowledge_id: r.title for r in (page.source_refs if page else [])}
        facts = dict(page.facts) if page else {}
        for kid in sp.drop:
            refs.pop(kid, None)
            facts.pop(kid, None)
        refs.update(sp.refs)
        seq = max((f.get("seq", 0) for f in facts.values()), default=0)
        for kid, fact in sp.add.items():
            if kid in facts or len(facts) < MAX_FACT_SOURCES or sp.summary_of is not None:
                seq += 1
                facts[kid] = {**fact, "seq": facts.get(kid, {}).get("seq", seq)}
        if not refs:
            return "deleted" if page and deps.pages.delete(kb_id, slug, conn=conn) else "unchanged"
        title = page.title if page and page.page_type != "summary" else (sp.title or slug)
        page_type = page.page_type if page else sp.page_type
        aliases = sorted(set(page.aliases if page else []) | sp.aliases)
        aliases = [a for a in aliases if normalize_name(a) != normalize_name(title)][:20]
        if sp.summary_of is not None:
            doc, extraction = sp.summary_of
            content = render_summary_page(extraction, doc.source_uri, facts[doc.id]["links"])
            summary = extraction.summary
        else:
            content = render_item_page(title, facts, aliases, len(refs))
            first = next((f for _, f in sorted(facts.items(), key=lambda kv: kv[1].get("seq", 0))), {})
            summary = first.get("description", "")[:500]
        new = Page(tenant_id=tenant_id, knowledge_base_id=kb_id, slug=slug, title=title, page_type=page_type,
                   content=content, summary=summary, aliases=aliases,
                   source_refs=[SourceRef(knowledge_id=k, title=t) for k, t in sorted(refs.items())], facts=facts)
        if page is not None and page.content == new.content and page.source_refs == new.source_refs \
                and page.aliases == new.aliases:
            return "unchanged"
        deps.pages.save(new, conn=conn)
    return "written"


def _count_failure(deps: Deps, kb_id: str, ops, exc: Exception, conn) -> None:
    error = "".join(traceback.format_exception(exc))[-8192:]
    for op in ops:
        fails = deps.ops.incr_fail_count(op.id, conn=conn)
        if fails is not None and fails > deps.settings.wiki_max_fail_retries:
            deps.dead_letters.move_op_to_dead_letters(op.model_copy(update={"fail_count": fails}),
                                                      task_type="wiki:ingest", error=error, conn=conn)
            deps.docs.set_status([op.dedup_key], "failed", f"reduce failed {fails} times: {exc!r}", conn=conn)
        else:
            deps.ops.release([op.id], conn=conn)
    log.warning("document.reduce_failed", knowledge_base_id=kb_id, knowledge_id=ops[0].dedup_key if ops else None,
                error=repr(exc))


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=900_000)
def wiki_reduce(**kwargs) -> None:
    """Trigger: reduce one batch of the KB under its active-batch lock; follow up at once if rows remain."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_reduce", args.knowledge_base_id)
    lock = ActiveBatchLock(deps.redis, active_key(deps.settings.key_prefix, args.knowledge_base_id),
                           deps.settings.active_lock_ttl_s)
    if not lock.acquire():
        log.info("reduce.busy", knowledge_base_id=args.knowledge_base_id)
        return  # the running batch follows up after it releases the lock
    try:
        result = run_reduce_batch(deps, args.tenant_id, args.knowledge_base_id)
    finally:
        lock.release()
    kb = {"tenant_id": args.tenant_id, "knowledge_base_id": args.knowledge_base_id}
    remaining = deps.ops.pending_count(REDUCE, SCOPE_KB, args.knowledge_base_id)
    log.info("reduce.batch", knowledge_base_id=args.knowledge_base_id, documents=result.documents,
             retracted=result.retracted, failed=result.failed, written=result.written, deleted=result.deleted,
             remaining=remaining)
    if result.touched:
        send_trigger(deps, "wiki_crosslink", **kb)
    if result.requeued:
        send_trigger(deps, "wiki_ingest", **kb)
    if remaining and (result.documents or result.retracted or result.failed):
        send_trigger(deps, "wiki_reduce", debounce=False, **kb)
