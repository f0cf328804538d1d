"""The one place kbwiki's Redis broker is built: ``setup_broker`` builds it from settings, makes it
Dramatiq's global broker and declares every actor of the ``actors`` package on it.

Importing ``actors`` builds nothing and connects to nothing; whoever runs or sends calls
``setup_broker`` once: the ``dramatiq`` command (``dramatiq actors:setup_broker``: the Procfile and
``kbwiki worker``), the ``kbwiki`` command once its servers answer (``kbwiki.cli.services``), and a
producer app before its first ``send`` (README, "Sending work from a producer app").

Middleware order matters: Dramatiq's defaults first (Retries decides whether a failed message is
retried or failed for good), then structlog context, then dead letters (it reads the decision
Retries made), then the recovery sweeper and the worker heartbeat. The last two act only in
worker processes (on worker boot), so a producer's broker is the workers' broker.
"""

from __future__ import annotations

import functools

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import CurrentMessage, default_middleware

from actors.declare import DECLARED
from actors.liveness import Liveness
from middleware.dead_letter import DeadLetterMiddleware
from middleware.delayed_requeue import DelayedRequeue
from middleware.heartbeat import HeartbeatMiddleware
from middleware.logging import StructlogMiddleware, configure_logging
from middleware.periodic import PeriodicMiddleware
from repos.db import get_pool
from repos.dead_letter_spool import DeadLetterSpool
from stages.deps import get_deps
from stages.recovery import LANE_ACTORS, sweep
from stages.requeue import unspool
from wiki.settings import Settings, get_settings

#: Out of a million broker commands, how many also run Dramatiq's maintenance (requeue the messages
#: of dead workers): every one. Its cost is two sorted-set range reads while no worker is dead. A
#: command requeues a dead worker's messages of its own queue only (``dispatch.lua``), and an idle
#: consumer sends about one command a second per queue: at 2 % a frozen worker's prefetched
#: messages waited 35 s after its heartbeat timed out (bench/chaos.py, SIGSTOP of a worker while
#: the other had nothing else left to do).
REQUEUE_MAINTENANCE_CHANCE = 1_000_000


def setup_broker(settings: Settings | None = None) -> RedisBroker:
    """Build the broker from ``settings`` (default: the environment's), make it Dramatiq's global
    broker and declare every actor on it; returns it. Opens no connection (Redis is reached at the
    first command). Calling it again builds a new broker and moves the actors to it.

    Raises RuntimeError when REDIS_URL is unset (the ``kbwiki`` command sets it for embedded servers).
    """
    # every actor module is imported already: importing this module imported the ``actors`` package
    settings = settings or get_settings()
    broker = build_broker(settings)
    dramatiq.set_broker(broker)
    for lazy in DECLARED.values():
        lazy.bind(broker, settings)
    return broker


def build_broker(settings: Settings) -> RedisBroker:
    """A RedisBroker on ``settings.redis_url`` with kbwiki's middleware (no actor declared on it).

    Raises RuntimeError when REDIS_URL is unset.
    """
    if not settings.redis_url:
        raise RuntimeError("REDIS_URL is not set (the kbwiki command sets it for embedded servers)")
    configure_logging(settings.log_level)
    middleware = [m() for m in default_middleware]
    spool = functools.cache(lambda: DeadLetterSpool(redis.Redis.from_url(settings.redis_url), settings.key_prefix))
    # CurrentMessage: a claim records the message it was made for (stages.claims, stages.message_claims)
    middleware += [CurrentMessage(), StructlogMiddleware(), DeadLetterMiddleware(lambda: get_pool(settings), spool)]
    if settings.dramatiq_prometheus:  # message counts and durations, served by the workers on :9191
        from dramatiq.middleware.prometheus import Prometheus

        middleware.append(Prometheus())
    # Messages a killed worker had fetched go back to the queue once its broker heartbeat is older
    # than heartbeat_timeout, at a maintenance pass (a share of commands out of a million). Dramatiq's
    # defaults (60 s, 0.1 %) left a killed worker's prefetched map messages (and their claims) for
    # minutes; a live process heartbeats on every poll (at least once a second), so 10 s is safe.
    broker = RedisBroker(
        url=settings.redis_url,
        namespace=settings.redis_namespace,
        middleware=middleware,
        heartbeat_timeout=int(max(settings.worker_ttl_s, 10.0) * 1000),
        maintenance_chance=REQUEUE_MAINTENANCE_CHANCE,
    )
    broker.add_middleware(PeriodicMiddleware(_recover, settings.sweep_interval_s, "sweeper"))
    # Delayed messages (debounced triggers, backoffs, retries) a consumer dropped on a Redis
    # connection error go back to their delay queue instead of waiting for a restart.
    broker.add_middleware(DelayedRequeue(settings.heartbeat_interval_s))
    liveness = Liveness(get_deps)
    broker.add_middleware(
        # After an outage (``kbwiki down`` and ``up``) the lanes it stalled are re-triggered at
        # once: the sweeper's next pass could be 30 s away.
        HeartbeatMiddleware(
            liveness.start, liveness.beat, liveness.stop, settings.heartbeat_interval_s, recovered=_recover
        )
    )
    return broker


def _recover() -> None:
    """The sweeper's pass: re-trigger lanes with rows, move spooled dead letters into the table, and
    resolve the letters of lane triggers whose lanes have drained since."""
    d = get_deps()
    sweep(d)
    unspool(redis=d.redis, settings=d.settings, dead_letters=d.dead_letters)
    d.dead_letters.resolve_drained_triggers(list(LANE_ACTORS.values()))
