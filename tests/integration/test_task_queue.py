"""TaskPendingOpsRepository and TaskDeadLetterRepository against a real PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import psycopg
import pytest

from repos.dead_letters import TaskDeadLetterRepository
from repos.pending_ops import PendingOp, TaskPendingOpsRepository
from repos.queue_common import TRUNCATED_SUFFIX
from wiki.errors import ERROR_LIMIT_BYTES

INGEST = "wiki:ingest"
REDUCE = "wiki:reduce"
KB = "knowledge_base"
STALE_S = 300


@pytest.fixture()
def ops(clean_db) -> TaskPendingOpsRepository:
    return TaskPendingOpsRepository(clean_db)


@pytest.fixture()
def dead(clean_db) -> TaskDeadLetterRepository:
    return TaskDeadLetterRepository(clean_db)


def _add(ops: TaskPendingOpsRepository, key: str, *, kb: str = "kb1", task_type: str = INGEST, op: str = "ingest"):
    return ops.enqueue(
        tenant_id=7, task_type=task_type, scope=KB, scope_id=kb, op=op, dedup_key=key, payload={"knowledge_id": key}
    )


def _make_kb(pool, kb_id: str, tenant_id: int = 7, deleted: bool = False) -> None:
    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO knowledge_bases (id, tenant_id, name, deleted_at) VALUES (%s, %s, %s, %s)",
            (kb_id, tenant_id, f"name-{kb_id}", datetime.now(UTC) if deleted else None),
        )


def _age_claims(pool, ids: list[int], seconds: int) -> None:
    with pool.connection() as conn:
        conn.execute(
            "UPDATE task_pending_ops SET claimed_at = now() - make_interval(secs => %s) WHERE id = ANY(%s)",
            (seconds, ids),
        )


def _row_count(pool, table: str) -> int:
    with pool.connection() as conn:
        return conn.execute(f"SELECT count(*) AS n FROM {table}").fetchone()["n"]


# ---- pending ops -------------------------------------------------------------------------------


def test_enqueue_returns_the_stored_row_with_database_defaults(ops):
    before = datetime.now(UTC) - timedelta(seconds=5)
    op = ops.enqueue(tenant_id=3, task_type=INGEST, scope=KB, scope_id="kb1", op="ingest")
    assert isinstance(op, PendingOp)
    assert op.id > 0 and op.tenant_id == 3 and op.dedup_key == ""
    assert op.payload == {} and op.fail_count == 0 and op.claimed_at is None
    assert op.enqueued_at > before
    second = _add(ops, "k1")
    assert second.id > op.id and second.payload == {"knowledge_id": "k1"}


@pytest.mark.parametrize("missing", ["task_type", "scope", "scope_id", "op"])
def test_enqueue_requires_lane_and_op(ops, missing):
    fields = {"task_type": INGEST, "scope": KB, "scope_id": "kb1", "op": "ingest"}
    fields[missing] = ""
    with pytest.raises(ValueError, match=missing):
        ops.enqueue(tenant_id=1, **fields)
    with pytest.raises(ValueError):
        ops.enqueue(tenant_id=1, task_type=INGEST, scope=KB, scope_id="kb1", op="ingest", dedup_key="x" * 129)
    assert _row_count(ops.pool, "task_pending_ops") == 0


def test_enqueue_if_kb_active_refuses_unknown_deleted_and_foreign_kbs(ops):
    _make_kb(ops.pool, "live")
    _make_kb(ops.pool, "gone", deleted=True)
    args = {"task_type": INGEST, "scope": KB, "op": "ingest", "dedup_key": "d1"}
    accepted = ops.enqueue_if_kb_active(tenant_id=7, scope_id="live", **args)
    assert accepted is not None and accepted.scope_id == "live" and accepted.payload == {}
    assert ops.enqueue_if_kb_active(tenant_id=8, scope_id="live", **args) is None
    assert ops.enqueue_if_kb_active(tenant_id=7, scope_id="gone", **args) is None
    assert ops.enqueue_if_kb_active(tenant_id=7, scope_id="missing", **args) is None
    with pytest.raises(ValueError):
        ops.enqueue_if_kb_active(tenant_id=7, scope_id="live", **{**args, "scope": "tenant"})
    assert [o.id for o in ops.peek(INGEST, KB, "live")] == [accepted.id]
    assert _row_count(ops.pool, "task_pending_ops") == 1


def test_enqueue_if_kb_active_holds_the_kb_row_until_commit(ops, database_url):
    _make_kb(ops.pool, "live")
    with ops.pool.connection() as conn:
        assert (
            ops.enqueue_if_kb_active(tenant_id=7, task_type=INGEST, scope=KB, scope_id="live", op="ingest", conn=conn)
            is not None
        )
        # A soft delete from another session must wait for the enqueuing transaction.
        with psycopg.connect(database_url, autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("UPDATE knowledge_bases SET deleted_at = now() WHERE id = 'live'")
    assert ops.pending_count(INGEST, KB, "live") == 1


def test_peek_is_in_id_order_clamps_limit_and_claims_nothing(ops):
    added = [_add(ops, f"k{i}") for i in range(3)]
    assert [o.id for o in ops.peek(INGEST, KB, "kb1")] == [o.id for o in added]
    assert len(ops.peek(INGEST, KB, "kb1", limit=0)) == 1
    assert len(ops.peek(INGEST, KB, "kb1", limit=-5)) == 1
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 0
    with ops.pool.connection() as conn:
        conn.execute(
            "INSERT INTO task_pending_ops (tenant_id, task_type, scope, scope_id, op, dedup_key)"
            " SELECT 7, %s, %s, 'big', 'ingest', 'k' || g FROM generate_series(1, 1005) g",
            (INGEST, KB),
        )
    assert len(ops.peek(INGEST, KB, "big", limit=5000)) == 1000


def test_claim_takes_whole_keys_oldest_first_and_limit_counts_keys(ops):
    a1 = _add(ops, "a")
    b1 = _add(ops, "b")
    a2 = _add(ops, "a", op="retract")
    e1 = _add(ops, "")
    e2 = _add(ops, "")
    c1 = _add(ops, "c")
    other_lane = _add(ops, "a", kb="kb2")

    first = ops.claim(INGEST, KB, "kb1", limit=2, stale_after_s=STALE_S)
    assert [o.id for o in first] == [a1.id, b1.id, a2.id]
    assert all(o.claimed_at is not None for o in first)

    # Empty keys are one key per row.
    second = ops.claim(INGEST, KB, "kb1", limit=2, stale_after_s=STALE_S)
    assert [o.id for o in second] == [e1.id, e2.id]
    third = ops.claim(INGEST, KB, "kb1", limit=10, stale_after_s=STALE_S)
    assert [o.id for o in third] == [c1.id]
    assert ops.claim(INGEST, KB, "kb1", limit=10, stale_after_s=STALE_S) == []
    assert ops.claim(INGEST, KB, "kb1", limit=0, stale_after_s=STALE_S) == []
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 6
    assert ops.peek(INGEST, KB, "kb2")[0].claimed_at is None and other_lane.claimed_at is None


def test_fresh_claim_blocks_later_rows_of_its_key_until_released(ops):
    a1 = _add(ops, "a")
    assert [o.id for o in ops.claim(INGEST, KB, "kb1", 10, STALE_S)] == [a1.id]
    a2 = _add(ops, "a")
    b1 = _add(ops, "b")
    # The key "a" is busy: only "b" is claimable even though a2 is unclaimed.
    assert [o.id for o in ops.claim(INGEST, KB, "kb1", 10, STALE_S)] == [b1.id]
    assert ops.release([a1.id]) == 1
    assert [o.id for o in ops.claim(INGEST, KB, "kb1", 10, STALE_S)] == [a1.id, a2.id]


def test_stale_claims_are_reclaimable(ops):
    a1, a2, b1 = _add(ops, "a"), _add(ops, "a"), _add(ops, "b")
    claimed = ops.claim(INGEST, KB, "kb1", 10, STALE_S)
    assert {o.id for o in claimed} == {a1.id, a2.id, b1.id}
    _age_claims(ops.pool, [a1.id, a2.id], STALE_S + 60)
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 1
    reclaimed = ops.claim(INGEST, KB, "kb1", 10, STALE_S)
    assert [o.id for o in reclaimed] == [a1.id, a2.id]
    assert all(o.claimed_at > claimed[0].claimed_at for o in reclaimed)

    _age_claims(ops.pool, [b1.id], STALE_S + 60)
    assert ops.reclaim_stale(STALE_S) == 1
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 2
    assert [o.claimed_at is None for o in ops.peek(INGEST, KB, "kb1")] == [False, False, True]


def test_concurrent_claimers_get_disjoint_sets_of_whole_keys(ops):
    for i in range(6):
        _add(ops, f"k{i}")
        _add(ops, f"k{i}")
    both_claimed = threading.Barrier(2, timeout=20)
    results: dict[str, list[PendingOp]] = {}
    errors: list[BaseException] = []

    def claimer(name: str) -> None:
        try:
            with ops.pool.connection() as conn:
                results[name] = ops.claim(INGEST, KB, "kb1", limit=3, stale_after_s=STALE_S, conn=conn)
                both_claimed.wait()  # hold both transactions open until each has claimed
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
            both_claimed.abort()

    threads = [threading.Thread(target=claimer, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    ids_a = {o.id for o in results["a"]}
    ids_b = {o.id for o in results["b"]}
    keys_a = {o.dedup_key for o in results["a"]}
    keys_b = {o.dedup_key for o in results["b"]}
    assert ids_a.isdisjoint(ids_b) and keys_a.isdisjoint(keys_b)
    assert len(keys_a) == 3 and len(keys_b) == 3
    assert len(ids_a) == 6 and len(ids_b) == 6
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 12


def test_release_and_delete_by_ids(ops):
    a, b, c = _add(ops, "a"), _add(ops, "b"), _add(ops, "c")
    ops.claim(INGEST, KB, "kb1", 10, STALE_S)
    assert ops.release([]) == 0 and ops.delete_by_ids([]) == 0
    assert ops.release([a.id]) == 1
    assert ops.claimed_count(INGEST, KB, "kb1", STALE_S) == 2
    assert ops.delete_by_ids([b.id, c.id]) == 2
    assert ops.delete_by_ids([b.id]) == 0
    assert [o.id for o in ops.peek(INGEST, KB, "kb1")] == [a.id]


def test_move_resets_the_op_in_the_target_lane_and_merges_payload(ops):
    a = ops.enqueue(
        tenant_id=7,
        task_type=INGEST,
        scope=KB,
        scope_id="kb1",
        op="ingest",
        dedup_key="a",
        payload={"knowledge_id": "a", "keep": 1},
    )
    ops.claim(INGEST, KB, "kb1", 10, STALE_S)
    assert ops.incr_fail_count(a.id) == 1
    assert ops.move([a.id], REDUCE, {"content_hash": "h1", "keep": 2}) == 1
    assert ops.pending_count(INGEST, KB, "kb1") == 0
    [moved] = ops.peek(REDUCE, KB, "kb1")
    assert moved.id == a.id and moved.task_type == REDUCE and moved.scope_id == "kb1"
    assert moved.claimed_at is None and moved.fail_count == 0 and moved.enqueued_at >= a.enqueued_at
    assert moved.payload == {"knowledge_id": "a", "keep": 2, "content_hash": "h1"}
    with pytest.raises(ValueError):
        ops.move([a.id], "")
    assert ops.move([], REDUCE) == 0


def test_incr_fail_count_counts_and_reports_a_gone_row(ops):
    a = _add(ops, "a")
    assert [ops.incr_fail_count(a.id) for _ in range(3)] == [1, 2, 3]
    assert ops.peek(INGEST, KB, "kb1")[0].fail_count == 3
    assert ops.get(a.id) == ops.peek(INGEST, KB, "kb1")[0]
    ops.delete_by_ids([a.id])
    assert ops.incr_fail_count(a.id) is None
    assert ops.get(a.id) is None


def test_counts_per_lane_and_lanes_with_rows(ops):
    for key in ("a", "b", "c"):
        _add(ops, key)
    _add(ops, "a", task_type=REDUCE)
    _add(ops, "z", kb="kb2")
    ops.claim(INGEST, KB, "kb1", 1, STALE_S)
    assert ops.pending_count(INGEST, KB, "kb1") == 3
    assert ops.counts_by_lane(KB, "kb1") == {INGEST: 3, REDUCE: 1}
    assert ops.counts_by_lane(KB, "nope") == {}
    lanes = ops.lanes_with_rows()
    assert [(lane.task_type, lane.scope_id, lane.rows, lane.tenant_id) for lane in lanes] == [
        (INGEST, "kb1", 3, 7),
        (REDUCE, "kb1", 1, 7),
        (INGEST, "kb2", 1, 7),
    ]
    assert len(ops.lanes_with_rows(limit=0)) == 1


def test_delete_by_dedup_key_refuses_an_empty_key(ops):
    _add(ops, "")
    _add(ops, "a")
    _add(ops, "a", op="retract")
    _add(ops, "a", kb="kb2")
    with pytest.raises(ValueError):
        ops.delete_by_dedup_key(INGEST, KB, "kb1", "")
    assert _row_count(ops.pool, "task_pending_ops") == 4
    assert ops.delete_by_dedup_key(INGEST, KB, "kb1", "a", op="retract") == 1
    assert ops.delete_by_dedup_key(INGEST, KB, "kb1", "a") == 1
    assert ops.pending_count(INGEST, KB, "kb1") == 1
    assert ops.pending_count(INGEST, KB, "kb2") == 1


def test_enqueue_keys_writes_one_op_per_key_in_one_statement_and_refuses_an_empty_key(ops):
    with pytest.raises(ValueError):
        ops.enqueue_keys(tenant_id=7, task_type=INGEST, scope=KB, scope_id="kb1", op="touch", keys=["a", ""])
    assert _row_count(ops.pool, "task_pending_ops") == 0
    assert ops.enqueue_keys(tenant_id=7, task_type=INGEST, scope=KB, scope_id="kb1", op="touch", keys=[]) == 0
    keys = {"tenant_id": 7, "task_type": INGEST, "scope": KB, "scope_id": "kb1", "op": "touch"}
    assert ops.enqueue_keys(**keys, keys=["b", "a", "b"]) == 2
    assert ops.enqueue_keys(**keys, keys=["a", "c"]) == 1  # "a" waits already: only "c"
    [a] = ops.claim(INGEST, KB, "kb1", 1, 60)
    assert a.dedup_key == "a" and a.payload == {} and a.op == "touch" and a.tenant_id == 7
    assert ops.enqueue_keys(**keys, keys=["a"]) == 1  # claimed: queued again, the work may be stale
    assert [op.dedup_key for op in ops.claim(INGEST, KB, "kb1", 5, 60)] == ["b", "c"]  # "a" waits for its claim


def test_delete_by_scope_clears_every_lane_of_the_scope_only(ops):
    _add(ops, "a")
    _add(ops, "b", task_type=REDUCE)
    _add(ops, "c", kb="kb2")
    for scope, scope_id in (("", "kb1"), (KB, "")):
        with pytest.raises(ValueError):
            ops.delete_by_scope(scope, scope_id)
    assert ops.delete_by_scope(KB, "kb1") == 2
    assert ops.counts_by_lane(KB, "kb1") == {}
    assert ops.counts_by_lane(KB, "kb2") == {INGEST: 1}


def test_writes_with_a_conn_join_the_callers_transaction(ops):
    a = _add(ops, "a")
    with ops.pool.connection() as conn:
        ops.enqueue(tenant_id=7, task_type=INGEST, scope=KB, scope_id="kb1", op="ingest", conn=conn)
        ops.move([a.id], REDUCE, conn=conn)
        ops.incr_fail_count(a.id, conn=conn)
        conn.rollback()
    assert ops.counts_by_lane(KB, "kb1") == {INGEST: 1}
    assert ops.peek(INGEST, KB, "kb1")[0].fail_count == 0


# ---- dead letters ------------------------------------------------------------------------------


def test_dead_letter_insert_defaults_validation_and_truncation(dead):
    row = dead.insert(task_type="wiki_map")
    assert row.id > 0 and row.scope == "unknown" and row.scope_id == "" and row.tenant_id == 0
    assert row.payload == {} and row.fail_count == 0 and row.last_error == ""
    with pytest.raises(ValueError):
        dead.insert(task_type="")
    long = dead.insert(task_type="wiki_map", last_error="é" * 9000 + "\x00", payload={"a": "x\x00y"})
    assert len(long.last_error.encode("utf-8")) <= ERROR_LIMIT_BYTES
    assert long.last_error.endswith(TRUNCATED_SUFFIX)
    assert long.payload == {"a": "xy"}
    assert dead.get(long.id, tenant_id=None) == long
    assert dead.count(tenant_id=None) == 2


def test_dead_letter_list_filters_and_pages_newest_first(dead):
    ids = [
        dead.insert(task_type="t1" if i % 2 else "t2", scope=KB, scope_id="kb1" if i < 4 else "kb2").id
        for i in range(6)
    ]
    assert [d.id for d in dead.list(tenant_id=None)] == ids[::-1]
    page1 = dead.list(tenant_id=None, scope=KB, scope_id="kb1", limit=3)
    page2 = dead.list(tenant_id=None, scope=KB, scope_id="kb1", limit=3, cursor=page1[-1].id)
    assert [d.id for d in page1] == ids[3:0:-1]
    assert [d.id for d in page2] == [ids[0]]
    assert dead.list(tenant_id=None, scope=KB, scope_id="kb1", cursor=str(ids[1])) == page2
    assert {d.task_type for d in dead.list(tenant_id=None, task_type="t1")} == {"t1"}
    assert dead.list(tenant_id=None, since=datetime.now(UTC) + timedelta(minutes=1)) == []
    assert len(dead.list(tenant_id=None, since=datetime.now(UTC) - timedelta(minutes=1))) == 6
    assert dead.count(tenant_id=None, scope=KB, scope_id="kb2") == 2
    for bad in ("abc", "1.5", -3, 0):
        with pytest.raises(ValueError):
            dead.list(tenant_id=None, cursor=bad)


def test_dead_letter_list_limit_is_capped(dead):
    with dead.pool.connection() as conn:
        conn.execute(
            "INSERT INTO task_dead_letters (tenant_id, task_type, scope, scope_id, payload, fail_count)"
            " SELECT 1, 't', 'unknown', '', '{}', 1 FROM generate_series(1, 205)"
        )
    assert len(dead.list(tenant_id=None)) == 50
    assert len(dead.list(tenant_id=None, limit=10_000)) == 200
    assert len(dead.list(tenant_id=None, limit=0)) == 1


def test_dead_letter_get_and_delete_are_idempotent(dead):
    row = dead.insert(task_type="t")
    assert dead.delete(row.id, tenant_id=None) is True
    assert dead.delete(row.id, tenant_id=None) is False
    assert dead.get(row.id, tenant_id=None) is None


def test_move_op_to_dead_letters_is_one_transaction(ops, dead):
    op = ops.enqueue(
        tenant_id=7,
        task_type=REDUCE,
        scope=KB,
        scope_id="kb1",
        op="ingest",
        dedup_key="doc-1",
        payload={"knowledge_id": "doc-1"},
    )
    ops.incr_fail_count(op.id)
    op = ops.peek(REDUCE, KB, "kb1")[0]

    with dead.pool.connection() as conn:
        dead.move_op_to_dead_letters(op, task_type=INGEST, error="boom", conn=conn)
        conn.rollback()
    assert ops.pending_count(REDUCE, KB, "kb1") == 1 and dead.count(tenant_id=None) == 0

    letter = dead.move_op_to_dead_letters(op, task_type=INGEST, error="ValueError: boom")
    assert ops.pending_count(REDUCE, KB, "kb1") == 0
    assert letter.task_type == INGEST and letter.related_id == "doc-1"
    assert (letter.scope, letter.scope_id, letter.tenant_id) == (KB, "kb1", 7)
    assert letter.fail_count == 1 and letter.last_error == "ValueError: boom"
    assert PendingOp.model_validate(letter.payload) == op
    assert dead.count(tenant_id=None, scope=KB, scope_id="kb1") == 1
