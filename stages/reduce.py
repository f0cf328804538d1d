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

import contextlib
import time
from dataclasses import dataclass, field, replace

import structlog
from psycopg import Connection

from repos.coordination import ActiveBatchLock, active_index_key, active_key, tombstoned
from repos.db import refresh_statistics
from repos.knowledge import DocumentRepository
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
from wiki.slugs import summary_slug, summary_suffix

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
    kb, tun: Tunables, claimed: list[PendingOp], token: int, lock: ActiveBatchLock | None, deps: Deps
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
    new_rows: dict[str, dict[str, MentionRow]] = {}
    failed_ops = []
    for doc, extraction in ingests:
        try:
            new_rows[doc.id] = rows_of(doc, extraction, "")
        except Exception as exc:  # an extraction this code cannot read: the document's failure, not the batch's
            failed_ops.append((doc.id, exc))
    ingested = [(doc, extraction) for doc, extraction in ingests if doc.id in new_rows]
    summaries = _SummarySlugs(ctx, retracts, [doc for doc, _ in ingested], pages=deps.pages, docs=deps.docs)
    pulled: dict[str, Extraction] = {}  # documents written again for their summary's new slug
    while need := {d.id: d for d in summaries.pulled if d.id not in pulled}:
        found = deps.extractions.get_many(
            kb.id, {kid: (d.content_hash, deps.extractor.name) for kid, d in need.items()}
        )
        for kid, extraction in found.items():
            with contextlib.suppress(Exception):  # unreadable: it keeps its slug, as a failed document does
                new_rows[kid] = rows_of(need[kid], extraction, "")
                pulled[kid] = extraction
        summaries.keep_slugs(sorted(need.keys() - pulled.keys()))
    ingested += [(doc, pulled[doc.id]) for doc in summaries.pulled]
    summary_of = {doc.id: summaries.slug_for(doc) for doc, _ in ingested}
    # a row names its document's summary (MentionRow.summary_slug), known once the slugs are shared out
    new_rows = {
        doc.id: {key: replace(row, summary_slug=summary_of[doc.id]) for key, row in new_rows[doc.id].items()}
        for doc, _ in ingested
    }
    items = plan_item_pages(
        kb,
        new_rows,
        {*retracts, *new_rows},
        ctx=ctx,
        mentions=deps.mentions,
        taken=set(summary_of.values()),
    )
    planned: dict[str, Page | None] = dict.fromkeys(summaries.freed)  # summaries no document keeps
    planned.update(dict.fromkeys(items.deleted))
    planned.update(items.pages)
    for doc, extraction in ingested:
        slug = summary_of[doc.id]
        planned[slug] = _summary_page(kb, doc, extraction, slug, items.slug_of, new_rows[doc.id])

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
        writes = _write_plan(
            kb, planned, conn, pages=deps.pages, leads=leads, writer=batch, writers=writers, moves=items.moves
        )
        touched = sorted(writes.written)
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
        deps.docs.set_status([d.id for d, _ in ingested if d.id not in pulled], DocStatus.done, conn=conn)
        deps.docs.mark_deleted(retracts, conn=conn)
        # the versions the batch just replaced quote them too: no page's history keeps a deleted document
        deps.pages.forget_documents(kb.id, retracts, conn=conn)
        # their dead letters (a map message that ran out of retries in an outage) mean nothing now
        deps.dead_letters.resolve_finished([*(d.id for d, _ in ingested if d.id not in pulled), *retracts], conn=conn)
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
    """The summary slugs of a batch's documents, shared out as a fresh ingest of the KB's
    documents would: the documents whose titles give one ``summary_slug`` (the batch's, and the
    live summaries with a title of the batch found by ``WikiPageRepository.summaries_titled``)
    take it in (source URI, knowledge id) order, the first as it is and each other suffixed by its
    source (``summary_suffix``), so neither arrival order nor a document retracted and added back
    decides which one has the plain slug.

    A document outside the batch whose slug that changes is in ``pulled``: the batch writes it
    again from its cached extraction (its summary moves; its mention rows and the pages quoting
    it name the new slug). One that cannot be (``keep``: no cached extraction, or a title its
    summary does not show yet) keeps its slug. ``freed``: {slug: knowledge id} of the summaries
    the batch's documents leave and no document takes (deleted)."""

    def __init__(
        self,
        ctx: BatchContext,
        retracting: list[str],
        batch: list[Document],
        *,
        pages: WikiPageRepository,
        docs: DocumentRepository,
    ) -> None:
        self.batch = {doc.id for doc in batch}
        #: knowledge id -> the slug of its summary now
        self.current = {kid: slug for kid in [*retracting, *self.batch] if (slug := ctx.summary_of(kid)) is not None}
        titled = {slug: page.title for slug, page in ctx.lite(self.current.values()).items()}
        bases = {summary_slug(doc.title) for doc in batch} | {summary_slug(t) for t in titled.values()}
        leaving = {*retracting, *self.batch}
        found = {
            kid: (slug, title)
            for slug, title, kid in pages.summaries_titled(ctx.kb_id, [*(d.title for d in batch), *titled.values()])
            if kid and kid not in leaving and summary_slug(title) in bases
        }
        self.current.update({kid: slug for kid, (slug, _) in found.items()})
        others = docs.get_many(sorted(found))
        #: a document whose title changed since its summary was written, or that is being deleted,
        #: keeps its slug: its own op (on its way) writes it under its new title, or deletes it
        self.keep = {
            kid: found[kid][0] for kid, doc in others.items() if doc.title != found[kid][1] or doc.status in RETRACTED
        }
        self.claimants: dict[str, list[Document]] = {}
        for doc in [*batch, *others.values()]:
            title = found[doc.id][1] if doc.id in found else doc.title
            self.claimants.setdefault(summary_slug(title), []).append(doc)
        # a slug an entity or concept page holds ("Doc Notes") is no summary's
        self.others = {s for s, p in ctx.lite(self.claimants).items() if p.page_type != PageType.summary}
        self._share()

    def _share(self) -> None:
        self.slugs: dict[str, str] = {}
        for base, claimants in sorted(self.claimants.items()):
            held = {self.keep[d.id] for d in claimants if d.id in self.keep} | (self.others & {base})
            for doc in sorted(claimants, key=lambda d: (d.source_uri, d.id)):
                if doc.id in self.keep:
                    self.slugs[doc.id] = self.keep[doc.id]
                    continue
                slug = base if base not in held else f"{base}-{summary_suffix(doc.source_uri, doc.id)}"
                held.add(slug)
                self.slugs[doc.id] = slug
        self.pulled = [
            doc
            for claimants in self.claimants.values()
            for doc in claimants
            if doc.id not in self.batch and self.slugs[doc.id] != self.current.get(doc.id)
        ]
        taken = set(self.slugs.values())
        self.freed = {slug: kid for kid, slug in self.current.items() if slug not in taken}

    def keep_slugs(self, kids: list[str]) -> None:
        """Leave these documents (pulled ones the batch cannot write) at their slugs, and share out again."""
        self.keep.update({kid: self.current[kid] for kid in kids})
        self._share()

    def slug_for(self, doc: Document) -> str:
        return self.slugs[doc.id]


def _summary_page(
    kb, doc: Document, extraction: Extraction, slug: str, slug_of: dict[str, str], rows: dict[str, MentionRow]
) -> Page:
    """The summary page of an ingested document at ``slug``: its body, its source and links to the
    pages of its items (``slug_of``: name key -> slug), once each, in the extraction's order.

    Only the items the document makes pages of on its own are listed: those whose row (``rows``,
    ``wiki.coverage.rows_of``) has something to quote, so that a page exists while the document
    does. An item it says nothing quotable of has a page only when other documents give it one,
    and listing it then made the summary depend on which of them had arrived."""
    links: list[tuple[str, str, str, str]] = []
    seen: set[str] = set()
    for item in extraction.items:
        key = name_key(item.name)
        own = key in rows and rows[key].earned and bool(rows[key].lead or rows[key].quotes)
        if key not in seen and key in slug_of and own:
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
    """What a batch wrote: slugs written (a moved page at its new slug), slugs deleted, {old slug:
    new slug} of the moved pages, and the title keys that now name another page than before (or
    none, or a page for the first time)."""

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
    moves: dict[str, str] | None = None,
) -> _Writes:
    """Apply the batch's planned pages (slug -> page, or None: delete it) in the caller's
    transaction, in a handful of statements.

    The planned pages are read and locked at once; a page that would not change is not written,
    an entity/concept page keeps its model-written lead while it was written for its first
    contributions (``wiki.merge.keep_lead``); pages are moved from the slugs ``moves`` gives
    ({live slug: planned slug}, ``stages.item_pages.ItemPlan.moves``; swaps included), links to
    moved pages rewritten in their other in-links (one indexed query; the planned pages link the
    planned slugs already), then every change is written with one ``delete_many`` and one
    ``save_many``. A planned page whose slug holds another page (``_another_page``, or a page moving
    away) replaces it: that one is deleted, with its history, and the planned one written anew.

    With ``leads`` (a model writes page leads), the written pages whose lead is due are returned
    too. ``writer`` / ``writers``: who writes the versions (``WikiPageRepository.save_many``'s
    ``written_by`` / ``writers``, keyed by planned slug).
    """
    moves = moves or {}
    moved_from = {new: old for old, new in moves.items()}
    current = pages.get_many(kb.id, set(planned) | set(moves), conn=conn, for_update=True)
    after: dict[str, Page] = {}  # slug -> live page as the batch leaves it
    written: set[str] = set()
    deleted: list[str] = []
    replaced: list[str] = []  # slugs whose live page another planned page takes over
    for slug, page in sorted(planned.items()):
        source = moved_from.get(slug, slug)
        old = current.get(source)
        if page is None:
            if old is not None and slug not in moves:
                deleted.append(slug)
            continue
        if old is not None and source == slug and (slug in moves or _another_page(old, page)):
            if slug not in moves:  # a page moving away is deleted as a move
                replaced.append(slug)
            old = None  # the live page here is another one
        page = keep_lead(page, old)
        if old is not None and slug not in moved_from and _same(old, page):
            after[slug] = old
        else:
            after[slug] = page.model_copy(update={"id": None}) if slug in moved_from else page
            written.add(slug)
    changed = set(written)
    if deleted or moves or replaced:  # in-links to them are read next: wait for every cross-link adding some
        pages.lock_link_graph(kb.id, conn)
    if moves:
        others = set(pages.in_link_sources(kb.id, list(moves), conn=conn)) - planned.keys() - moves.keys()
        for slug, page in pages.get_many(kb.id, others, conn=conn, for_update=True).items():
            content, moved = rewrite_links(page.content, lambda target, _display: moves.get(target, target))
            if moved:
                after[slug] = page.model_copy(update={"content": content})
                changed.add(slug)
    pages.delete_many(kb.id, [*deleted, *moves, *replaced], conn=conn)
    pages.save_many([after[s] for s in sorted(changed)], conn=conn, written_by=writer, writers=writers or {})
    before_keys = {(slug, key) for slug, page in current.items() for key in title_keys(page)}
    after_keys = {(slug, key) for slug in planned if slug in after for key in title_keys(after[slug])}
    due = sorted(slug for slug in changed if lead_due(after[slug])) if leads else []
    return _Writes(written, deleted, moves, {key for _, key in before_keys ^ after_keys}, due)


def _another_page(old: Page, new: Page) -> bool:
    """Whether the live page ``old`` at a slug is another page than the one (``new``) planned
    there, not its earlier version: an entity or concept page of another name key, a page of
    another type, or the summary of another document. A slug that a page leaves or that a deleted
    page frees goes to whichever page the batch's share-out of slugs gives it, as a new page."""
    items = (old.page_type in ITEM_TYPES, new.page_type in ITEM_TYPES)
    if any(items):
        return not all(items) or name_key(old.title) != name_key(new.title)
    if PageType.summary in (old.page_type, new.page_type):
        first = [[r.knowledge_id for r in p.source_refs[:1]] for p in (old, new)]
        return old.page_type != new.page_type or first[0] != first[1]
    return False


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


def _count_failure(kb_id: str, failed: list[PendingOp], exc: Exception, conn: Connection, deps: Deps) -> float:
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


def reduce_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> BatchResult | None:
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
