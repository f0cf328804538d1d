"""The process-wide repositories, Redis client, extractor and settings, built once from settings.

Every stage entry point takes one ``Deps`` (``*_step(tenant_id, knowledge_base_id, ..., deps)``);
actors fetch the process's with ``get_deps()``; tests and commands build their own with
``build_deps`` on their database and Redis prefix.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from psycopg_pool import ConnectionPool

from repos.db import get_pool
from repos.dead_letters import TaskDeadLetterRepository
from repos.extractions import ExtractionRepository
from repos.index_intros import IndexIntroRepository
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from repos.lint import LintRepository
from repos.listing import ListingRepository
from repos.liveness import LaneFenceRepository, WorkerRepository
from repos.llm_errors import LLMConfigErrorRepository
from repos.llm_usage import LLMUsageRepository
from repos.mentions import MentionRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from repos.rate_limit import RedisRateLimiter
from repos.revisions import PageRevisionRepository
from stages.triggers import Triggers
from wiki.extract import Extractor, get_extractor
from wiki.extract.llm.ratelimit import UNLIMITED
from wiki.settings import Settings, get_settings


@dataclass
class Deps:
    """Repositories, Redis client, extractor and settings of one process: the context every stage takes."""

    settings: Settings
    pool: ConnectionPool
    redis: redis.Redis
    kbs: KnowledgeBaseRepository
    docs: DocumentRepository
    ops: TaskPendingOpsRepository
    dead_letters: TaskDeadLetterRepository
    pages: WikiPageRepository
    mentions: MentionRepository
    extractions: ExtractionRepository
    #: Builds ``extractor`` on its first use: a command that never extracts (lint, export, status,
    #: serve) never loads the offline extractor's NLP libraries (~70 MiB a process, issue 24).
    make_extractor: Callable[[], Extractor]
    workers: WorkerRepository
    fences: LaneFenceRepository
    llm_errors: LLMConfigErrorRepository
    llm_usage: LLMUsageRepository
    index_intros: IndexIntroRepository
    listing: ListingRepository
    lint: LintRepository
    revisions: PageRevisionRepository
    #: This process's worker id while it runs as a heartbeating worker (``actors.liveness``);
    #: its claims carry it. None elsewhere: such claims only go stale by age.
    worker_id: str | None = None
    _extractor: Extractor | None = field(default=None, init=False, repr=False)
    _extractor_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def triggers(self, tenant_id: int, knowledge_base_id: str) -> Triggers:
        """The trigger messages of one KB (``stages.triggers.Triggers``) on this process's Redis."""
        return Triggers(tenant_id, knowledge_base_id, self.redis, self.settings)

    @property
    def extractor(self) -> Extractor:
        """The process's extractor (``wiki.extract.get_extractor``), built once on first use."""
        with self._extractor_lock:
            if self._extractor is None:
                self._extractor = self.make_extractor()
            return self._extractor


def build_deps(settings: Settings, pool: ConnectionPool | None = None, extractor: Extractor | None = None) -> Deps:
    """Wire every dependency from ``settings`` (the pool defaults to the process-wide one; the
    extractor to ``get_extractor(settings)``, built on first use). An LLM extractor without a rate
    limiter of its own gets the Redis one shared by every process."""
    pool = pool or get_pool(settings)
    client = redis.Redis.from_url(settings.redis_url)

    def make_extractor() -> Extractor:
        made = extractor or get_extractor(settings)
        if getattr(made, "client", None) is not None and made.client.limiter is UNLIMITED:
            made.use_limiter(RedisRateLimiter(client, settings.key_prefix))
        return made

    return Deps(
        settings=settings,
        pool=pool,
        redis=client,
        kbs=KnowledgeBaseRepository(pool),
        docs=DocumentRepository(pool),
        ops=TaskPendingOpsRepository(pool),
        dead_letters=TaskDeadLetterRepository(pool),
        pages=WikiPageRepository(pool, revisions_keep=settings.page_revisions_keep),
        mentions=MentionRepository(pool),
        extractions=ExtractionRepository(pool),
        make_extractor=make_extractor,
        workers=WorkerRepository(pool),
        fences=LaneFenceRepository(pool),
        llm_errors=LLMConfigErrorRepository(pool),
        llm_usage=LLMUsageRepository(pool),
        index_intros=IndexIntroRepository(pool),
        listing=ListingRepository(pool),
        lint=LintRepository(pool),
        revisions=PageRevisionRepository(pool),
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
