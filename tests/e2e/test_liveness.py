"""Workers announce themselves; what a silent worker held is taken back in seconds, and the
commands say at once when no worker is alive.

Seen in a fault run: a killed worker's claims filled every map slot of its KB for the stale-claim
time (300 s) and its batch lock blocked reduce for about 60 s while another worker was idle; and
``kbwiki ingest --wait`` waited its whole hour before asking whether a worker was running.
"""

from __future__ import annotations

import dataclasses
import uuid

import psutil
import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import wait_until
from tests.support.pipeline import submit_all
from wiki.lanes import INGEST, REDUCE, SCOPE_KB

pytestmark = pytest.mark.e2e

#: Longest a scripted model answer waits at the test's gate (seconds); the gate opens long before.
GATE_S = 120

TTL_S = 3.0  # long enough that a loaded machine gets from one beat to the next reap within it


def _ops(deps, kb, n: int):
    return [
        deps.ops.enqueue(
            tenant_id=kb.tenant_id, task_type=INGEST, scope=SCOPE_KB, scope_id=kb.id, op="ingest", dedup_key=f"doc-{i}"
        )
        for i in range(n)
    ]


def test_a_silent_workers_claims_and_batch_lock_are_taken_back(deps, actors_broker, clean_db):
    from repos.coordination import active_key
    from stages.liveness import reap

    fast = dataclasses.replace(deps, settings=deps.settings.model_copy(update={"worker_ttl_s": TTL_S}))
    kb = deps.kbs.get_or_create(1, f"live-{uuid.uuid4().hex[:6]}")
    _ops(deps, kb, 4)
    deps.workers.beat("dead-worker")
    deps.workers.beat("live-worker")
    dead = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 2, 3600, owner="dead-worker")
    live = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 2, 3600, owner="live-worker")
    deps.fences.take(REDUCE, SCOPE_KB, kb.id, holder="dead-worker", lock_token="dead-token")
    lock_key = active_key(deps.settings.key_prefix, kb.id)
    deps.redis.set(lock_key, "dead-token", px=3_600_000)  # a lock whose TTL would keep the KB for an hour

    def reaped() -> int:
        deps.workers.beat("live-worker")  # the live worker keeps beating; the dead one fell silent
        return reap(fast)

    assert reaped() == 0  # within the TTL nothing is taken back
    assert wait_until(reaped, 10, "the silent worker's claims taken back") == len(dead)
    assert deps.redis.get(lock_key) is None
    by_id = {op.id: op for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id)}
    assert all(by_id[op.id].claimed_at is None for op in dead)
    assert all(by_id[op.id].claimed_by == "live-worker" for op in live)
    assert fast.workers.alive_count(TTL_S) == 1


def test_a_lock_held_by_another_batch_is_never_taken_by_the_reaper(deps, actors_broker, clean_db):
    from repos.coordination import active_key
    from stages.liveness import reap

    fast = dataclasses.replace(deps, settings=deps.settings.model_copy(update={"worker_ttl_s": TTL_S}))
    kb = deps.kbs.get_or_create(1, f"live-{uuid.uuid4().hex[:6]}")
    deps.workers.beat("dead-worker")
    deps.fences.take(REDUCE, SCOPE_KB, kb.id, holder="dead-worker", lock_token="dead-token")
    lock_key = active_key(deps.settings.key_prefix, kb.id)
    deps.redis.set(lock_key, "a-live-batch", px=60_000)  # the dead worker's lock expired; another took it
    wait_until(lambda: deps.workers.alive_count(TTL_S) == 0, 10, "the worker silent past the TTL")
    reap(fast)
    assert deps.redis.get(lock_key) == b"a-live-batch"


def test_after_a_flush_every_claim_is_given_back_at_once(deps, actors_broker, clean_db):
    # Seen in the chaos bench: after a FLUSHALL the claims whose map messages were flushed held
    # the KB's map slots for the stale-claim time (5 minutes) while their workers kept beating.
    from stages.liveness import after_redis_loss, redis_marker_key

    kb = deps.kbs.get_or_create(1, f"flush-{uuid.uuid4().hex[:6]}")
    _ops(deps, kb, 3)
    marker = redis_marker_key(deps.settings.key_prefix)
    after_redis_loss(deps)  # whatever the state before: Redis now holds the marker
    assert after_redis_loss(deps) is None  # Redis kept its data: claims stay
    claimed = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 3, 3600, owner="live-worker")
    assert after_redis_loss(deps) is None and deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, 3600) == 3
    deps.redis.delete(marker)  # what a FLUSHALL does to it
    assert after_redis_loss(deps) == len(claimed)
    assert deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, 3600) == 0
    assert after_redis_loss(deps) is None  # once per loss


@pytest.fixture()
def run(clean_db, deps):
    """Invoke ``kbwiki`` (DATABASE_URL and REDIS_URL from ``pipeline_env``: no local servers)."""
    runner = CliRunner()
    return lambda *args: runner.invoke(main, list(args), catch_exceptions=False)


def test_ingest_and_status_say_at_once_that_no_worker_is_alive(run, deps, tmp_path):
    name = f"nw-{uuid.uuid4().hex[:6]}"
    (tmp_path / "a.md").write_text("# Widgets\n\nThe widget library draws widgets on screens for people.\n")

    ingested = run("ingest", str(tmp_path), "--kb", name)
    assert ingested.exit_code == 0, ingested.output
    assert "no worker is alive" in ingested.output
    # again when this call queues nothing new but the KB's earlier work still waits (a --wait
    # would otherwise wait in silence)
    again = run("ingest", str(tmp_path), "--kb", name)
    assert "unchanged=1" in again.output and "no worker is alive" in again.output, again.output
    assert f"new knowledge base '{name}'" in ingested.output and "new knowledge base" not in again.output
    status = run("status", "--kb", name)
    assert "no worker is alive" in status.output and "alive=0" in status.output

    deps.workers.beat("a-worker")
    status = run("status", "--kb", name)
    assert "no worker is alive" not in status.output and "alive=1" in status.output


def test_a_killed_workers_claims_are_taken_back_by_the_other_worker(deps, pipeline_env, tmp_path, monkeypatch):
    """A worker process is killed with SIGKILL while it holds claims; another worker process then
    started takes them back (claims only go stale after an hour here, so only the dead worker's
    heartbeat or its messages can free them) and finishes every document.

    The workers extract with the scripted model, whose answers wait behind a gate the test opens:
    the victim is killed in the state the test needs (up and holding claims, none finished), not in
    a window of time that a busy machine can miss. (With both up before the kill, the other one
    adopts the claims of the victim's queued messages at once, so "the victim still holds claims
    when killed" would again be a race.)"""
    from kbwiki.ingest import lane_rows
    from kbwiki.workers import start_workers
    from tests.e2e.test_recovery import _documents, _kill_tree
    from tests.support.llm_deps import scripted_llm_env
    from tests.support.llm_server import AnswerGate, ScriptedLLM

    gate = AnswerGate(timeout_s=GATE_S)
    monkeypatch.setenv("KBWIKI_STALE_CLAIM_S", "3600")
    monkeypatch.setenv("KBWIKI_WORKER_TTL_S", "4")
    monkeypatch.setenv("KBWIKI_HEARTBEAT_INTERVAL_S", "1")
    kb = deps.kbs.get_or_create(1, f"kill-{uuid.uuid4().hex[:6]}")
    docs = _documents(deps.extractor, 12)
    submit_all(deps, kb, docs)

    def query(text: str, params) -> list[dict]:
        with deps.pool.connection() as conn:
            return conn.execute(text, params).fetchall()

    def claims_of(ids: list[str]) -> int:
        return query("SELECT count(*) AS n FROM task_pending_ops WHERE claimed_by = ANY(%s)", (ids,))[0]["n"]

    def announced(proc) -> list[str]:
        pids = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
        return [r["worker_id"] for r in query("SELECT worker_id FROM task_workers WHERE pid = ANY(%s)", (pids,))]

    procs = []
    with ScriptedLLM(gate) as server:
        scripted_llm_env(monkeypatch, server.url, KBWIKI_LLM_TIMEOUT_S=str(GATE_S + 30))
        try:
            victim = start_workers(1, 2, tmp_path / "victim.log")
            procs.append(victim)
            ids = wait_until(lambda: announced(victim), 60, "the victim up")
            held = wait_until(lambda: claims_of(ids), 60, "the victim holding claims (its calls wait at the gate)")
            _kill_tree(victim)
            assert claims_of(ids) >= held > 0  # nothing finished (the gate is shut) and nobody else runs
            survivor = start_workers(1, 2, tmp_path / "survivor.log")
            procs.append(survivor)
            wait_until(lambda: announced(survivor), 60, "the survivor up")
            wait_until(lambda: claims_of(ids) == 0, 30, "the dead worker's claims taken back")
            gate.open()
            wait_until(
                lambda: deps.docs.count_by_status(kb.id).get("done", 0) == len(docs) and lane_rows(deps, kb.id) == 0,
                180,
                "every document done by the surviving worker",
            )
        finally:
            gate.open()
            for proc in procs:
                if proc.poll() is None:
                    _kill_tree(proc)
    # The claims came back one of two ways, both the survivor's: its reaper took back the claims
    # of the map the victim was running (logged "workers.reaped"), or it consumed a wiki_map message
    # the victim's pump had sent and adopted that claim (stages.map). Which one wins is timing.
    survivor_log = (tmp_path / "survivor.log").read_text()
    assert '"workers.reaped"' in survivor_log or '"document.mapped"' in survivor_log


def test_a_lock_taken_just_before_a_kill_and_before_its_fence_is_taken_back(deps, actors_broker, clean_db):
    # A fault run: a worker killed -9 after taking a KB's batch lock and before its fence recorded
    # the lock's token; the reaper could not see the lock and the KB waited its TTL (15 s).
    from repos.coordination import ActiveBatchLock, active_index_key, active_key
    from stages.liveness import reap

    fast = dataclasses.replace(deps, settings=deps.settings.model_copy(update={"worker_ttl_s": TTL_S}))
    prefix = deps.settings.key_prefix
    dead_kb = deps.kbs.get_or_create(1, f"live-{uuid.uuid4().hex[:6]}")
    live_kb = deps.kbs.get_or_create(1, f"live-{uuid.uuid4().hex[:6]}")
    deps.workers.beat("dead-worker")
    deps.workers.beat("live-worker")
    index = active_index_key(prefix)
    locks = {
        kb.id: ActiveBatchLock(deps.redis, active_key(prefix, kb.id), 3600, holder=holder, index_key=index)
        for kb, holder in ((dead_kb, "dead-worker"), (live_kb, "live-worker"))
    }
    assert all(lock.acquire() for lock in locks.values())
    locks[dead_kb.id]._stop.set()  # killed: nothing renews it, no fence names it

    def freed() -> bool:
        deps.workers.beat("live-worker")
        reap(fast)
        return deps.redis.get(active_key(prefix, dead_kb.id)) is None

    try:
        wait_until(freed, 10, "the dead worker's lock taken back")
        assert deps.redis.get(active_key(prefix, live_kb.id)) == locks[live_kb.id].token.encode()
        after = ActiveBatchLock(deps.redis, active_key(prefix, dead_kb.id), 15)
        assert after.acquire()  # the KB's next batch runs now, not after the dead lock's TTL
        after.release()
        assert deps.redis.smembers(index) == {active_key(prefix, live_kb.id).encode()}
    finally:
        for lock in locks.values():
            lock.release()
