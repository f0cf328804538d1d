"""DeadLetterMiddleware (and StructlogMiddleware alongside it) with real PostgreSQL and Redis."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator

import dramatiq
import pytest
import structlog
from dramatiq.broker import MessageProxy
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware import default_middleware
from psycopg_pool import ConnectionPool
from structlog.testing import capture_logs

from middleware.dead_letter import DeadLetterMiddleware, probe_scope
from middleware.logging import StructlogMiddleware, configure_logging
from repos.dead_letters import TaskDeadLetterRepository
from repos.queue_common import TRUNCATED_SUFFIX
from tests.conftest import REDIS_URL
from wiki.errors import ERROR_LIMIT_BYTES

DEADLINE_S = 30


def wait_for(condition: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    """Poll ``condition`` until it holds; fail the test with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.fixture()
def dead(clean_db) -> TaskDeadLetterRepository:
    return TaskDeadLetterRepository(clean_db)


@pytest.fixture()
def broker(clean_db, redis_prefix, redis_client) -> Iterator[RedisBroker]:
    """A RedisBroker in this test's own namespace: default middleware, then the dead-letter middleware."""
    middleware = [StructlogMiddleware()] + [m() for m in default_middleware]
    middleware.append(DeadLetterMiddleware(lambda: clean_db))
    b = RedisBroker(url=REDIS_URL, namespace=f"{redis_prefix}-dramatiq", middleware=middleware)
    yield b
    b.close()


def _proxy(actor_name: str, *, args=(), kwargs=None, options=None) -> MessageProxy:
    return MessageProxy(
        dramatiq.Message(
            queue_name="default", actor_name=actor_name, args=args, kwargs=kwargs or {}, options=options or {}
        )
    )


def _raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:  # noqa: BLE001 - we want it with its traceback
        return caught


# ---- scope probe -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        ((), {"tenant_id": 4, "knowledge_id": "doc", "knowledge_base_id": "kb"}, ("knowledge_base", "kb", 4, "doc")),
        ((), {"kb_id": "kb2", "tenant_id": "5"}, ("knowledge_base", "kb2", 5, None)),
        ((), {"source_kb_id": "kb3"}, ("knowledge_base", "kb3", 0, None)),
        ((), {"tenant_id": 4, "knowledge_id": "doc"}, ("knowledge", "doc", 4, "doc")),
        ((), {"tenant_id": 9}, ("tenant", "9", 9, None)),
        ((), {"unrelated": 1}, ("unknown", "", 0, None)),
        (({"kb_id": "from-dict", "knowledge_id": "d"}, 3), {}, ("knowledge_base", "from-dict", 0, "d")),
        (({"kb_id": "from-dict"},), {"kb_id": "from-kwargs"}, ("knowledge_base", "from-kwargs", 0, None)),
        (("not-a-dict",), {"tenant_id": "abc"}, ("tenant", "abc", 0, None)),
    ],
)
def test_probe_scope_precedence(args, kwargs, expected):
    scope = probe_scope(args, kwargs)
    assert (scope.scope, scope.scope_id, scope.tenant_id, scope.knowledge_id) == expected


# ---- the hook, driven through a real broker's middleware chain ---------------------------------


def _run_attempt(broker: RedisBroker, message: MessageProxy, exc: BaseException) -> None:
    """What the worker does for one failing attempt: process hooks, then ack or nack as Retries decided."""
    broker.emit_before("process_message", message)
    message.stuff_exception(exc)
    broker.emit_after("process_message", message, exception=exc)
    broker.emit_after("nack" if message.failed else "ack", message)


def test_no_row_for_an_attempt_that_will_be_retried_then_one_when_exhausted(broker, dead):
    name = f"flaky_{uuid.uuid4().hex[:8]}"
    dramatiq.actor(lambda **_: None, broker=broker, actor_name=name, max_retries=2, min_backoff=10, max_backoff=10)

    message = _proxy(
        name, kwargs={"knowledge_base_id": "kb1", "tenant_id": 2, "knowledge_id": "doc-9"}, options={"retries": 1}
    )
    _run_attempt(broker, message, _raised(RuntimeError("first")))
    assert not message.failed and dead.count(tenant_id=None) == 0

    message = _proxy(
        name, kwargs={"knowledge_base_id": "kb1", "tenant_id": 2, "knowledge_id": "doc-9"}, options={"retries": 2}
    )
    _run_attempt(broker, message, _raised(RuntimeError("last straw")))
    assert message.failed
    [row] = dead.list(tenant_id=None)
    assert (row.task_type, row.scope, row.scope_id, row.related_id, row.tenant_id) == (
        name,
        "knowledge_base",
        "kb1",
        "doc-9",
        2,
    )
    assert row.fail_count == 3
    assert row.last_error.startswith("RuntimeError: last straw") and "Traceback" in row.last_error
    assert row.payload["message_id"] == message.message_id and row.payload["kwargs"]["knowledge_id"] == "doc-9"


def test_last_error_is_truncated_to_8_kib_with_suffix(broker, dead):
    mw = broker.middleware[-1]
    message = _proxy("huge_error", kwargs={"tenant_id": 1})
    message.stuff_exception(_raised(ValueError("ü" * 10_000)))
    message.fail()
    mw.after_nack(broker, message)
    [row] = dead.list(tenant_id=None)
    assert len(row.last_error.encode("utf-8")) <= ERROR_LIMIT_BYTES
    assert len(row.last_error.encode("utf-8")) > ERROR_LIMIT_BYTES - 8
    assert row.last_error.startswith("ValueError: ü") and row.last_error.endswith(TRUNCATED_SUFFIX)
    assert (row.scope, row.scope_id, row.fail_count) == ("tenant", "1", 1)


def test_insert_failure_is_logged_and_never_raised(dead):
    def broken_factory() -> ConnectionPool:
        raise RuntimeError("database unreachable")

    unreachable = ConnectionPool("postgresql://postgres@127.0.0.1:1/none", min_size=1, open=False, timeout=0.5)
    unreachable.open(wait=False)
    try:
        for factory in (broken_factory, lambda: unreachable):
            mw = DeadLetterMiddleware(factory)
            message = _proxy("doomed", kwargs={"kb_id": "kb1"})
            message.stuff_exception(_raised(KeyError("task error")))
            message.fail()
            with capture_logs() as logs:
                mw.after_nack(None, message)  # must not raise
            assert [e["event"] for e in logs] == ["dead_letter.record_failed"]
            assert logs[0]["message_id"] == message.message_id
    finally:
        unreachable.close()
    assert dead.count(tenant_id=None) == 0


def test_the_pool_factory_is_called_lazily_once(dead):
    calls: list[int] = []

    def factory() -> ConnectionPool:
        calls.append(1)
        return dead.pool

    mw = DeadLetterMiddleware(factory)
    assert calls == []
    for _ in range(2):
        message = _proxy("lazy", kwargs={"knowledge_id": "d1"})
        message.fail()
        with capture_logs() as logs:
            mw.after_nack(None, message)
        assert logs[0]["event"] == "dead_letter.recorded" and logs[0]["scope"] == "knowledge"
        assert logs[0]["dead_letter_id"] == dead.list(tenant_id=None, limit=1)[0].id
    assert calls == [1] and dead.count(tenant_id=None, scope="knowledge", scope_id="d1") == 2


def test_a_letter_postgresql_refuses_is_spooled_in_redis_then_moved_with_its_time(dead, redis_client, redis_prefix):
    import redis as redis_lib

    from repos.dead_letter_spool import DeadLetterSpool

    spool = DeadLetterSpool(redis_client, redis_prefix)
    unreachable = ConnectionPool("postgresql://postgres@127.0.0.1:1/none", min_size=1, open=False, timeout=0.5)
    unreachable.open(wait=False)
    try:
        mw = DeadLetterMiddleware(lambda: unreachable, lambda: spool)
        message = _proxy(
            "wiki_submit", kwargs={"tenant_id": 3, "knowledge_base_id": "kb1", "title": "t"}, options={"retries": 9}
        )
        message.stuff_exception(_raised(ConnectionError("database is away")))
        message.fail()
        with capture_logs() as logs:
            mw.after_nack(None, message)
    finally:
        unreachable.close()
    assert [e["event"] for e in logs] == ["dead_letter.spooled"]
    assert dead.count(tenant_id=None) == 0
    assert spool.count(tenant_id=3, scope_id="kb1") == 1 and spool.count(tenant_id=4) == 0
    [kept] = spool.letters().values()
    assert kept["payload"]["kwargs"]["title"] == "t" and kept["fail_count"] == 10

    assert spool.drain_into(dead, tenant_id=4) == 0 and spool.count(tenant_id=3) == 1  # another tenant's: kept
    assert spool.drain_into(dead, tenant_id=3) == 1 and spool.count(tenant_id=None) == 0
    [row] = dead.list(tenant_id=3)
    assert (row.task_type, row.scope, row.scope_id, row.fail_count) == ("wiki_submit", "knowledge_base", "kb1", 10)
    assert row.failed_at.isoformat() == kept["failed_at"]
    assert row.last_error.startswith("ConnectionError: database is away")

    # both stores down: logged, never raised
    mw = DeadLetterMiddleware(
        lambda: (_ for _ in ()).throw(RuntimeError("no pool")),
        lambda: DeadLetterSpool(redis_lib.Redis(port=1), redis_prefix),
    )
    message = _proxy("wiki_submit", kwargs={"tenant_id": 3})
    message.fail()
    with capture_logs() as logs:
        mw.after_nack(None, message)
    assert [e["event"] for e in logs] == ["dead_letter.record_failed"]


def test_data_retries_span_the_configured_time_at_dramatiqs_backoff():
    """The retry count of a data-carrying actor outlasts ``data_retry_s`` whatever the jitter draws."""
    from dramatiq.common import compute_backoff

    from actors.retry_policy import data_retries, guaranteed_wait_ms
    from wiki.settings import Settings

    options = data_retries(Settings())
    assert options == {"max_retries": 583, "min_backoff": 1000, "max_backoff": 300_000}
    assert guaranteed_wait_ms(583, 1000, 300_000) >= 86_400_000 > guaranteed_wait_ms(582, 1000, 300_000)
    for _ in range(20):
        waited = sum(compute_backoff(n, factor=1000, max_backoff=300_000)[1] for n in range(583))
        assert 86_400_000 <= waited <= 2 * 86_400_000 + 600_000


# ---- end to end: real RedisBroker and Worker ---------------------------------------------------


@pytest.mark.e2e
def test_worker_dead_letters_exhausted_skipped_and_unknown_messages_only(broker, dead):
    suffix = uuid.uuid4().hex[:8]
    attempts = {"always": 0, "once": 0, "once_ok": 0}
    lock = threading.Lock()

    def always_fails(tenant_id: int, knowledge_base_id: str, knowledge_id: str) -> None:
        with lock:
            attempts["always"] += 1
        raise RuntimeError(f"cannot process {knowledge_id}")

    def fails_once(tenant_id: int, knowledge_base_id: str) -> None:
        with lock:
            attempts["once"] += 1
            if attempts["once"] == 1:
                raise RuntimeError("transient")
            attempts["once_ok"] += 1

    def too_old(tenant_id: int) -> None:
        raise AssertionError("an expired message must not run")

    backoff = {"min_backoff": 10, "max_backoff": 10}
    always = dramatiq.actor(always_fails, broker=broker, actor_name=f"always_{suffix}", max_retries=2, **backoff)
    once = dramatiq.actor(fails_once, broker=broker, actor_name=f"once_{suffix}", max_retries=2, **backoff)
    old = dramatiq.actor(too_old, broker=broker, actor_name=f"old_{suffix}", max_age=1)

    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        always.send(tenant_id=3, knowledge_base_id="kb-7", knowledge_id="doc-42")
        once.send(tenant_id=3, knowledge_base_id="kb-8")
        old.send_with_options(kwargs={"tenant_id": 3}, delay=20)
        broker.enqueue(
            dramatiq.Message(
                queue_name="default",
                actor_name=f"ghost_{suffix}",
                args=(),
                kwargs={"knowledge_id": "doc-x"},
                options={},
            )
        )
        wait_for(lambda: dead.count(tenant_id=None) >= 3, "three dead letters")
        wait_for(lambda: attempts["once_ok"] == 1, "the flaky actor to succeed")
    finally:
        worker.stop()

    by_type = {row.task_type: row for row in dead.list(tenant_id=None)}
    assert set(by_type) == {f"always_{suffix}", f"old_{suffix}", f"ghost_{suffix}"}
    assert attempts["always"] == 3 and attempts["once"] == 2

    exhausted = by_type[f"always_{suffix}"]
    assert exhausted.fail_count == 3
    assert (exhausted.scope, exhausted.scope_id, exhausted.related_id, exhausted.tenant_id) == (
        "knowledge_base",
        "kb-7",
        "doc-42",
        3,
    )
    assert "RuntimeError: cannot process doc-42" in exhausted.last_error
    assert exhausted.payload["kwargs"] == {"tenant_id": 3, "knowledge_base_id": "kb-7", "knowledge_id": "doc-42"}
    assert exhausted.payload["actor_name"] == f"always_{suffix}"

    expired = by_type[f"old_{suffix}"]
    assert (expired.scope, expired.scope_id, expired.fail_count) == ("tenant", "3", 1)
    assert "SkipMessage" in expired.last_error

    ghost = by_type[f"ghost_{suffix}"]
    assert (ghost.scope, ghost.related_id, ghost.fail_count) == ("knowledge", "doc-x", 1)
    assert "ActorNotFound" in ghost.last_error


# ---- StructlogMiddleware (it shares the probe) -------------------------------------------------


def test_structlog_middleware_binds_context_and_logs_one_outcome_per_message(capsys):
    configure_logging("INFO")
    configure_logging("INFO")  # idempotent: still one line per event
    try:
        _log_one_of_each()
    finally:
        structlog.reset_defaults()
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines()]
    message_id = lines[0]["message_id"]
    assert [e["event"] for e in lines] == ["inside", "actor.finished", "actor.finished", "actor.skipped", "outside"]
    inside = lines[0]
    assert (inside["actor"], inside["tenant_id"]) == ("logged", 5) and message_id
    assert (inside["knowledge_base_id"], inside["knowledge_id"]) == ("kb1", "d1")
    assert "T" in inside["timestamp"] and inside["level"] == "info"
    assert lines[1]["outcome"] == "error" and lines[1]["error_type"] == "KeyError"
    assert lines[1]["duration_ms"] >= 0 and lines[1]["message_id"] == message_id
    assert lines[2]["outcome"] == "ok" and "error_type" not in lines[2]
    assert "actor" not in lines[4]
    with pytest.raises(ValueError):
        configure_logging("LOUD")


def _log_one_of_each() -> None:
    mw = StructlogMiddleware()
    message = _proxy("logged", kwargs={"tenant_id": 5, "kb_id": "kb1", "knowledge_id": "d1"})
    mw.before_process_message(None, message)
    structlog.get_logger("test").info("inside")
    mw.after_process_message(None, message, exception=_raised(KeyError("x")))
    mw.before_process_message(None, message)
    mw.after_process_message(None, message, result=None)
    mw.after_skip_message(None, message)
    structlog.get_logger("test").info("outside")
