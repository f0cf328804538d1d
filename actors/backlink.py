"""Back-links: when a title or alias appears (or goes), the pages that already mention it are relinked.

Cross-link only looks at the pages a batch touched, so a page written before another page
existed never linked its mentions of it: the wiki depended on the order documents came in.
A reduce batch therefore queues the title keys whose page changed (a page created, deleted or
moved, a title or alias gained or lost) on the KB's backlink lane, ``KEYS_PER_OP`` per op, with
the slugs the batch already queued for cross-linking. A run claims one op and asks PostgreSQL for
the next ``CHUNK`` pages, in slug order, whose content holds one of the keys (the full-text index
of migration 0051: never a scan of the KB); those pages go to the finalize lane, where cross-link
relinks each from scratch, and the op keeps its place (the last slug) for the next run. The
lookup finds a superset of the pages whose prose mentions a key: linkify decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.claims import released_on_failure
from actors.crosslink import CHUNK, enqueue_touched
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.lanes import BACKLINK, OP_KEYS, SCOPE_KB
from actors.triggers import clear_trigger, send_trigger
from wiki.models import KnowledgeBase

log = structlog.get_logger(__name__)

#: Title keys per backlink op: one full-text query ORs them (200 phrases plan and run in a few ms).
KEYS_PER_OP = 200


@dataclass
class BacklinkResult:
    """Pages found mentioning the op's keys in this run, pages queued for cross-linking (found
    minus those the batch had queued already), and whether the op has more pages to look at."""

    found: int = 0
    queued: int = 0
    more: bool = False
    claimed: int = 0
    remaining: int = 0


def enqueue_keys(deps: Deps, kb: KnowledgeBase, keys: set[str], queued: list[str], conn=None) -> None:
    """Queue the title ``keys`` whose page changed, ``KEYS_PER_OP`` per backlink op; ``queued`` are
    the slugs the caller already put on the finalize lane (not queued twice)."""
    ordered = sorted(keys)
    for i in range(0, len(ordered), KEYS_PER_OP):
        deps.ops.enqueue(tenant_id=kb.tenant_id, task_type=BACKLINK, scope=SCOPE_KB, scope_id=kb.id, op=OP_KEYS,
                         payload={"keys": ordered[i:i + KEYS_PER_OP], "skip": sorted(queued), "after": ""},
                         conn=conn)


def run_backlink(deps: Deps, tenant_id: int, knowledge_base_id: str) -> BacklinkResult | None:
    """Queue the next ``CHUNK`` pages mentioning one backlink op's keys for cross-linking.

    The pages are queued and the op moved on (or deleted, after its last chunk) in one
    transaction. Returns None when the KB is gone (its lanes drained).
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return None
    claimed = deps.ops.claim(BACKLINK, SCOPE_KB, kb.id, 1, deps.settings.stale_claim_s)
    result = BacklinkResult(claimed=len(claimed))
    with released_on_failure(deps, claimed):
        for op in claimed:
            found = deps.pages.pages_mentioning(kb.id, op.payload.get("keys", []), op.payload.get("after", ""), CHUNK)
            skip = set(op.payload.get("skip", []))
            pages = [slug for slug in found if slug not in skip]
            result.found, result.queued, result.more = len(found), len(pages), len(found) == CHUNK
            with deps.pool.connection() as conn:
                enqueue_touched(deps, kb, pages, conn=conn)
                if result.more:
                    deps.ops.move([op.id], BACKLINK, payload_patch={"after": found[-1]}, conn=conn)
                else:
                    deps.ops.delete_by_ids([op.id], conn=conn)
    result.remaining = deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id)
    return result


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=300_000, throws=BAD_MESSAGE)
def wiki_backlink(**kwargs) -> None:
    """Trigger: queue the next chunk of pages mentioning a backlink op's keys for cross-linking."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_backlink", args.knowledge_base_id)
    result = run_backlink(deps, args.tenant_id, args.knowledge_base_id)
    if result is None:
        return
    log.info("backlink.done", knowledge_base_id=args.knowledge_base_id, found=result.found, queued=result.queued,
             more=result.more, remaining=result.remaining)
    kb = {"tenant_id": args.tenant_id, "knowledge_base_id": args.knowledge_base_id}
    if result.queued:
        send_trigger(deps, "wiki_crosslink", **kb)
    if result.claimed and result.remaining:
        send_trigger(deps, "wiki_backlink", debounce=False, **kb)
