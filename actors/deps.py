"""What the stage functions need, built once per process from settings.

Stage functions take a ``Deps`` argument instead of reaching for globals, so tests can hand
them a ``Deps`` built on the test database and Redis prefix.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import redis
from psycopg_pool import ConnectionPool

from repos.db import get_pool
from repos.dead_letters import TaskDeadLetterRepository
from repos.extractions import ExtractionRepository
from repos.knowledge import KnowledgeBaseRepository, KnowledgeRepository
from repos.liveness import LaneFenceRepository, WorkerRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from wiki.extract import Extractor, get_extractor
from wiki.models import KnowledgeBase
from wiki.settings import Settings, get_settings


@dataclass(frozen=True)
class Tunables:
    """The effective ingest tunables of one KB: its ``wiki_config`` over the process settings."""

    batch_size: int
    map_parallel: int
    crosslink_parallel: int


@dataclass
class Deps:
    """Repositories, Redis client, extractor and settings shared by the stage functions."""

    settings: Settings
    pool: ConnectionPool
    redis: redis.Redis
    kbs: KnowledgeBaseRepository
    docs: KnowledgeRepository
    ops: TaskPendingOpsRepository
    dead_letters: TaskDeadLetterRepository
    pages: WikiPageRepository
    extractions: ExtractionRepository
    extractor: Extractor
    workers: WorkerRepository
    fences: LaneFenceRepository
    #: This process's worker id while it runs as a heartbeating worker (``actors.liveness``);
    #: its claims carry it. None elsewhere: such claims only go stale by age.
    worker_id: str | None = None

    def tunables(self, kb: KnowledgeBase) -> Tunables:
        cfg, s = kb.wiki_config, self.settings
        return Tunables(
            batch_size=cfg.ingest_batch_size or s.ingest_batch_size,
            map_parallel=cfg.ingest_map_parallel or s.ingest_map_parallel,
            crosslink_parallel=cfg.crosslink_parallel or s.crosslink_parallel,
        )


def build_deps(settings: Settings, pool: ConnectionPool | None = None, extractor: Extractor | None = None) -> Deps:
    """Wire every dependency from ``settings`` (the pool defaults to the process-wide one)."""
    pool = pool or get_pool(settings)
    return Deps(
        settings=settings,
        pool=pool,
        redis=redis.Redis.from_url(settings.redis_url),
        kbs=KnowledgeBaseRepository(pool),
        docs=KnowledgeRepository(pool),
        ops=TaskPendingOpsRepository(pool),
        dead_letters=TaskDeadLetterRepository(pool),
        pages=WikiPageRepository(pool),
        extractions=ExtractionRepository(pool),
        extractor=extractor or get_extractor(settings),
        workers=WorkerRepository(pool),
        fences=LaneFenceRepository(pool),
    )


_deps: Deps | None = None
_lock = threading.Lock()


def get_deps() -> Deps:
    """The process-wide ``Deps`` (built on first use)."""
    global _deps
    with _lock:
        if _deps is None:
            _deps = build_deps(get_settings())
        return _deps


def set_deps(deps: Deps | None) -> None:
    """Replace the process-wide ``Deps`` (tests that run actors in worker threads)."""
    global _deps
    with _lock:
        _deps = deps
