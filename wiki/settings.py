"""Settings for every kbwiki process, read from the environment.

Variables use the prefix ``KBWIKI_`` (``KBWIKI_INGEST_BATCH_SIZE=50``); ``DATABASE_URL`` and
``REDIS_URL`` are also read as they are, the way Procfile platforms set them. When both URLs are
unset the ``kbwiki`` command starts local servers under ``home`` (see ``kbwiki.services``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import structlog
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from wiki.llm_config import MAX_DOCUMENT_BUDGET_S
from wiki.models import KnowledgeBase

#: The old name of ``KBWIKI_CROSSLINK_PARALLEL``, still read.
DEPRECATED_CROSSLINK_VAR = "KBWIKI_INGEST_REDUCE_PARALLEL"

#: Seconds cross-link and back-link runs of an offline-extractor KB wait for its ingest to end
#: (``stages.pacing.DEFER_S``, which says why).
OFFLINE_LINK_DEFER_S = 300.0


#: Settings whose value a "bad setting" message never repeats (it would land in a terminal or a log).
SECRET_SETTINGS = frozenset({"web_ops_token", "api_token"})


class Settings(BaseSettings):
    """All tunables, with defaults and bounds. Raises ``pydantic.ValidationError`` on bad values."""

    model_config = SettingsConfigDict(env_prefix="KBWIKI_", extra="ignore")

    database_url: str | None = Field(default=None, validation_alias=AliasChoices("KBWIKI_DATABASE_URL", "DATABASE_URL"))
    redis_url: str | None = Field(default=None, validation_alias=AliasChoices("KBWIKI_REDIS_URL", "REDIS_URL"))
    home: str | None = Field(default=None, description="Folder of the embedded servers (None: the per-user one).")
    cache_dir: str | None = Field(
        default=None, description="Folder of files built once and shared by processes (None: the per-user cache)."
    )
    # Long enough that commands run one after another (ingest, status, export) find the servers
    # still up; short enough that a forgotten home does not hold memory for the day.
    servers_idle_s: float = Field(
        default=900.0,
        ge=0,
        le=7 * 86400,
        description="Seconds the embedded servers run with no command and no connection (0: until `kbwiki down`).",
    )

    db_pool_min: int = Field(default=1, ge=1, le=64)
    # Each worker thread borrows a connection at a time; 8 threads with 10 connections starved
    # each other once reduce wrote slugs in parallel.
    db_pool_max: int = Field(default=24, ge=1, le=256)

    redis_namespace: str = Field(default="dramatiq", description="Dramatiq's Redis key namespace.")
    key_prefix: str = Field(default="kbwiki", description="Prefix of kbwiki's own Redis keys.")

    ingest_batch_size: int = Field(default=50, ge=1, le=1000, description="Documents per reduce batch.")
    # Map is CPU-bound Python, but a slot also waits for the pump and the queue between documents,
    # and a process extracts one document at a time (offline.extractor.EXTRACTION_SLOTS): the
    # slots' messages land on the worker processes by chance, and with 6 one process often held
    # most of them while the other idled (each held the GIL half the time). Linux-doc's first 600
    # documents on 2 cores: 115.6 s at 6, 107.8 s at 10, 85.8 s at 16 (issue 24). A waiting map
    # holds a worker thread but no extraction memory; 16 leaves threads for reduce on 2 x 8.
    ingest_map_parallel: int = Field(default=16, ge=1, le=256, description="Map ops claimed per KB at once.")
    # With the model extractor a map slot waits on the model, not the CPU: more slots than the
    # model's concurrency cap, so that a slot's own database work and its refill overlap the other
    # slots' calls (docs/decisions.md, "LLM pipeline throughput"; bench/llm_pipeline.py).
    ingest_llm_map_parallel: int = Field(
        default=12, ge=1, le=256, description="Map ops claimed per KB at once with KBWIKI_EXTRACTOR=llm."
    )
    # Was KBWIKI_INGEST_REDUCE_PARALLEL (it never bounded reduce, which runs one batch per KB at a
    # time): still read, with a deprecation line in the log (get_settings).
    crosslink_parallel: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Cross-link runs (one 100-page op each) of a KB at once.",
        validation_alias=AliasChoices("KBWIKI_CROSSLINK_PARALLEL", DEPRECATED_CROSSLINK_VAR),
    )
    # With the model extractor the CPU is idle while calls are in flight: link in rounds this far
    # apart during the ingest instead of all after the last document (stages.pacing; the offline
    # extractor waits OFFLINE_LINK_DEFER_S). A KB's wiki_config.link_defer_s overrides both.
    llm_link_defer_s: float = Field(
        default=20.0,
        ge=0,
        le=3600,
        allow_inf_nan=False,
        description="Seconds linking waits for the ingest to end with KBWIKI_EXTRACTOR=llm.",
    )
    wiki_max_fail_retries: int = Field(default=5, ge=0, le=100)
    # A failed op waits document_retry_backoff_ms * 2**(fails-1) times a jitter in [1, 2) (capped at the max)
    # before it is claimed again: with 5 retries about 31-62 s in all, not 1.4 s as back to back.
    document_retry_backoff_ms: int = Field(
        default=1000, ge=0, le=600_000, description="First in-batch retry's backoff."
    )
    document_retry_backoff_max_ms: int = Field(
        default=60_000, ge=0, le=3_600_000, description="Longest in-batch backoff."
    )

    # The lock only says "someone is on it" (reduce writes are fenced in PostgreSQL); it is renewed
    # every ttl/3, so a short TTL costs a few Redis calls and frees a dead worker's KB soon.
    active_lock_ttl_s: int = Field(default=15, ge=3, le=3600, description="TTL of the active-batch lock.")
    heartbeat_interval_s: float = Field(default=2.0, gt=0, le=60, description="Worker heartbeat period.")
    worker_ttl_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="A worker silent this long is dead: its claims and locks are taken back.",
    )
    debounce_ms: int = Field(default=500, ge=0, le=60_000, description="Trigger debounce window.")
    stale_claim_s: int = Field(default=300, ge=5, le=86_400, description="Age after which a claim is abandoned.")
    sweep_interval_s: int = Field(default=30, ge=1, le=3600, description="Recovery sweeper period.")

    # Messages that carry data (a producer's document, a delete) retry through outages of hours:
    # Dramatiq's exponential backoff from data_retry_min_backoff_ms, capped at data_retry_max_backoff_ms,
    # for at least data_retry_s (actors.retry_policy turns this into max_retries).
    data_retry_s: int = Field(
        default=86_400, ge=1, le=7 * 86_400, description="Least time a data-carrying message keeps retrying."
    )
    data_retry_min_backoff_ms: int = Field(default=1_000, ge=1, le=3_600_000, description="First retry's backoff.")
    data_retry_max_backoff_ms: int = Field(default=300_000, ge=1, le=86_400_000, description="Backoff cap.")
    db_pool_timeout_s: float = Field(
        default=30, gt=0, le=600, description="Seconds a borrower waits for a pooled connection."
    )
    # Every session kbwiki opens for workers and commands gets these (repos.db.SessionLimits; 0 is
    # PostgreSQL's "no limit"). A frozen process (SIGSTOP, a swap storm) holding a transaction
    # stalled its KB and starved the other worker's heartbeat behind its row locks: PostgreSQL now
    # ends such a session. No kbwiki transaction waits on a model or a queue between its
    # statements (a whole reduce batch takes ~0.3 s at 40,000 documents, median), so 15 s is far
    # from legitimate work and well inside the 30 s a KB may stall. A lock wait outlasts the idle
    # timeout, so a waiter behind a frozen holder gets the lock instead of failing first. The
    # statement limit is about 15 times the longest statement measured at 40,000 documents (lint's
    # title lookup before its fix, 20.7 s) and above the KB delete's 120 s time limit, which already
    # bounds its statements; reduce (900 s) and lint (3600 s) get a statement error they retry.
    db_idle_in_transaction_timeout_s: float = Field(
        default=15.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        description="Seconds a session may sit idle in a transaction (0: no limit).",
    )
    db_lock_timeout_s: float = Field(
        default=30.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        description="Seconds a statement waits for a lock (0: no limit).",
    )
    db_statement_timeout_s: float = Field(
        default=300.0, ge=0, le=86_400, allow_inf_nan=False, description="Seconds one statement may run (0: no limit)."
    )

    # A file is read whole into memory before it is cut to max_document_chars: this bounds that read.
    max_file_mb: int = Field(default=20, ge=1, le=4096, description="Larger files (MiB) are rejected unread.")
    max_document_chars: int = Field(default=400_000, ge=1000, description="Longer documents are cut.")
    min_document_chars: int = Field(default=40, ge=0, description="Shorter documents are skipped.")
    # Earlier versions kept per page (wiki_page_revisions): a hub page rewritten by every batch keeps
    # the newest ones only, so the table grows with the pages, not with the writes.
    page_revisions_keep: int = Field(
        default=20, ge=0, le=1000, description="Earlier versions of a page kept for its history (0: none)."
    )

    extractor: Literal["offline", "llm"] = "offline"
    llm_base_url: str | None = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="http(s) URL of the OpenAI-compatible API, usually ending in /v1",
    )
    llm_model: str = Field(default="gpt-4o-mini", min_length=1)
    llm_api_key: str | None = None
    # The LLM extractor's tunables (wiki.llm_config.LLMConfig documents each); a KB may override
    # them in wiki_config["llm"]. JSON objects in the environment: KBWIKI_LLM_EXTRA_BODY='{"temperature": 0}'.
    llm_timeout_s: float = Field(default=120.0, gt=0, le=3600, description="One request's read timeout.")
    llm_connect_timeout_s: float = Field(default=10.0, gt=0, le=600, description="One request's connect timeout.")
    llm_max_tokens: int = Field(default=4096, ge=64, le=1_000_000, description="Answer token cap per call.")
    llm_max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    llm_extra_body: dict[str, Any] = Field(default_factory=dict, description="Fields merged into every request.")
    llm_thinking_off: dict[str, Any] | None = Field(default=None, description="Fields that turn thinking off.")
    llm_section_chars: int = Field(default=24_000, ge=500, le=2_000_000, description="Longest text per call.")
    llm_document_budget_s: float = Field(
        default=240.0, gt=0, le=MAX_DOCUMENT_BUDGET_S, description="All calls of one document (below wiki_map's limit)."
    )
    llm_transport_attempts: int = Field(default=5, ge=1, le=50, description="Tries through 408/429/5xx/timeouts.")
    llm_retry_max_wait_s: float = Field(default=60.0, ge=0, le=3600, description="Longest wait between tries.")
    llm_max_invalid_share: float = Field(default=0.5, ge=0, le=1, description="Invalid items that fail an answer.")
    llm_bounded_schema: bool = Field(default=False, description="Bound strings and lists in the answer schema.")
    llm_index_intro: bool = Field(default=True, description="The model writes the index page's introduction.")
    llm_page_leads: bool = Field(
        default=True,
        description="The model writes the lead of a page two or more sources describe, from its first four.",
    )
    # One limit per endpoint and model shared by every worker process (repos.rate_limit); 0 is unlimited.
    llm_max_concurrency: int = Field(default=16, ge=0, le=4096, description="Model requests in flight, all processes.")
    llm_rpm: int = Field(default=0, ge=0, description="Model requests a minute, all processes (0: unlimited).")
    llm_tpm: int = Field(default=0, ge=0, description="Model tokens a minute, all processes (0: unlimited).")
    # A KB paused on a configuration error (401, 404, a 400 in every output mode) looks again this often.
    llm_pause_s: float = Field(default=60.0, ge=0.1, le=86_400, description="Recheck period of a paused KB.")
    # Cost: a KB's token budget (in + out; None: none) pauses its model work when spent; the prices
    # (US dollars per million tokens, 0: unknown) give the estimated cost in the log and status.
    llm_token_budget: int | None = Field(default=None, ge=1, description="Tokens a KB may spend, then it pauses.")
    llm_price_in_per_mtok: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="USD per million prompt tokens."
    )
    llm_price_out_per_mtok: float = Field(
        default=0.0, ge=0, allow_inf_nan=False, description="USD per million completion tokens."
    )

    # The web face (``kbwiki serve``): the tenant it serves and the token behind its operations
    # page's actions (unset: the page is read-only).
    web_tenant: int = Field(default=1, ge=0, description="Tenant ``kbwiki serve`` serves.")
    web_ops_token: str | None = Field(default=None, min_length=16, description="Token of the ops page's actions.")
    # Host names ``kbwiki serve`` answers to, comma-separated (``*.example.org`` matches subdomains);
    # empty: the loopback names when bound to loopback, any name otherwise (with a warning at start).
    web_allowed_hosts: str = Field(default="", description="Host names the web face answers to.")
    # Addresses of the proxies whose X-Forwarded-For/-Proto ``kbwiki serve`` believes, comma-separated
    # (a proxy on loopback: ``127.0.0.1``); empty: none, the socket's address is the client's.
    web_trusted_proxies: str = Field(default="", description="Proxies whose X-Forwarded-* are believed.")
    # The read API under /api/v1 of ``kbwiki serve`` (``kbwiki.api``): the bearer token its routes
    # require; unset: open, as the web face's pages are (they show the same data).
    api_token: str | None = Field(default=None, min_length=16, description="Bearer token of the read API.")

    # Dramatiq's Prometheus middleware on the workers (an exposition server on dramatiq_prom_port, 9191).
    dramatiq_prometheus: bool = Field(default=False, description="Add Dramatiq's Prometheus middleware.")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment.

    Logs ``settings.deprecated`` (a warning) when a deprecated variable is set and its new name is not.
    """
    settings = Settings()
    if DEPRECATED_CROSSLINK_VAR in os.environ and "KBWIKI_CROSSLINK_PARALLEL" not in os.environ:
        structlog.get_logger(__name__).warning(
            "settings.deprecated", variable=DEPRECATED_CROSSLINK_VAR, use="KBWIKI_CROSSLINK_PARALLEL"
        )
    return settings


@dataclass(frozen=True)
class Tunables:
    """The effective ingest tunables of one KB: its ``wiki_config`` over the process settings."""

    batch_size: int
    map_parallel: int
    crosslink_parallel: int
    #: Seconds cross-link and back-link runs wait for the ingest and reduce lanes to empty (``stages.pacing``).
    link_defer_s: float


def kb_tunables(settings: Settings, kb: KnowledgeBase) -> Tunables:
    """The KB's ``wiki_config`` where set, else the process ``settings`` (map slots:
    ``ingest_llm_map_parallel`` when the extractor is the model, else ``ingest_map_parallel``;
    link defer: ``llm_link_defer_s`` when the extractor is the model, else ``OFFLINE_LINK_DEFER_S``)."""
    cfg = kb.wiki_config
    llm = settings.extractor == "llm"
    return Tunables(
        batch_size=cfg.ingest_batch_size or settings.ingest_batch_size,
        map_parallel=cfg.ingest_map_parallel
        or (settings.ingest_llm_map_parallel if llm else settings.ingest_map_parallel),
        crosslink_parallel=cfg.crosslink_parallel or settings.crosslink_parallel,
        link_defer_s=cfg.link_defer_s
        if cfg.link_defer_s is not None  # 0 is a setting: link after every batch
        else (settings.llm_link_defer_s if llm else OFFLINE_LINK_DEFER_S),
    )
