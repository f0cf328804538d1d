"""A worker process frozen (SIGSTOP) inside a reduce batch's write transaction: PostgreSQL ends its
session, the other worker takes its claims and finishes the KB while it is still frozen, and once
it resumes (SIGCONT) it fails that batch cleanly and goes on.

Seen in a fault run: nothing ended the frozen transaction, the other worker's reaper waited behind
its locks (its heartbeat went 45-47 s stale), its batches waited on the fence, and on resume the
frozen batch and the reaper deadlocked.
"""

from __future__ import annotations

import signal
import uuid

import psutil
import psycopg
import pytest

from tests.e2e.conftest import wait_until
from tests.support.pipeline import submit_all

pytestmark = pytest.mark.e2e

#: Seconds PostgreSQL lets a worker's session sit idle in a transaction here (15 by default): short,
#: yet far above any pause of a healthy transaction on a loaded machine.
IDLE_S = 5

#: A reduce batch inside its write transaction: it holds its fence row (``LaneFenceRepository.check``)
#: and waits for the KB's link-graph lock, which the test holds.
_BATCH_IN_WRITE = """
SELECT a.pid, a.client_port FROM pg_stat_activity a
WHERE a.datname = current_database()
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND NOT l.granted)
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
              AND l.relation = 'task_lane_fences'::regclass)
"""


_WORKER_OF_PID = "SELECT worker_id FROM task_workers WHERE pid = %s"


def _process_with_port(root: psutil.Process, port: int) -> psutil.Process | None:
    """The worker process under ``root`` whose TCP connection has local ``port``."""
    for proc in root.children(recursive=True):
        try:
            if any(c.laddr and c.laddr.port == port for c in proc.net_connections(kind="tcp")):
                return proc
        except psutil.NoSuchProcess:
            continue
    return None


def test_a_worker_frozen_in_a_write_transaction_neither_stalls_the_kb_nor_breaks_on_resume(
    deps, pipeline_env, database_url, tmp_path, monkeypatch
):
    from kbwiki.ingest import lane_rows
    from kbwiki.workers import start_workers
    from tests.e2e.test_recovery import _documents, _kill_tree

    monkeypatch.setenv("KBWIKI_STALE_CLAIM_S", "3600")  # only heartbeats free the frozen worker's claims
    monkeypatch.setenv("KBWIKI_WORKER_TTL_S", "4")
    monkeypatch.setenv("KBWIKI_HEARTBEAT_INTERVAL_S", "1")
    monkeypatch.setenv("KBWIKI_ACTIVE_LOCK_TTL_S", "3")
    monkeypatch.setenv("KBWIKI_DB_IDLE_IN_TRANSACTION_TIMEOUT_S", str(IDLE_S))
    kb = deps.kbs.get_or_create(1, f"frozen-{uuid.uuid4().hex[:6]}")
    docs = _documents(deps.extractor, 8)

    def query(text: str, params=()) -> list[dict]:
        with deps.pool.connection() as conn:
            return conn.execute(text, params).fetchall()

    def complete() -> bool:
        return deps.docs.count_by_status(kb.id).get("done", 0) == len(docs) and lane_rows(deps, kb.id) == 0

    workers = None
    frozen: psutil.Process | None = None
    # the test's own session (no limits): holding the link-graph lock stops the first batch inside
    # its write transaction, after it locked its fence row
    with psycopg.connect(database_url) as graph:
        graph.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"wiki-link-graph:{kb.id}",))
        try:
            submit_all(deps, kb, docs)
            workers = start_workers(2, 2, tmp_path / "workers.log")
            batch = wait_until(lambda: query(_BATCH_IN_WRITE), 120, "a reduce batch in its write transaction")[0]
            frozen = _process_with_port(psutil.Process(workers.pid), batch["client_port"])
            assert frozen is not None, "no worker process holds the batch's connection"
            frozen.send_signal(signal.SIGSTOP)
            graph.rollback()  # the frozen batch now gets the lock and sits idle in its transaction
            frozen_ids = [r["worker_id"] for r in query(_WORKER_OF_PID, (frozen.pid,))]

            wait_until(complete, 120, "the other worker finishing the KB while the frozen one is stopped")
            assert not query("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (batch["pid"],))  # PostgreSQL ended it

            frozen.send_signal(signal.SIGCONT)
            wait_until(
                lambda: query(
                    "SELECT 1 FROM task_workers WHERE worker_id = ANY(%s) AND beat_at > now() - interval '2 seconds'",
                    (frozen_ids,),
                ),
                60,
                "the resumed worker beating again",
            )
            # its messages retried (the batch it was in failed) find nothing left to do
            wait_until(lambda: not query("SELECT 1 FROM task_pending_ops WHERE scope_id = %s", (kb.id,)), 60, "idle")
            assert complete()
            assert deps.dead_letters.count(tenant_id=1, scope_id=kb.id) == 0
        finally:
            if frozen is not None and frozen.is_running():
                frozen.send_signal(signal.SIGCONT)
            if workers is not None and workers.poll() is None:
                _kill_tree(workers)
    log = (tmp_path / "workers.log").read_text()
    assert "deadlock detected" not in log
    # the resumed batch failed on its ended session as on a lost connection (its message is retried)
    assert '"error_type": "DatabaseUnreachable"' in log
