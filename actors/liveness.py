"""This worker's heartbeat, and taking back the claims and batch locks of workers that stopped.

A worker announces itself in ``task_workers`` as it boots and every ``heartbeat_interval_s``;
every beat also reaps: claims held by workers silent for ``worker_ttl_s`` become claimable again,
their Redis batch locks are deleted (compare-and-delete on the token their fence recorded), and
the lanes are re-triggered; after Redis lost its data every claim is given back (its message may
be gone). A killed worker's KB moves again within about ``worker_ttl_s`` +
``heartbeat_interval_s`` (12 s by default), not the ``stale_claim_s`` (300 s) claims without a
heartbeat wait.
"""

from __future__ import annotations

import os
import socket
import uuid

import structlog

from actors.coordination import active_key, release_if_held
from actors.deps import Deps
from actors.lanes import REDUCE
from actors.recovery import sweep

log = structlog.get_logger(__name__)

#: Rows of workers silent this long are deleted (until then an operator can see in
#: ``task_workers`` when a worker was last heard of).
FORGET_AFTER_S = 3600


class Liveness:
    """Heartbeat and reaper of one worker process (``start``, ``beat``, ``stop`` for
    ``middleware.heartbeat.HeartbeatMiddleware``)."""

    def __init__(self, deps_factory) -> None:
        self._deps_factory = deps_factory
        self.worker_id = ""
        self._last_ok = False

    def start(self) -> None:
        """Announce the worker and make its claims carry its id (made here, in the worker's own
        process: an id made before a fork would be shared)."""
        self.worker_id = f"{socket.gethostname()[:80]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        deps: Deps = self._deps_factory()
        deps.worker_id = self.worker_id
        deps.workers.beat(self.worker_id, socket.gethostname(), os.getpid())
        self._last_ok = True
        log.info("worker.started", worker_id=self.worker_id)

    def beat(self) -> None:
        """Refresh the heartbeat, then take back what dead workers held.

        Reaps only when the previous beat also reached PostgreSQL: a worker back from an outage
        first lets the others beat again, instead of taking back their claims at once.
        """
        deps: Deps = self._deps_factory()
        try:
            deps.workers.beat(self.worker_id, socket.gethostname(), os.getpid())
        except Exception:
            self._last_ok = False
            raise
        if not self._last_ok:
            self._last_ok = True
            return
        reap(deps)
        after_redis_loss(deps)

    def stop(self) -> None:
        """A clean stop: give the claims back at once and leave the table."""
        deps: Deps = self._deps_factory()
        released = deps.workers.forget(self.worker_id)
        deps.worker_id = None
        log.info("worker.stopped", worker_id=self.worker_id, released=released)


def after_redis_loss(deps: Deps) -> int | None:
    """When Redis lost its data (FLUSHALL, a restart without persistence), give every claim back
    and re-trigger every lane; returns the claims released, or None when Redis kept its data.

    A claim whose message was flushed would otherwise hold its map slot or finalize op until
    ``stale_claim_s`` (a FLUSHALL stalled a fault run's KB for 5 minutes) while its worker, alive,
    keeps beating. A marker key without TTL tells: the first worker to find it missing sets it
    again (SET NX) and does this once. Claims still being worked on are handed out again too,
    which is safe: handlers are idempotent and reduce writes are fenced.
    """
    if not deps.redis.set(redis_marker_key(deps.settings.key_prefix), "1", nx=True):
        return None
    released = deps.ops.release_all()
    triggers = sweep(deps, debounce=False)
    log.warning("redis.data_lost", claims=released, triggers=triggers)
    return released


def redis_marker_key(prefix: str) -> str:
    return f"{prefix}:data-kept"


def reap(deps: Deps) -> int:
    """Take back the claims and batch locks of dead workers and re-trigger the lanes; returns the
    number of claims released."""
    s = deps.settings
    reaped = deps.workers.reap(s.worker_ttl_s, FORGET_AFTER_S)
    freed = 0
    for task_type, kb_id, token in reaped.locks:
        if task_type == REDUCE:
            freed += release_if_held(deps.redis, active_key(s.key_prefix, kb_id), token)
    if reaped.claims or freed:
        triggers = sweep(deps, debounce=False)
        log.warning("workers.reaped", claims=reaped.claims, locks=freed, triggers=triggers)
    return reaped.claims
