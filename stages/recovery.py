"""The recovery sweeper: after a Redis flush or killed workers, every lane with rows drains again.

Runs on worker boot and every ``sweep_interval_s`` (``middleware.periodic.PeriodicMiddleware``):
clears abandoned claims (older than ``stale_claim_s``) and sends a trigger for every lane that has
rows. Triggers are debounced, so several workers sweeping at once send one message per lane.
"""

from __future__ import annotations

import structlog

from stages.deps import Deps
from wiki.lanes import BACKLINK, FINALIZE, INDEX, INGEST, LEAD, REDUCE, SCOPE_KB, Actor

log = structlog.get_logger(__name__)

LANE_ACTORS = {
    INGEST: Actor.ingest,
    REDUCE: Actor.reduce,
    FINALIZE: Actor.crosslink,
    BACKLINK: Actor.backlink,
    INDEX: Actor.index,
    LEAD: Actor.leads,
}


def sweep(deps: Deps, *, debounce: bool = True) -> int:
    """Reclaim stale claims and re-trigger lanes with rows; returns the number of triggers sent.

    ``debounce=False`` sends even where a debounce marker says a trigger is queued: after a worker
    died, that trigger may be one the dead worker had fetched and will never run.
    """
    reclaimed = deps.ops.reclaim_stale(deps.settings.stale_claim_s)
    sent = 0
    for lane in deps.ops.lanes_with_rows():
        actor = LANE_ACTORS.get(lane.task_type)
        if actor and lane.scope == SCOPE_KB:
            sent += deps.triggers(lane.tenant_id, lane.scope_id).send(actor, debounce=debounce)
    if reclaimed or sent:
        log.info("recovery.swept", reclaimed=reclaimed, triggers=sent)
    return sent
