"""The Redis broker every actor is declared on, built from settings.

Middleware order matters: Dramatiq's defaults first (Retries decides whether a failed message is
retried or failed for good), then structlog context, then dead letters (it reads the decision
Retries made), then the recovery sweeper.
"""

from __future__ import annotations

import functools

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import default_middleware

from middleware.dead_letter import DeadLetterMiddleware
from middleware.logging import StructlogMiddleware, configure_logging
from repos.db import get_pool
from repos.dead_letter_spool import DeadLetterSpool
from wiki.settings import Settings

#: Out of a million broker commands, how many also run Dramatiq's maintenance (requeue the messages
#: of dead workers): 2 %, so a few seconds of polling after a worker died, not minutes.
REQUEUE_MAINTENANCE_CHANCE = 20_000


def build_broker(settings: Settings) -> RedisBroker:
    """A RedisBroker on ``settings.redis_url`` with kbwiki's middleware; also made the global broker.

    Raises RuntimeError when REDIS_URL is unset (the ``kbwiki`` command sets it for embedded servers).
    """
    if not settings.redis_url:
        raise RuntimeError("REDIS_URL is not set (the kbwiki command sets it for embedded servers)")
    configure_logging(settings.log_level)
    middleware = [m() for m in default_middleware]
    spool = functools.cache(lambda: DeadLetterSpool(redis.Redis.from_url(settings.redis_url), settings.key_prefix))
    middleware += [StructlogMiddleware(), DeadLetterMiddleware(lambda: get_pool(settings), spool)]
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
    dramatiq.set_broker(broker)
    return broker
