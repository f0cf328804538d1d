"""Reduce: one batch of mapped documents of a KB -> summary, entity and concept pages.

One batch per KB at a time. The Redis active-batch lock only says "someone is on it"; PostgreSQL
decides who writes: each batch takes the KB's reduce fencing token as it starts and checks it,
holding the fence row, in its write transaction, so a batch overtaken by a later one (its Redis
lock flushed or expired during a pause) writes nothing and leaves its rows to the next batch.

A batch takes at most ``ingest_batch_size`` documents (the last op of each document wins),
resolves every extracted entity and concept to the page of its name key
(``wiki.dedup.name_key``: the page of the batch, or the live page PostgreSQL finds by that key,
else a new page), then writes the pages, queues the touched slugs on the finalize lane (and the
title keys whose page changed on the backlink lane, ``stages.backlink``) and settles the batch in
one transaction. PostgreSQL is asked in sets (every lookup of the batch at once, every write in
one statement per table), so a batch costs a few dozen round trips whatever its size: a worker
thread waiting on many round trips loses the GIL to map threads at every one. Work read or
written is bounded by the batch, never by the KB.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import structlog
from psycopg import Connection

from repos.coordination import ActiveBatchLock, active_index_key, active_key, tombstoned
from repos.db import refresh_statistics
from repos.pages import WikiPageRepository, title_keys
from repos.pending_ops import PendingOp
from stages.backlink import enqueue_keys
from stages.batch_context import BatchContext
from stages.claims import claim_lane, count_failure, released_on_failure
from stages.crosslink import enqueue_touched
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from stages.index import request_index
from stages.item_pages import plan_item_pages
from stages.leads import enqueue_leads
from wiki.coverage import MentionRow, rows_of
from wiki.dedup import name_key
from wiki.errors import FenceLost, LockLost, error_text
from wiki.lanes import BACKLINK, INGEST, LEAD, OP_RETRACT, REDUCE, SCOPE_KB, Actor
from wiki.links import rewrite_links
from wiki.merge import keep_lead, lead_due
from wiki.models import ITEM_TYPES, RETRACTED, DocStatus, Document, Extraction, Fact, Page, PageType, SourceRef
from wiki.plural import counted
from wiki.render import render_summary_page
from wiki.revisions import Writer, written_by
from wiki.settings import Tunables, kb_tunables
from wiki.slugs import RESERVED_SLUGS, slugify, summary_slug, summary_suffix

log = structlog.get_logger(__name__)


@dataclass
class BatchResult:
    """Counts of one reduce batch (logged, and returned for tests and benchmarks)."""

    documents: int = 0
    retracted: int = 0
    failed: int = 0
    written: int = 0
    deleted: int = 0
    requeued: int = 0
    retry_after_s: float = 0.0  # longest backoff of a document that failed and will be tried again
    keys: int = 0
    leads: int = 0  # lead ops queued
    touched: list[str] = field(default_factory=list)


def run_reduce_batch(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    lock: ActiveBatchLock | None = None,
) -> BatchResult:
    """Reduce one batch of the KB's reduce lane (the caller holds the active-batch ``lock``).

    A document is retracted when its last op is a retract, or when it is tombstoned, deleting,
    deleted or missing whatever its op says: an ingest that raced a delete never brings it back.
    A KB that is gone (before or during the batch) has its lanes drained and keeps no page.

    Raises ``repos.liveness.FenceLost`` when a later batch of the KB started meanwhile, and
    ``wiki.errors.LockLost`` when ``lock`` was lost: the batch then wrote nothing and its
    claims are released.
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return BatchResult()
    tun = kb_tunables(deps.settings, kb)
    # taken before the batch reads anything: every batch that started earlier can no longer write
    # what it planned from older pages
    token = deps.fences.take(REDUCE, SCOPE_KB, kb.id, holder=deps.worker_id, lock_token=lock.token if lock else "")
    claimed = claim_lane(REDUCE, kb.id, tun.batch_size, deps)
    if not claimed:
        return BatchResult()
    with released_on_failure(claimed, deps):
        return _reduce_claimed(kb, tun, claimed, token, lock, deps)


def _reduce_claimed(
    kb,
    tun: Tunables,
    claimed: list[PendingOp],
    token: int,
    lock: ActiveBatchLock | None,
    deps: Deps,
) -> BatchResult:
    result = BatchResult()
    last = {}
    for op in claimed:  # id order: the last op of a document wins
        last[op.dedup_key] = op
    by_id = deps.docs.get_many(list(last))
    gone = tombstoned(deps.redis, deps.settings.key_prefix, kb.id, list(last))
    retracts: list[str] = []
    wanted: dict[str, tuple[str, str]] = {}
    for kid, op in last.items():
        doc = by_id.get(kid)
        if op.op == OP_RETRACT or doc is None or doc.status in RETRACTED or kid in gone:
            retracts.append(kid)
        else:
            wanted[kid] = (
                op.payload.get("content_hash", doc.content_hash),
                op.payload.get("extractor", deps.extractor.name),
            )
    cached = deps.extractions.get_many(kb.id, wanted)
    ingests = [(by_id[kid], cached[kid]) for kid in wanted if kid in cached]
    requeue = [kid for kid in wanted if kid not in cached]  # content changed since map: map again

    ctx = BatchContext(deps.pages, kb.id)
    # asked once for the whole batch: the pages citing its documents, the slugs its summaries take
    citing = ctx.slugs_citing_many([*retracts, *(doc.id for doc, _ in ingests)])
    ctx.lite([*(s for slugs in citing.values() for s in slugs), *(summary_slug(doc.title) for doc, _ in ingests)])
    summaries = _SummarySlugs(ctx, retracts)
    new_rows: dict[str, dict[str, MentionRow]] = {}
    summary_of = {doc.id: summaries.slug_for(doc) for doc, _ in ingests}
    failed_ops = []
    for doc, extraction in ingests:
        try:
            new_rows[doc.id] = rows_of(doc, extraction, summary_of[doc.id])
        except Exception as exc:  # an extraction this code cannot read: the document's failure, not the batch's
            failed_ops.append((doc.id, exc))
    summary_of = {kid: slug for kid, slug in summary_of.items() if kid in new_rows}
    ingested = [(doc, extraction) for doc, extraction in ingests if doc.id in new_rows]
    items = plan_item_pages(
        kb,
        new_rows,
        {*retracts, *new_rows},
        ctx=ctx,
        mentions=deps.mentions,
        taken=set(summary_of.values()),
    )
    planned: dict[str, Page | None] = dict.fromkeys(summaries.freed)  # summaries of retracted documents
    planned.update(dict.fromkeys(items.deleted))
    planned.update(items.pages)
    for doc, extraction in ingested:
        planned[summary_of[doc.id]] = _summary_page(kb, doc, extraction, summary_of[doc.id], items.slug_of)

    failed_ids = {kid for kid, _ in failed_ops}
    with deps.pool.connection() as conn:
        if not deps.kbs.hold_active(kb.id, conn):  # deleted meanwhile: the batch writes nothing
            deps.pages.delete_kb(kb.id, conn=conn)
            deps.mentions.delete_kb(kb.id, conn=conn)
            deps.ops.delete_by_scope(SCOPE_KB, kb.id, conn=conn)
            log.info("kb.gone", knowledge_base_id=kb.id, during="reduce")
            return BatchResult()
        if lock is not None and lock.lost:
            raise LockLost(f"active-batch lock of {kb.id} was lost")
        deps.fences.check(REDUCE, SCOPE_KB, kb.id, token, conn)  # every write below is fenced
        deps.pages.lock_link_graph(kb.id, conn, shared=True)  # exclusive once pages are deleted or moved
        leads = deps.settings.extractor == "llm" and deps.settings.llm_page_leads
        deps.mentions.write(kb.id, items.dropped, items.added, items.stat_deltas, items.name_deltas, conn)
        batch, writers = _page_writers(token, summary_of, [*items.dropped, *items.added], items.slug_of)
        writes = _write_plan(kb, planned, conn, pages=deps.pages, leads=leads, writer=batch, writers=writers)
        touched = sorted((writes.written - set(writes.renames)) | set(writes.renames.values()))
        # pages that linked to a deleted page need their links repaired: bounded by those in-links
        touched += [s for s in deps.pages.in_link_sources(kb.id, writes.deleted, conn=conn) if s not in touched]
        for kid, exc in failed_ops:
            delay = _count_failure(kb.id, [o for o in claimed if o.dedup_key == kid], exc, conn, deps)
            result.retry_after_s = max(result.retry_after_s, delay)
        deps.ops.move([o.id for o in claimed if o.dedup_key in requeue], INGEST, conn=conn)
        done = [o.id for o in claimed if o.dedup_key not in failed_ids and o.dedup_key not in requeue]
        deps.ops.delete_by_ids(done, conn=conn)
        enqueue_touched(kb, touched, ops=deps.ops, conn=conn)
        enqueue_keys(kb, writes.keys, ops=deps.ops, conn=conn)
        result.leads = enqueue_leads(kb, writes.leads, ops=deps.ops, conn=conn)
        if touched or writes.deleted:
            request_index(kb, conn, ops=deps.ops)  # durable: --wait waits for the index to show this batch
        deps.docs.set_status([d.id for d, _ in ingested], DocStatus.done, conn=conn)
        deps.docs.mark_deleted(retracts, conn=conn)
        # the versions the batch just replaced quote them too: no page's history keeps a deleted document
        deps.pages.forget_documents(kb.id, retracts, conn=conn)
        # their dead letters (a map message that ran out of retries in an outage) mean nothing now
        deps.dead_letters.resolve_finished([*(d.id for d, _ in ingested), *retracts], conn=conn)
        # the extraction cache keeps one version per live document: bounded by the KB's documents
        deps.extractions.delete_other_versions(
            kb.id, {**{doc.id: doc.content_hash for doc, _ in ingests}, **dict.fromkeys(retracts, "")}, conn=conn
        )
    if writes.renames:
        log.info("reduce.renamed", knowledge_base_id=kb.id, pages=len(writes.renames))
    result.documents, result.retracted, result.failed = len(ingests) - len(failed_ops), len(retracts), len(failed_ops)
    result.written, result.deleted, result.touched = len(touched), len(writes.deleted), touched
    result.requeued = len(requeue)
    result.keys = len(writes.keys)
    return result


class _SummarySlugs:
    """The summary slugs of a batch's documents: a document keeps the slug it has; a new one takes
    ``summary_slug(title)``, suffixed by its source (``summary_suffix``) when another page holds that
    slug, unless it is the summary of a document retracted in this batch (then it takes it over, as
    it would had the other never existed: a delete then re-add keeps its slug)."""

    def __init__(self, ctx: BatchContext, retracting: list[str]) -> None:
        self.ctx = ctx
        #: slug -> the retracted document whose summary it is (deleted unless taken over)
        self.freed = {slug: kid for kid in retracting if (slug := ctx.summary_of(kid)) is not None}
        self.assigned: dict[str, str] = {}  # slug -> knowledge id

    def slug_for(self, doc: Document) -> str:
        slug = self.ctx.summary_of(doc.id)
        if slug is None:
            slug = summary_slug(doc.title)
            free = slug in self.freed or not self.ctx.lite([slug])
            if slug in self.assigned or not free:
                slug = f"{slug}-{summary_suffix(doc.source_uri, doc.id)}"
        self.assigned[slug] = doc.id
        self.freed.pop(slug, None)
        return slug


def _summary_page(kb, doc: Document, extraction: Extraction, slug: str, slug_of: dict[str, str]) -> Page:
    """The summary page of an ingested document at ``slug``: its body, its source and links to the
    pages of its items (``slug_of``: name key -> slug), once each, in the extraction's order."""
    links: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    for item in extraction.items:
        key = name_key(item.name)
        if key not in seen and key in slug_of:
            seen.add(key)
            links.append((item.kind, slug_of[key], item.name, item.description))
    return Page(
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        slug=slug,
        title=doc.title,
        page_type=PageType.summary,
        content=render_summary_page(extraction, doc.source_uri, links),
        summary=extraction.summary,
        source_refs=[SourceRef(knowledge_id=doc.id, title=doc.title)],
        facts={doc.id: Fact(links=links)},
    )


@dataclass
class _Writes:
    """What a batch wrote: slugs written (before renames), slugs deleted, {old slug: new slug}, and
    the title keys that now name another page than before (or none, or a page for the first time)."""

    written: set[str]
    deleted: list[str]
    renames: dict[str, str]
    keys: set[str] = field(default_factory=set)
    leads: list[str] = field(default_factory=list)  # slugs written whose lead a model is to write


def _page_writers(
    token: int, summary_of: dict[str, str], rows: list[MentionRow], slug_of: dict[str, str]
) -> tuple[str, dict[str, str]]:
    """Who a batch's page versions are written by (``wiki.revisions.written_by``): the batch
    (``batch:<fencing token>``, the token counting the KB's reduce batches), and {slug:
    ``document:<knowledge id>``} for each page whose change comes from one document alone: a
    summary, or an entity/concept page whose name key's rows (or whose members' rows) only that
    document of the batch changed. ``rows``: the batch's dropped and added mention rows."""
    docs: dict[str, set[str]] = {}
    for kid, slug in summary_of.items():
        docs.setdefault(slug, set()).add(kid)
    for row in rows:
        for key in (row.key, row.parent):
            if key and key in slug_of:
                docs.setdefault(slug_of[key], set()).add(row.knowledge_id)
    alone = {slug: written_by(Writer.document, kid) for slug, (kid, *more) in docs.items() if not more}
    return written_by(Writer.batch, token), alone


def _write_plan(
    kb,
    planned: dict[str, Page | None],
    conn: Connection,
    *,
    pages: WikiPageRepository,
    leads: bool = False,
    writer: str = "",
    writers: dict[str, str] | None = None,
) -> _Writes:
    """Apply the batch's planned pages (slug -> page, or None: delete it) in the caller's
    transaction, in a handful of statements.

    The planned pages are read and locked at once; a page that would not change is not written,
    an entity/concept page keeps its model-written lead while it was written for its first
    contributions (``wiki.merge.keep_lead``); pages are moved to the slug of their title, links to
    moved pages rewritten (in the batch's pages and in their other in-links, one indexed query),
    then every change is written with one ``delete_many`` and one ``save_many``.

    A page moves only when its target is free once the batch is written (not a live page of the
    KB, nor taken by an earlier move in slug order); otherwise it keeps its slug. With ``leads``
    (a model writes page leads), the written pages whose lead is due are returned too.
    ``writer`` / ``writers``: who writes the versions (``WikiPageRepository.save_many``'s
    ``written_by`` / ``writers``); a moved page keeps its writer at its new slug.
    """
    current = pages.get_many(kb.id, planned, conn=conn, for_update=True)
    after: dict[str, Page] = {}  # slug -> live page as the batch leaves it
    written: set[str] = set()
    deleted: list[str] = []
    targets: dict[str, str] = {}
    for slug, page in sorted(planned.items()):
        old = current.get(slug)
        if page is None:
            if old is not None:
                deleted.append(slug)
            continue
        page = keep_lead(page, old)
        if old is not None and _same(old, page):
            after[slug] = old
        else:
            after[slug] = page
            written.add(slug)
        if page.page_type in ITEM_TYPES and slugify(page.title) != slug:
            targets[slug] = slugify(page.title)
    live = set(after) | pages.existing_slugs(kb.id, set(targets.values()) - planned.keys(), conn=conn)
    renames: dict[str, str] = {}
    for old, new in sorted(targets.items()):
        if new in live or new in RESERVED_SLUGS:
            continue
        after[new] = after.pop(old).model_copy(update={"slug": new, "id": None})
        live.discard(old)
        live.add(new)
        renames[old] = new
    changed = (written - renames.keys()) | set(renames.values())
    if deleted or renames:  # in-links to them are read next: wait for every cross-link adding some
        pages.lock_link_graph(kb.id, conn)
    if renames:
        others = set(pages.in_link_sources(kb.id, list(renames), conn=conn)) - planned.keys()
        after.update(pages.get_many(kb.id, others, conn=conn, for_update=True))
        for slug, page in after.items():
            content, moved = rewrite_links(page.content, lambda target, _display: renames.get(target, target))
            if moved:
                after[slug] = page.model_copy(update={"content": content})
                changed.add(slug)
    pages.delete_many(kb.id, [*deleted, *renames], conn=conn)
    writers = dict(writers or {})
    writers.update({new: writers[old] for old, new in renames.items() if old in writers})
    pages.save_many([after[s] for s in sorted(changed)], conn=conn, written_by=writer, writers=writers)
    before_keys = {(slug, key) for slug, page in current.items() for key in title_keys(page)}
    after_keys = {
        (slug, key) for slug in {*planned, *renames.values()} if slug in after for key in title_keys(after[slug])
    }
    due = sorted(slug for slug in changed if lead_due(after[slug])) if leads else []
    return _Writes(written, deleted, renames, {key for _, key in before_keys ^ after_keys}, due)


def _same(old: Page, new: Page) -> bool:
    """Whether writing ``new`` over ``old`` would change nothing a reader or a later batch sees."""
    return (
        old.content == new.content
        and old.source_refs == new.source_refs
        and old.aliases == new.aliases
        and old.title == new.title
        and old.page_type == new.page_type
        and old.summary == new.summary
        and old.facts == new.facts
    )


def _count_failure(
    kb_id: str,
    failed: list[PendingOp],
    exc: Exception,
    conn: Connection,
    deps: Deps,
) -> float:
    """Count a document's failure on its ops: dead-letter past the budget, else release them with
    their backoff. Returns the longest backoff in seconds (0 when all were dead-lettered)."""
    error = error_text(exc)
    delay = 0.0
    for op in failed:
        failure = count_failure(op, deps, conn=conn)
        if failure is None:
            continue
        if failure.spent:
            op = op.model_copy(update={"fail_count": failure.fails})
            deps.dead_letters.move_op_to_dead_letters(op, task_type=INGEST, error=error, conn=conn)
            reason = f"reduce failed {counted(failure.fails, 'time')}: {exc!r}"
            deps.docs.set_status([op.dedup_key], DocStatus.failed, reason, conn=conn)
        delay = max(delay, failure.delay_s)
    log.warning(
        "document.reduce_failed",
        knowledge_base_id=kb_id,
        knowledge_id=failed[0].dedup_key if failed else None,
        error=repr(exc),
        retry_in_s=round(delay, 1),
    )
    return delay


def reduce_step(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
) -> BatchResult | None:
    """What ``wiki_reduce`` does with a trigger: clear it, reduce one batch under the KB's
    active-batch lock (:func:`run_reduce_batch`), then trigger what the batch queued and the next
    batch at once if rows remain. Returns None when another batch holds the lock or overtook this one."""
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    triggers.clear(Actor.reduce)
    lock = ActiveBatchLock(
        deps.redis,
        active_key(deps.settings.key_prefix, knowledge_base_id),
        deps.settings.active_lock_ttl_s,
        holder=deps.worker_id,  # the reaper frees it if this worker dies before its fence records the token
        index_key=active_index_key(deps.settings.key_prefix),
    )
    if not lock.acquire():
        log.info("reduce.busy", knowledge_base_id=knowledge_base_id)
        return None  # the running batch follows up after it releases the lock
    started = time.monotonic()
    try:
        result = run_reduce_batch(tenant_id, knowledge_base_id, deps, lock=lock)
    except (FenceLost, LockLost) as exc:
        # another batch is on the KB (or may be): it, or this trigger, takes the released rows
        log.warning("reduce.overtaken", knowledge_base_id=knowledge_base_id, reason=str(exc))
        triggers.send(Actor.reduce)
        return None
    finally:
        lock.release()
    analyzed = refresh_statistics(deps.pool)  # the batch may have outgrown the planner's picture
    remaining = deps.ops.pending_count(REDUCE, SCOPE_KB, knowledge_base_id)
    log.info(
        "reduce.batch",
        knowledge_base_id=knowledge_base_id,
        documents=result.documents,
        retracted=result.retracted,
        failed=result.failed,
        written=result.written,
        deleted=result.deleted,
        remaining=remaining,
        analyzed=analyzed,
        duration_ms=round((time.monotonic() - started) * 1000, 1),  # the batch, statistics refresh included
    )
    if result.touched:
        triggers.send(Actor.crosslink)
    if result.touched or result.deleted:  # the batch queued an index op (request_index)
        triggers.send(Actor.index)
    if result.keys or (not remaining and deps.ops.pending_count(BACKLINK, SCOPE_KB, knowledge_base_id)):
        triggers.send(Actor.backlink)  # which waits while documents are still coming
    if result.leads or (not remaining and deps.ops.pending_count(LEAD, SCOPE_KB, knowledge_base_id)):
        triggers.send(Actor.leads)  # which waits while documents are still coming
    if result.requeued:
        triggers.send(Actor.ingest)
    if remaining and (result.documents or result.retracted or result.failed):
        triggers.send(Actor.reduce, debounce=False)
    if result.retry_after_s:  # the failed documents' turn comes after their backoff
        triggers.send(Actor.reduce, debounce=False, delay_s=result.retry_after_s)
    return result
