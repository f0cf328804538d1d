"""Structured (JSON) logs for every process, and a middleware that tags each message's log lines."""

from __future__ import annotations

import logging
import sys
import threading
import time

import dramatiq
import structlog
from dramatiq.broker import Broker, MessageProxy

from middleware.dead_letter import probe_scope

log = structlog.get_logger(__name__)


def configure_logging(level: str = "INFO") -> None:
    """One JSON object per line on stderr, with an ISO-8601 UTC timestamp, the level and bound context.

    Context bound with ``structlog.contextvars`` (e.g. by ``StructlogMiddleware``) is merged into
    every event. Events below ``level`` (a ``logging`` level name) are dropped. Calling it again
    just reapplies the configuration. Raises ValueError on an unknown level name.
    """
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
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
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        # Not cached, so a later configure_logging() call also reaches loggers already in use.
        cache_logger_on_first_use=False,
    )


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
