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
are still coming (``actors.pacing``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.claims import claim_lane, released_on_failure
from actors.crosslink import enqueue_touched
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.lanes import BACKLINK, FINALIZE, OP_KEYS, SCOPE_KB
from actors.pacing import ingest_running
from actors.triggers import clear_trigger, send_trigger
from wiki.models import KnowledgeBase

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
    pages that were waiting on the finalize lane), and whether the run waited for the ingest."""

    claimed: int = 0
    found: int = 0
    queued: int = 0
    deferred: bool = False
    remaining: int = 0


def enqueue_keys(deps: Deps, kb: KnowledgeBase, keys: set[str], conn=None) -> None:
    """Queue the title ``keys`` whose page changed, ``KEYS_PER_OP`` per backlink op."""
    ordered = sorted(keys)
    for i in range(0, len(ordered), KEYS_PER_OP):
        deps.ops.enqueue(
            tenant_id=kb.tenant_id,
            task_type=BACKLINK,
            scope=SCOPE_KB,
            scope_id=kb.id,
            op=OP_KEYS,
            payload={"keys": ordered[i : i + KEYS_PER_OP]},
            conn=conn,
        )


def run_backlink(
    deps: Deps, tenant_id: int, knowledge_base_id: str, now: datetime | None = None
) -> BacklinkResult | None:
    """Queue the pages mentioning the keys of up to ``OPS_PER_RUN`` backlink ops for cross-linking,
    merged with the pages waiting unclaimed on the finalize lane (each queued once).

    Waits (claims nothing, ``deferred``) while documents of the KB are still coming in
    (``actors.pacing.ingest_running``). The pages are queued and the ops deleted in one
    transaction. Returns None when the KB is gone (its lanes drained).
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return None
    if ingest_running(deps, kb.id, BACKLINK, now):
        return BacklinkResult(deferred=True, remaining=deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id))
    claimed = claim_lane(deps, BACKLINK, kb.id, OPS_PER_RUN)
    result = BacklinkResult(claimed=len(claimed))
    with released_on_failure(deps, claimed):
        if claimed:
            found = deps.pages.pages_mentioning(kb.id, {key for op in claimed for key in op.payload.get("keys", [])})
            with deps.pool.connection() as conn:
                waiting = deps.ops.take_unclaimed_payload_items(FINALIZE, SCOPE_KB, kb.id, "slugs", conn=conn)
                enqueue_touched(deps, kb, sorted(waiting | set(found)), conn=conn)
                deps.ops.delete_by_ids([op.id for op in claimed], conn=conn)
            result.found, result.queued = len(found), len(waiting | set(found))
    result.remaining = deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id)
    return result


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=300_000, throws=BAD_MESSAGE)
def wiki_backlink(**kwargs) -> None:
    """Trigger: queue the pages mentioning the keys of the next backlink ops for cross-linking."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_backlink", args.knowledge_base_id)
    result = run_backlink(deps, args.tenant_id, args.knowledge_base_id)
    if result is None:
        return
    log.info(
        "backlink.done",
        knowledge_base_id=args.knowledge_base_id,
        ops=result.claimed,
        found=result.found,
        queued=result.queued,
        deferred=result.deferred,
        remaining=result.remaining,
    )
    kb = {"tenant_id": args.tenant_id, "knowledge_base_id": args.knowledge_base_id}
    if result.queued:
        send_trigger(deps, "wiki_crosslink", **kb)
    if result.claimed and result.remaining:
        send_trigger(deps, "wiki_backlink", debounce=False, **kb)
