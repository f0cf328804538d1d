"""Bounded sessions (issue 27): a frozen transaction never stalls the heartbeat or the reaper, and
PostgreSQL ends it.

A "frozen batch" here is a raw session that takes the locks a reduce batch holds in its write
transaction (its claimed ``task_pending_ops`` rows and its ``task_lane_fences`` row, FOR UPDATE)
and then sits idle in that transaction, as a worker stopped with SIGSTOP does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg.rows import dict_row

from repos.db import SessionLimits, make_pool
from repos.liveness import LaneFenceRepository, WorkerRepository
from repos.pending_ops import TaskPendingOpsRepository
from stages.deps import build_deps
from stages.liveness import reap
from wiki.errors import DatabaseUnreachable, FenceLost
from wiki.lanes import REDUCE

KB = "knowledge_base"
FROZEN = "frozen-host:1:feedbeef"
HEALTHY = "healthy-host:2:cafecafe"
#: How long a test waits for a condition before it fails (a loaded machine, not a measurement).
DEADLINE_S = 30.0


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {DEADLINE_S} s: {what}")
        time.sleep(0.05)


def _session_alive(database_url: str, pid: int) -> bool:
    with psycopg.connect(database_url, autocommit=True) as admin:
        return admin.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone() is not None


def _dead_workers_batch(pool) -> tuple[int, int]:
    """A dead worker's reduce batch: 3 ops claimed by FROZEN (whose heartbeat is an hour old) and
    the lane's fence taken by it. Returns the claimed op count and the batch's fencing token."""
    ops = TaskPendingOpsRepository(pool)
    for key in ("d1", "d2", "d3"):
        ops.enqueue(tenant_id=1, task_type=REDUCE, scope=KB, scope_id="kb1", op="ingest", dedup_key=key)
    claimed = ops.claim(REDUCE, KB, "kb1", limit=10, stale_after_s=3600, owner=FROZEN)
    token = LaneFenceRepository(pool).take(REDUCE, KB, "kb1", holder=FROZEN, lock_token="tok")
    WorkerRepository(pool).beat(FROZEN)
    with pool.connection() as conn:
        conn.execute("UPDATE task_workers SET beat_at = now() - interval '1 hour' WHERE worker_id = %s", (FROZEN,))
    return len(claimed), token


def _hold_batch_locks(conn: psycopg.Connection, token: int) -> None:
    """Take the locks FROZEN's batch holds in its write transaction: its claimed rows and the fence
    row (``LaneFenceRepository.check``), and leave the transaction open."""
    held = conn.execute("SELECT id FROM task_pending_ops WHERE claimed_by = %s ORDER BY id FOR UPDATE", (FROZEN,))
    assert len(held.fetchall()) == 3
    LaneFenceRepository.check(REDUCE, KB, "kb1", token, conn)


def _in_thread(fn: Callable[[], object]) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # reported by the test, not lost in the thread
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_beat_and_a_reap_finish_while_a_frozen_batch_holds_its_claims_and_fence(
    clean_db, database_url, redis_client, settings
):
    pool = clean_db
    workers = WorkerRepository(pool)
    n, token = _dead_workers_batch(pool)
    holder = psycopg.connect(database_url, row_factory=dict_row)
    _hold_batch_locks(holder, token)
    try:

        def beat_and_reap() -> int:
            workers.beat(HEALTHY)
            return reap(build_deps(settings, pool=pool))

        thread, out = _in_thread(beat_and_reap)
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "the heartbeat waited behind the frozen batch's locks"
        assert "error" not in out, out.get("error")
        assert out["value"] == 0  # the locked claims are left for a later beat
        assert workers.alive_count(settings.worker_ttl_s) == 1
    finally:
        # the frozen batch's transaction ends: a rollback returns once its locks are gone (a bare
        # close does not wait for the server's backend to end, so the reap below raced it)
        holder.rollback()
        holder.close()
    assert reap(build_deps(settings, pool=pool)) == n
    with pool.connection() as conn:
        fence = conn.execute("SELECT holder FROM task_lane_fences WHERE scope_id = 'kb1'").fetchone()
    assert fence["holder"] is None


def test_postgresql_ends_a_frozen_batch_its_claims_are_taken_back_and_its_late_writes_fenced_out(
    clean_db, database_url, redis_client, settings
):
    pool = clean_db
    workers, fences = WorkerRepository(pool), LaneFenceRepository(pool)
    n, token = _dead_workers_batch(pool)
    frozen_pool = make_pool(database_url, 1, 1, limits=SessionLimits(idle_in_transaction_s=0.5))
    try:
        with pytest.raises(DatabaseUnreachable, match="idle-in-transaction"), frozen_pool.connection() as conn:
            _hold_batch_locks(conn, token)
            pid = conn.info.backend_pid
            _wait_for(lambda: not _session_alive(database_url, pid), "PostgreSQL ends the idle transaction")
            workers.beat(HEALTHY)  # the other worker's next beat takes the claims back
            assert reap(build_deps(settings, pool=pool)) == n
            fences.take(REDUCE, KB, "kb1", holder=HEALTHY)  # and its next batch starts
            conn.execute("SELECT 1")  # the frozen worker resumes
        with frozen_pool.connection() as conn, pytest.raises(FenceLost):  # its batch retries its writes
            LaneFenceRepository.check(REDUCE, KB, "kb1", token, conn)
    finally:
        frozen_pool.close()


def test_a_reap_behind_a_table_lock_is_deferred_not_stuck(clean_db, database_url, redis_client, settings):
    pool = clean_db
    workers = WorkerRepository(pool)
    with psycopg.connect(database_url) as holder:
        holder.execute("LOCK TABLE task_lane_fences IN EXCLUSIVE MODE")
        thread, out = _in_thread(lambda: workers.reap(settings.worker_ttl_s, 3600))
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "the reap waited for the table lock"
        holder.rollback()
    assert "error" not in out, out.get("error")
    assert out["value"].claims == 0 and "LockNotAvailable" in out["value"].deferred
    workers.beat(HEALTHY)  # the pooled connection the reap used is fine
    assert reap(build_deps(settings, pool=pool)) == 0


def test_giving_every_claim_back_skips_the_rows_a_frozen_batch_holds(clean_db, database_url):
    # after Redis lost its data the heartbeat gives every claim back (stages.liveness.after_redis_loss)
    pool = clean_db
    ops = TaskPendingOpsRepository(pool)
    n, token = _dead_workers_batch(pool)
    ops.enqueue(tenant_id=1, task_type=REDUCE, scope=KB, scope_id="kb2", op="ingest", dedup_key="d4")
    ops.claim(REDUCE, KB, "kb2", limit=1, stale_after_s=3600, owner=HEALTHY)
    with psycopg.connect(database_url, row_factory=dict_row) as holder:
        _hold_batch_locks(holder, token)
        thread, out = _in_thread(ops.release_all)
        thread.join(DEADLINE_S)
        assert not thread.is_alive(), "giving the claims back waited behind the frozen batch's locks"
    assert "error" not in out, out.get("error")
    assert out["value"] == 1  # kb2's claim; the frozen batch's are left to the reap
    assert ops.claimed_count(REDUCE, KB, "kb1", 3600) == n


def test_pooled_sessions_carry_the_limits(database_url):
    def shown(pool) -> tuple[str, str, str]:
        with pool.connection() as conn:
            return tuple(
                conn.execute(f"SHOW {name}").fetchone()[name]
                for name in ("idle_in_transaction_session_timeout", "lock_timeout", "statement_timeout")
            )

    default = make_pool(database_url, 1, 1)
    custom = make_pool(database_url, 1, 1, limits=SessionLimits(idle_in_transaction_s=0.25, lock_s=2, statement_s=0))
    try:
        assert shown(default) == ("15s", "30s", "5min")
        assert shown(custom) == ("250ms", "2s", "0")
    finally:
        default.close()
        custom.close()


def test_a_session_postgresql_ends_raises_database_unreachable_and_is_replaced(database_url):
    pool = make_pool(database_url, 1, 1, limits=SessionLimits(idle_in_transaction_s=0.3, lock_s=0, statement_s=0))
    try:
        with pytest.raises(DatabaseUnreachable, match="idle-in-transaction"), pool.connection() as conn:
            pid = conn.info.backend_pid
            conn.execute("SELECT 1")  # opens the transaction, then the holder freezes
            _wait_for(lambda: not _session_alive(database_url, pid), "PostgreSQL ends the idle transaction")
            conn.execute("SELECT 1")
        with pool.connection() as conn:  # the pool lends a new session
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        pool.close()


@pytest.mark.parametrize(
    ("limits", "error"),
    [
        (SessionLimits(idle_in_transaction_s=0, lock_s=0.2, statement_s=0), psycopg.errors.LockNotAvailable),
        (SessionLimits(idle_in_transaction_s=0, lock_s=0, statement_s=0.2), psycopg.errors.QueryCanceled),
    ],
    ids=["lock_timeout", "statement_timeout"],
)
def test_lock_and_statement_timeouts_stay_statement_errors(database_url, limits, error):
    pool = make_pool(database_url, 1, 1, limits=limits)
    try:
        with psycopg.connect(database_url) as holder:
            holder.execute("SELECT pg_advisory_xact_lock(hashtextextended('bounded-sessions-test', 0))")
            with pytest.raises(error), pool.connection() as conn:
                conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('bounded-sessions-test', 0))")
        with pool.connection() as conn:
            assert conn.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        pool.close()
