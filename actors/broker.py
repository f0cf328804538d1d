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
    broker = RedisBroker(url=settings.redis_url, namespace=settings.redis_namespace, middleware=middleware)
    dramatiq.set_broker(broker)
    return broker
