"""This worker's heartbeat: ``start``, ``beat`` and ``stop`` for ``middleware.heartbeat.HeartbeatMiddleware``.

A worker announces itself in ``task_workers`` as it boots and every ``heartbeat_interval_s``;
every beat also reaps (``stages.liveness``). A killed worker's KB moves again within about
``worker_ttl_s`` + ``heartbeat_interval_s`` (12 s by default), not the ``stale_claim_s`` (300 s)
claims without a heartbeat wait.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable

import dramatiq
import structlog
from dramatiq.brokers.redis import RedisBroker

from stages.deps import Deps
from stages.liveness import after_redis_loss, reap
from stages.message_claims import OrphanedClaims

log = structlog.get_logger(__name__)


def broker_heartbeat(broker: dramatiq.Broker) -> None:
    """Refresh this process's heartbeat in Dramatiq's Redis broker (``<namespace>:__heartbeats__``,
    the sorted set its ``dispatch.lua`` writes on every command, scored in epoch milliseconds).

    Dramatiq beats only when a consumer sends a command, and a consumer whose prefetch is used up
    sends none: a live worker whose threads all wait (on PostgreSQL away, a slow model) looked dead
    after ``heartbeat_timeout`` and the maintenance of any other process's command requeued its
    unacked messages, which then ran twice (duplicate dead letters in an outage test). Beating from
    the liveness thread ties it to the process being alive, as the PostgreSQL heartbeat is; a
    frozen or killed process still stops beating. No-op for other brokers (tests' StubBroker).
    """
    if isinstance(broker, RedisBroker):
        broker.client.zadd(f"{broker.namespace}:__heartbeats__", {broker.broker_id: int(time.time() * 1000)})


class Liveness:
    """Heartbeat and reaper of one worker process."""

    def __init__(self, deps_factory: Callable[[], Deps]) -> None:
        self._deps_factory = deps_factory
        self.worker_id = ""
        self._last_ok = False
        self._orphans = OrphanedClaims()

    def start(self) -> None:
        """Announce the worker and make its claims carry its id (made here, in the worker's own
        process: an id made before a fork would be shared)."""
        self.worker_id = f"{socket.gethostname()[:80]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        deps = self._deps_factory()
        deps.worker_id = self.worker_id
        deps.workers.beat(self.worker_id, socket.gethostname(), os.getpid())
        self._last_ok = True
        log.info("worker.started", worker_id=self.worker_id)

    def beat(self) -> None:
        """Refresh the heartbeat, then take back what dead workers held and this worker's claims
        whose message is gone (``stages.message_claims``).

        Reaps only when the previous beat also reached PostgreSQL: a worker back from an outage
        first lets the others beat again, instead of taking back their claims at once.
        """
        deps = self._deps_factory()
        try:
            broker_heartbeat(dramatiq.get_broker())
        except Exception as exc:  # Redis away: its own outage handling says so
            log.debug("broker.heartbeat_failed", error=repr(exc))
        try:
            deps.workers.beat(self.worker_id, socket.gethostname(), os.getpid())
        except Exception:
            self._last_ok = False
            raise
        if deps.worker_id is None:
            # start() failed (PostgreSQL refused the worker at boot): its claims carry its id from
            # now on, so they are taken back when it dies instead of waiting stale_claim_s
            deps.worker_id = self.worker_id
            log.info("worker.started", worker_id=self.worker_id, late=True)
        if not self._last_ok:
            self._last_ok = True
            return
        reap(deps)
        after_redis_loss(deps)
        self._orphans.check(self.worker_id, deps)

    def stop(self) -> None:
        """A clean stop: give the claims back at once and leave the table."""
        deps = self._deps_factory()
        released = deps.workers.forget(self.worker_id)
        deps.worker_id = None
        log.info("worker.stopped", worker_id=self.worker_id, released=released)
