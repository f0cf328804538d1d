"""Structured (JSON) logs for every process, and a middleware that tags each message's log lines."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import dramatiq
import structlog
from dramatiq.broker import Broker, MessageProxy

from middleware.dead_letter import probe_scope

log = structlog.get_logger(__name__)


#: Files opened by ``configure_logging`` (one handle per path for the life of the process).
_files: dict[Path, _LossyFile] = {}


class _LossyFile:
    """A log file whose failed writes are dropped, not raised: on a full disk (or a failing one) a
    log line cannot be kept, and raising from a log call would stop the process that logs, such as
    the supervisor that is to restart the servers once space is back."""

    def __init__(self, fh: TextIO) -> None:
        self._fh = fh

    def write(self, text: str) -> int:
        try:
            return self._fh.write(text)
        except OSError:
            return 0

    def flush(self) -> None:
        try:
            self._fh.flush()
        except OSError:
            pass


def configure_logging(level: str = "INFO", path: Path | None = None) -> None:
    """One JSON object per line with an ISO-8601 UTC timestamp, the level and bound context, on
    stderr, or appended to ``path`` (its folder is made) together with the standard library's
    log records (Dramatiq's, psycopg_pool's).

    Workers log to stderr (what Procfile platforms collect); ``kbwiki`` commands pass a file so a
    log line never lands among the lines the command prints. Context bound with
    ``structlog.contextvars`` (e.g. by ``StructlogMiddleware``) is merged into every event. Events
    below ``level`` (a ``logging`` level name) are dropped. Calling it again just reapplies the
    configuration. Raises ValueError on an unknown level name, OSError when ``path`` cannot be opened.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    out: TextIO = sys.stderr
    if path is not None:
        path = Path(path).resolve()
        if path not in _files:
            path.parent.mkdir(parents=True, exist_ok=True)
            _files[path] = _LossyFile(open(path, "a", encoding="utf-8", buffering=1))  # noqa: SIM115  (kept open)
        out = _files[path]
        handler = logging.StreamHandler(out)
        handler.setFormatter(_JsonFormatter())
        logging.basicConfig(level=max(numeric, logging.INFO), handlers=[handler], force=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        # Not cached, so a later configure_logging() call also reaches loggers already in use.
        cache_logger_on_first_use=False,
    )
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, OutageLogFilter) for f in handler.filters):
            handler.addFilter(OutageLogFilter())


#: Standard-library records that repeat while a server is away, by kind: Dramatiq's consumer
#: threads (one line per queue every 3 s while Redis is away) and psycopg_pool's reconnection
#: attempts (one per pooled connection and attempt while PostgreSQL is away).
_OUTAGE_RECORDS = {
    "redis": ("dramatiq.worker.ConsumerThread", ("Consumer encountered a connection error", "Restarting consumer")),
    "postgres": ("psycopg.pool", ("error connecting", "reconnection attempt")),
}


class OutageLogFilter(logging.Filter):
    """Lets one record of each outage through, as a warning that says retries go on quietly, and
    drops its repeats until that kind has been quiet for ``quiet_s`` seconds.

    A server that went away (``kbwiki down``, a restart) made a worker log 152 CRITICAL lines in
    35 s; the retries themselves are Dramatiq's and psycopg_pool's and go on unchanged. Installed on
    the root logger's handlers by :func:`configure_logging`.
    """

    def __init__(self, quiet_s: float = 30.0) -> None:
        super().__init__()
        self.quiet_s = quiet_s
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = next(
            (
                kind
                for kind, (logger, starts) in _OUTAGE_RECORDS.items()
                if record.name.startswith(logger) and str(record.msg).startswith(starts)
            ),
            None,
        )
        if kind is None:
            return True
        now = time.monotonic()
        with self._lock:
            last, self._last[kind] = self._last.get(kind), now
        if last is not None and now - last < self.quiet_s:
            return False
        quiet = f"{self.quiet_s:.0f} s"
        record.msg = f"{record.getMessage()} (retrying; repeats are not logged until {quiet} pass without one)"
        record.args = ()
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class _JsonFormatter(logging.Formatter):
    """A standard-library log record as one JSON line shaped like structlog's (event, level, logger, timestamp)."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "event": record.getMessage(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class StructlogMiddleware(dramatiq.Middleware):
    """Binds actor, message_id and the message's tenant / KB / document ids to every log line it causes.

    Logs ``actor.finished`` (outcome ``"ok"`` or ``"error"``, ``duration_ms``, ``error_type`` on
    failure) after each message and ``actor.skipped`` for a skipped one, then clears the context.
    Ids are read the payload-agnostic way (``middleware.dead_letter.probe_scope``). Any position in
    the stack works; put it first so its context covers the other middleware's hooks too.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        structlog.contextvars.clear_contextvars()
        scope = probe_scope(message.args, message.kwargs)
        context: dict[str, object] = {"actor": message.actor_name, "message_id": message.message_id}
        if scope.tenant_id or scope.scope == "tenant":
            context["tenant_id"] = scope.tenant_id
        if scope.knowledge_base_id is not None:
            context["knowledge_base_id"] = scope.knowledge_base_id
        if scope.knowledge_id is not None:
            context["knowledge_id"] = scope.knowledge_id
        structlog.contextvars.bind_contextvars(**context)
        self._local.started = time.monotonic()

    def _duration_ms(self) -> float | None:
        started = getattr(self._local, "started", None)
        self._local.started = None
        return round((time.monotonic() - started) * 1000, 3) if started is not None else None

    def after_process_message(
        self,
        broker: Broker,
        message: MessageProxy,
        *,
        result: object = None,
        exception: BaseException | None = None,
    ) -> None:
        try:
            if exception is None:
                log.info("actor.finished", outcome="ok", duration_ms=self._duration_ms())
            else:
                log.warning(
                    "actor.finished",
                    outcome="error",
                    duration_ms=self._duration_ms(),
                    error_type=type(exception).__name__,
                )
        finally:
            structlog.contextvars.clear_contextvars()

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        try:
            log.info("actor.skipped", duration_ms=self._duration_ms())
        finally:
            structlog.contextvars.clear_contextvars()
