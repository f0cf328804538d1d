"""Dead-letter middleware: one ``task_dead_letters`` row per message that Dramatiq fails for good."""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import dramatiq
import structlog
from dramatiq.broker import Broker, MessageProxy
from psycopg_pool import ConnectionPool

from repos.dead_letter_spool import DeadLetterSpool
from repos.dead_letters import TaskDeadLetterRepository
from repos.queue_common import WIDTHS, truncate_error
from wiki.errors import ERROR_LIMIT_BYTES

log = structlog.get_logger(__name__)

#: Keyword names the probe reads, in the order they are tried within each kind.
KB_KEYS = ("knowledge_base_id", "kb_id", "source_kb_id")
KNOWLEDGE_KEYS = ("knowledge_id",)
TENANT_KEYS = ("tenant_id",)

# Width of task_dead_letters' id columns (scope_id, related_id, task_type).
_ID_WIDTH = WIDTHS["scope_id"]


@dataclass(frozen=True)
class MessageScope:
    """What a message is about, read from its arguments without knowing the actor.

    ``scope`` is ``"knowledge_base"``, ``"knowledge"``, ``"tenant"`` or ``"unknown"`` (a KB beats
    a document beats a tenant); ``scope_id`` is the matching id as text ("" when unknown);
    ``tenant_id`` is 0 when absent or not an integer.
    """

    scope: str
    scope_id: str
    tenant_id: int
    knowledge_base_id: str | None
    knowledge_id: str | None


def _first(sources: tuple[Mapping[str, Any], ...], keys: tuple[str, ...]) -> Any:
    for source in sources:
        for key in keys:
            value = source.get(key)
            if value is not None and value != "":
                return value
    return None


def probe_scope(args: tuple[Any, ...] | list[Any], kwargs: Mapping[str, Any]) -> MessageScope:
    """Infer a message's scope from ``kwargs`` and, failing that, a leading dict positional argument.

    Reads tenant_id, knowledge_base_id / kb_id / source_kb_id and knowledge_id; keyword arguments
    win over the dict. Never raises: odd values only make the scope less specific.
    """
    sources: tuple[Mapping[str, Any], ...] = (kwargs or {},)
    if args and isinstance(args[0], Mapping):
        sources += (args[0],)
    kb = _first(sources, KB_KEYS)
    knowledge = _first(sources, KNOWLEDGE_KEYS)
    tenant = _first(sources, TENANT_KEYS)
    try:
        tenant_id = int(tenant) if tenant is not None and not isinstance(tenant, bool) else 0
    except (TypeError, ValueError):
        tenant_id = 0
    kb_id = str(kb)[:_ID_WIDTH] if kb is not None else None
    knowledge_id = str(knowledge)[:_ID_WIDTH] if knowledge is not None else None
    if kb_id is not None:
        scope, scope_id = "knowledge_base", kb_id
    elif knowledge_id is not None:
        scope, scope_id = "knowledge", knowledge_id
    elif tenant is not None:
        scope, scope_id = "tenant", str(tenant)[:_ID_WIDTH]
    else:
        scope, scope_id = "unknown", ""
    return MessageScope(scope, scope_id, tenant_id, kb_id, knowledge_id)


def describe_error(exception: BaseException | None, fallback_traceback: str | None = None) -> str:
    """``"<Type>: <message>"`` and the traceback, cut to 8 KiB of UTF-8 (``...(truncated)`` when cut)."""
    if exception is None:
        text = fallback_traceback or "message rejected without an exception"
    else:
        head = f"{type(exception).__name__}: {exception}"
        tb = "".join(traceback.format_exception(exception)) if exception.__traceback__ else fallback_traceback
        text = f"{head}\n{tb}" if tb else head
    return truncate_error(text, ERROR_LIMIT_BYTES)


class DeadLetterMiddleware(dramatiq.Middleware):
    """Writes one ``task_dead_letters`` row when Dramatiq rejects a message for good.

    Hook: ``after_nack``. The worker nacks a message only when ``message.failed`` is set, and it
    does so after every ``after_process_message`` / ``after_skip_message`` hook has run, so
    ``Retries`` has already decided: a retried attempt is acked (Retries enqueues a new copy) and
    never reaches this hook. That covers retries exhausted, ``throws`` exceptions, age limit
    exceeded (``SkipMessage`` after ``fail()``), time limit exceeded with no retries left, and
    messages for an undeclared actor.

    Stack position: anywhere, because ``nack`` is a later signal than ``process_message``;
    conventionally append it after Dramatiq's default middleware. It also snapshots the retry count
    in ``before_process_message`` so ``fail_count`` is the attempt count (retries + 1) whether or
    not Retries counted the final attempt.

    Row: ``task_type`` = actor name, scope from ``probe_scope``, ``related_id`` = knowledge id,
    ``payload`` = ``message.asdict()`` (enough to re-send it), ``last_error`` = type, message and
    traceback cut to 8 KiB. When the row cannot be written (PostgreSQL down, which is what made a
    producer's message use up its retries), the same row goes to the Redis spool
    (``repos.dead_letter_spool``), which workers and ``kbwiki dead-letters`` move into the table once
    PostgreSQL answers. Best effort: a failure of both is logged, never raised, so it cannot mask
    the task's own error (the message is then only in Dramatiq's dead set, ``<queue>.XQ``, 7 days).

    Parameters:
      pool_factory: returns the connection pool; called on the first dead letter (then cached), so
        the middleware can be built before the database is reachable.
      spool_factory: returns the ``DeadLetterSpool``; None keeps no spool (the failure is only logged).
    """

    def __init__(
        self, pool_factory: Callable[[], ConnectionPool], spool_factory: Callable[[], DeadLetterSpool] | None = None
    ) -> None:
        self._pool_factory = pool_factory
        self._spool_factory = spool_factory
        self._repo: TaskDeadLetterRepository | None = None
        self._repo_lock = threading.Lock()
        self._local = threading.local()

    def _dead_letters(self) -> TaskDeadLetterRepository:
        with self._repo_lock:
            if self._repo is None:
                self._repo = TaskDeadLetterRepository(self._pool_factory())
            return self._repo

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        # Worker threads run before_process_message and the nack of the same message, so one slot
        # per thread is enough and nothing outlives an abandoned message.
        self._local.start = (message.message_id, int(message.options.get("retries", 0) or 0))

    def _attempts(self, message: MessageProxy) -> int:
        start = getattr(self._local, "start", None)
        if start is not None and start[0] == message.message_id:
            return start[1] + 1
        # Rejected without being processed on this thread (undeclared actor): this was one more try.
        return int(message.options.get("retries", 0) or 0) + 1

    def after_nack(self, broker: Broker, message: MessageProxy) -> None:
        try:
            letter = self.letter(message)
            try:
                self.record(message, letter)
            except Exception as exc:
                if self._spool_factory is None:
                    raise
                self._spool_factory().put(message.message_id, letter)
                _log_letter("dead_letter.spooled", message, letter, error=repr(exc))
        except Exception:  # best effort: the task's own failure is already logged by the worker
            log.exception("dead_letter.record_failed", actor=message.actor_name, message_id=message.message_id)
        finally:
            self._local.start = None

    def letter(self, message: MessageProxy) -> dict[str, Any]:
        """The dead letter of ``message``: ``TaskDeadLetterRepository.insert``'s keywords."""
        scope = probe_scope(message.args, message.kwargs)
        exception = getattr(message, "_exception", None)  # set by the worker via stuff_exception()
        return {
            "task_type": message.actor_name[:_ID_WIDTH],
            "tenant_id": scope.tenant_id,
            "scope": scope.scope,
            "scope_id": scope.scope_id,
            "related_id": scope.knowledge_id or "",
            "payload": _jsonable(message.asdict()),
            "last_error": describe_error(exception, message.options.get("traceback")),
            "fail_count": self._attempts(message),
        }

    def record(self, message: MessageProxy, letter: dict[str, Any] | None = None) -> int:
        """Store the dead letter of ``message`` now; returns its id. Raises on database errors."""
        letter = letter or self.letter(message)
        row = self._dead_letters().insert(**letter)
        _log_letter("dead_letter.recorded", message, letter, dead_letter_id=row.id)
        return row.id


def _log_letter(event: str, message: MessageProxy, letter: dict[str, Any], **more: Any) -> None:
    """A warning ``event`` about the dead letter of ``message``: its actor, message id and lane scope."""
    log.warning(
        event,
        actor=message.actor_name,
        message_id=message.message_id,
        scope=letter["scope"],
        scope_id=letter["scope_id"],
        **more,
    )


def _jsonable(value: Any) -> Any:
    """Messages are JSON on the wire already; coerce anything a middleware added that is not."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)
