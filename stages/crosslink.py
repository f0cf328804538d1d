"""Cross-link and dead-link repair, scoped to the slugs a batch touched.

Drains the KB's finalize lane. For each touched page: links to pages that no longer exist are
repaired with the slug fuzzy resolve (else become plain text), the cross-links an earlier run
added are taken out, and the first mention of each other page's title is linked, so a page's
links depend on its rendered text and the live pages only, not on the order pages appeared in.
Reads only the touched pages' content; other pages are seen through narrow (slug, title, aliases)
rows found by indexed lookups of the phrases the pages contain.
Touched slugs are queued ``CHUNK`` per finalize op; a run claims one op and reads, links and
writes its pages in a few statements (``stages.relink``). A run that leaves unclaimed ops sends
the next run at once, before its own work, so up to ``crosslink_parallel`` runs of a KB
proceed together on any worker process (cross-linking is CPU work: one process is one core).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from psycopg import Connection

from repos.pending_ops import TaskPendingOpsRepository
from stages.claims import claim_lane, released_on_failure, room_for_another_run
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from stages.pacing import link_wait_s
from stages.relink import dead_link_resolver
from wiki.lanes import FINALIZE, OP_TOUCH, SCOPE_KB, Actor
from wiki.links import linkify, out_link_slugs, parse_links, rewrite_links, unlink
from wiki.lint import mention_targets
from wiki.mentions import mentions_by_page
from wiki.models import ITEM_TYPES, KnowledgeBase, PageType
from wiki.render import listed_link_starts
from wiki.revisions import Writer, written_by
from wiki.settings import kb_tunables

log = structlog.get_logger(__name__)

CHUNK = 100  # pages per finalize op: read, linked and written together


@dataclass
class CrosslinkResult:
    """Pages looked at, pages rewritten, links added and dead links repaired or stripped; pages
    put back on the lane because a writer held them; the seconds a run that waited for the
    ingest (``stages.pacing``) has still to wait."""

    pages: int = 0
    rewritten: int = 0
    linked: int = 0
    repaired: int = 0
    busy: int = 0
    remaining: int = 0
    claimed: int = 0
    wait_s: float = 0.0

    def add(self, other: CrosslinkResult) -> None:
        self.rewritten += other.rewritten
        self.linked += other.linked
        self.repaired += other.repaired
        self.busy += other.busy


def enqueue_touched(
    kb: KnowledgeBase,
    slugs: list[str],
    *,
    ops: TaskPendingOpsRepository,
    conn: Connection | None = None,
    op: str = OP_TOUCH,
) -> None:
    """Queue ``slugs`` for cross-linking, ``CHUNK`` per finalize op (so runs can share them out);
    ``op`` ``OP_ROUND`` for a back-link round's pages, which do not wait for the ingest again."""
    ops.enqueue_chunks(
        tenant_id=kb.tenant_id,
        task_type=FINALIZE,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=op,
        key="slugs",
        items=slugs,
        chunk=CHUNK,
        conn=conn,
    )


def run_crosslink(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    fan_out=None,
    now: datetime | None = None,
) -> CrosslinkResult | None:
    """Cross-link the pages of one finalize op, then delete it; claims nothing while documents of
    the KB are still coming in, for at most the KB's ``link_defer_s`` (``stages.pacing``; the
    result's ``wait_s`` says how much longer).

    ``fan_out()`` is called after the claim when unclaimed ops remain and fewer than the KB's
    ``crosslink_parallel`` ops are being cross-linked (the actor sends the next run there).
    Returns None when the KB is gone (its lanes drained).
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return None
    tunables = kb_tunables(deps.settings, kb)
    wait_s = link_wait_s(kb.id, FINALIZE, ops=deps.ops, defer_s=tunables.link_defer_s, now=now)
    if wait_s:
        return CrosslinkResult(remaining=deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id), wait_s=wait_s)
    claimed = claim_lane(FINALIZE, kb.id, 1, deps)
    slugs = sorted({s for op in claimed for s in op.payload.get("slugs", [])})
    result = CrosslinkResult(pages=len(slugs), claimed=len(claimed))
    if claimed and fan_out is not None:
        if room_for_another_run(
            FINALIZE, kb.id, runs=tunables.crosslink_parallel, ops=deps.ops, settings=deps.settings
        ):
            fan_out()
    with released_on_failure(claimed, deps):
        for i in range(0, len(slugs), CHUNK):
            result.add(link_pages(kb, slugs[i : i + CHUNK], deps))
        deps.ops.delete_by_ids([op.id for op in claimed])
    result.remaining = deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id)
    return result


def link_pages(kb: KnowledgeBase, slugs: list[str], deps: Deps) -> CrosslinkResult:
    """Repair dead links and add cross-links in the live pages among ``slugs``.

    The new contents are computed from pages read without a lock (linkify is CPU work: holding
    row locks through it made reduce batches wait seconds for each chunk); then, under the KB's
    link-graph lock, the changed pages are locked with SKIP LOCKED and written in one short
    transaction, each only if its version is still the one read and every page it links to is
    still live. Any other page (held or rewritten by another writer, or linking to a page moved
    or deleted meanwhile) is put back on the finalize lane for a later run. A page that needs
    nothing is not written.
    """
    result = CrosslinkResult()
    # the index page is left out: every cross-link run rebuilds it, so its version always moved
    # on by the time a run would write it (and the rebuild would drop the links anyway)
    read = {slug: page for slug, page in deps.pages.get_many(kb.id, slugs).items() if page.page_type != PageType.index}
    resolve, _ = dead_link_resolver(deps.pages, kb.id, [p.content for p in read.values()])
    repaired_content = {}
    for slug, page in read.items():
        content, repaired = rewrite_links(page.content, resolve)
        repaired_content[slug] = content
        result.repaired += repaired
    # Cross-links are made again from the page as rendered, so a page links what a fresh ingest
    # of the KB's documents would link, whatever order its targets appeared in: linking a
    # shorter title first hid a longer one appearing later ("[[acme|Acme]] Cloud"), and an alias
    # linked first kept a phrase from a title appearing later.
    targets = {link.slug for content in repaired_content.values() for link in parse_links(content)}
    items = {s for s, p in deps.pages.lite_by_slugs(kb.id, targets).items() if p.page_type in ITEM_TYPES}
    for slug, content in repaired_content.items():
        listed = listed_link_starts(content)
        repaired_content[slug] = unlink(
            content, lambda link, listed=listed: link.slug in items and link.start not in listed
        )
    mentioned = mentions_by_page(lambda phrases: deps.pages.title_matches(kb.id, phrases), repaired_content)
    changed = {}
    for slug, content in repaired_content.items():
        found = [p for matches in mentioned.get(slug, {}).values() for p in matches]
        # lint's order (titles before aliases, then slug), so both pick the same page for a shared name
        content, added = linkify(content, mention_targets(found, slug), self_slug=slug)
        result.linked += len(added)
        if content != read[slug].content:
            changed[slug] = read[slug].model_copy(update={"content": content})
    if not changed:
        return result
    with deps.pool.connection() as conn:
        deps.pages.lock_link_graph(kb.id, conn, shared=True)  # adds links, deletes nothing
        held = deps.pages.get_many(kb.id, changed, conn=conn, for_update=True, skip_locked=True)
        # a target may have been moved or deleted since the page was read: such a page is
        # linked again by a later run, from what is live then
        targets = {slug: out_link_slugs(page.content) for slug, page in changed.items()}
        live = deps.pages.existing_slugs(kb.id, set().union(*targets.values()), conn=conn)
        fresh = [
            page
            for slug, page in changed.items()
            if slug in held and held[slug].version == page.version and targets[slug] <= live
        ]
        busy = sorted(changed.keys() - {page.slug for page in fresh})
        deps.pages.save_many(fresh, conn=conn, out_links=targets, written_by=written_by(Writer.crosslink))
        enqueue_touched(kb, busy, ops=deps.ops, conn=conn)
    result.rewritten, result.busy = len(fresh), len(busy)
    return result


def crosslink_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> CrosslinkResult | None:
    """What ``wiki_crosslink`` does with a trigger: clear it, cross-link one finalize op
    (:func:`run_crosslink`, fanning out to more runs), and trigger the next run while ops are left;
    a run that waits for the ingest schedules a re-check for when its wait is over."""
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    triggers.clear(Actor.crosslink)
    result = run_crosslink(
        tenant_id, knowledge_base_id, deps, fan_out=lambda: triggers.send(Actor.crosslink, debounce=False)
    )
    if result is None:
        return None
    log.info(
        "crosslink.done",
        knowledge_base_id=knowledge_base_id,
        pages=result.pages,
        rewritten=result.rewritten,
        linked=result.linked,
        repaired=result.repaired,
        busy=result.busy,
    )
    if result.wait_s:
        triggers.recheck(Actor.crosslink, result.wait_s)
        return result
    if not result.claimed:
        return result  # rows left are claimed by a run in progress (or abandoned: the sweeper reclaims them)
    if result.remaining:  # at once, unless only pages a writer held are left: give it the debounce window
        triggers.send(Actor.crosslink, debounce=result.busy > 0)
    return result
