"""Taking back the claims and batch locks of workers that stopped (the heartbeat of
``actors.liveness.Liveness`` runs these on every beat).

Claims held by workers silent for ``worker_ttl_s`` become claimable again, their Redis batch locks
are deleted (compare-and-delete on the token their fence recorded), and the lanes are
re-triggered; after Redis lost its data every claim is given back (its message may be gone).
"""

from __future__ import annotations

import redis as redis_lib
import structlog

from repos.coordination import active_index_key, active_key, held_locks, holder_of, mark_once, release_if_held
from repos.liveness import WorkerRepository
from stages.deps import Deps
from stages.recovery import sweep
from wiki.lanes import REDUCE
from wiki.settings import Settings

log = structlog.get_logger(__name__)

#: Rows of workers silent this long are deleted (until then an operator can see in
#: ``task_workers`` when a worker was last heard of).
FORGET_AFTER_S = 3600


def after_redis_loss(deps: Deps) -> int | None:
    """When Redis lost its data (FLUSHALL, a restart without persistence), give every claim back
    and re-trigger every lane; returns the claims released, or None when Redis kept its data.

    A claim whose message was flushed would otherwise hold its map slot or finalize op until
    ``stale_claim_s`` (a FLUSHALL stalled a fault run's KB for 5 minutes) while its worker, alive,
    keeps beating. A marker key without TTL tells: the first worker to find it missing sets it
    again (SET NX) and does this once. Claims still being worked on are handed out again too,
    which is safe: handlers are idempotent and reduce writes are fenced.
    """
    if not mark_once(deps.redis, redis_marker_key(deps.settings.key_prefix)):
        return None
    released = deps.ops.release_all()
    triggers = sweep(deps, debounce=False)
    log.warning("redis.data_lost", claims=released, triggers=triggers)
    return released


def redis_marker_key(prefix: str) -> str:
    return f"{prefix}:data-kept"


def _free_locks_of_dead_holders(workers: WorkerRepository, redis: redis_lib.Redis, settings: Settings) -> int:
    """Delete the active-batch locks whose holder (the worker id in the token,
    ``repos.coordination.holder_of``) has no heartbeat within ``worker_ttl_s``; returns how many.

    A worker killed after taking a KB's lock and before its fence recorded the lock's token left
    the KB to the lock's TTL (``KBWIKI_ACTIVE_LOCK_TTL_S``, 15 s) in a fault run of issue 27: the
    fence-based reaping above cannot see that lock."""
    locks = held_locks(redis, active_index_key(settings.key_prefix))
    holders = {key: holder for key, token in locks.items() if (holder := holder_of(token))}
    if not holders:
        return 0
    alive = workers.alive_among(sorted(set(holders.values())), settings.worker_ttl_s)
    index = active_index_key(settings.key_prefix)
    return sum(release_if_held(redis, key, locks[key], index) for key, holder in holders.items() if holder not in alive)


def reap(deps: Deps) -> int:
    """Take back the claims and batch locks of dead workers and re-trigger the lanes; returns the
    number of claims released. What another transaction holds locked is left for a later beat
    (``WorkerRepository.reap``); a reap that could not run is logged as ``workers.reap_deferred``."""
    reaped = deps.workers.reap(deps.settings.worker_ttl_s, FORGET_AFTER_S)
    if reaped.deferred:
        log.warning("workers.reap_deferred", reason=reaped.deferred, retry_in_s=deps.settings.heartbeat_interval_s)
    index = active_index_key(deps.settings.key_prefix)
    freed = 0
    for task_type, kb_id, token in reaped.locks:
        if task_type == REDUCE:
            freed += release_if_held(deps.redis, active_key(deps.settings.key_prefix, kb_id), token, index)
    freed += _free_locks_of_dead_holders(deps.workers, deps.redis, deps.settings)
    if reaped.claims or freed:
        triggers = sweep(deps, debounce=False)
        log.warning("workers.reaped", claims=reaped.claims, locks=freed, triggers=triggers)
    return reaped.claims
