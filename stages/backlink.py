"""Back-links: when a title or alias appears (or goes), the pages that already mention it are relinked.

Cross-link only looks at the pages a batch touched, so a page written before another page
existed never linked its mentions of it: the wiki depended on the order documents came in.
A reduce batch therefore queues the title keys whose page changed (a page created, deleted or
moved, a title or alias gained or lost) on the KB's backlink lane, ``KEYS_PER_OP`` per op. A run
claims up to ``OPS_PER_RUN`` ops and asks PostgreSQL once for the pages whose content holds one
of their keys (the full-text index of migration 0051: never a scan of the KB); in one
transaction it takes the pages waiting unclaimed on the finalize lane and queues them and the
mentioning pages again, each once. Cross-link then relinks each from scratch. The lookup finds
a superset of the pages whose prose mentions a key: linkify decides. Runs wait while documents
are still coming (``stages.pacing``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog
from psycopg import Connection

from repos.pending_ops import TaskPendingOpsRepository
from stages.claims import claim_lane, released_on_failure
from stages.crosslink import enqueue_touched
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from stages.pacing import link_wait_s
from wiki.lanes import BACKLINK, FINALIZE, OP_KEYS, OP_ROUND, SCOPE_KB, Actor
from wiki.models import KnowledgeBase
from wiki.settings import kb_tunables

log = structlog.get_logger(__name__)

#: Title keys per backlink op: one full-text query ORs them (200 phrases plan and run in a few ms).
KEYS_PER_OP = 200

#: Backlink ops one run looks up together: their pages are found, and queued, once. The demo's
#: whole ingest queues about 50 ops; one query ORing all 3,890 of its title keys took 2.2 s
#: (3,932 pages), 200 keys 0.3 s (1,339 pages): in groups of 10, overlapping groups queued 8,000.
OPS_PER_RUN = 50


@dataclass
class BacklinkResult:
    """Ops claimed, pages found mentioning their keys, pages queued for cross-linking (those and the
    pages that were waiting on the finalize lane), and whether the run waited for the ingest (and
    for how much longer it has to)."""

    claimed: int = 0
    found: int = 0
    queued: int = 0
    deferred: bool = False
    remaining: int = 0
    wait_s: float = 0.0


def enqueue_keys(
    kb: KnowledgeBase, keys: set[str], *, ops: TaskPendingOpsRepository, conn: Connection | None = None
) -> None:
    """Queue the title ``keys`` whose page changed, ``KEYS_PER_OP`` per backlink op."""
    ops.enqueue_chunks(
        tenant_id=kb.tenant_id,
        task_type=BACKLINK,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_KEYS,
        key="keys",
        items=sorted(keys),
        chunk=KEYS_PER_OP,
        conn=conn,
    )


def run_backlink(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    now: datetime | None = None,
) -> BacklinkResult | None:
    """Queue the pages mentioning the keys of up to ``OPS_PER_RUN`` backlink ops for cross-linking,
    merged with the pages waiting unclaimed on the finalize lane (each queued once).

    Waits (claims nothing, ``deferred``, ``wait_s`` more seconds) while documents of the KB are
    still coming in, for at most the KB's ``link_defer_s`` (``stages.pacing``). The pages are
    queued and the ops deleted in one transaction. Returns None when the KB is gone (its lanes drained).
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return None
    wait_s = link_wait_s(kb.id, BACKLINK, ops=deps.ops, defer_s=kb_tunables(deps.settings, kb).link_defer_s, now=now)
    if wait_s:
        return BacklinkResult(deferred=True, remaining=deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id), wait_s=wait_s)
    claimed = claim_lane(BACKLINK, kb.id, OPS_PER_RUN, deps)
    result = BacklinkResult(claimed=len(claimed))
    with released_on_failure(claimed, deps):
        if claimed:
            found = deps.pages.pages_mentioning(kb.id, {key for op in claimed for key in op.payload.get("keys", [])})
            with deps.pool.connection() as conn:
                waiting = deps.ops.take_unclaimed_payload_items(FINALIZE, SCOPE_KB, kb.id, "slugs", conn=conn)
                enqueue_touched(kb, sorted(waiting | set(found)), ops=deps.ops, conn=conn, op=OP_ROUND)
                deps.ops.delete_by_ids([op.id for op in claimed], conn=conn)
            result.found, result.queued = len(found), len(waiting | set(found))
    result.remaining = deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id)
    return result


def backlink_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> BacklinkResult | None:
    """What ``wiki_backlink`` does with a trigger: clear it, queue the pages mentioning the next
    keys (:func:`run_backlink`), trigger cross-link for them and the next run while ops are left;
    a run that waits for the ingest schedules a re-check for when its wait is over."""
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    triggers.clear(Actor.backlink)
    result = run_backlink(tenant_id, knowledge_base_id, deps)
    if result is None:
        return None
    log.info(
        "backlink.done",
        knowledge_base_id=knowledge_base_id,
        ops=result.claimed,
        found=result.found,
        queued=result.queued,
        deferred=result.deferred,
        remaining=result.remaining,
    )
    if result.deferred:
        triggers.recheck(Actor.backlink, result.wait_s)
    if result.queued:
        triggers.send(Actor.crosslink)
    if result.claimed and result.remaining:
        triggers.send(Actor.backlink, debounce=False)
    return result
