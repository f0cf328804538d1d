"""Redis flushed and every worker killed (``kill -9``) mid-run: restarted workers finish all the work.

Real worker processes (``dramatiq actors:setup_broker``) run with the e2e environment, where claims go stale
after ``KBWIKI_STALE_CLAIM_S`` = 10 s and the sweeper runs every ``KBWIKI_SWEEP_INTERVAL_S`` = 2 s.
The flush deletes every key of this deployment (its Dramatiq namespace and kbwiki key prefix):
for kbwiki that is what FLUSHALL does, without touching other tests or a demo on the same server.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

import psutil
import pytest
import redis

from tests.e2e.conftest import wait_until
from tests.support.corpus import shipped_docs
from tests.support.pipeline import submit_all
from wiki.extract import ExtractionError

pytestmark = pytest.mark.e2e

DOCS = 30
MIN_CHARS = 800  # long enough to take a visible share of the run (33 shipped documents are)
ALL_CLAIMS_S = 24 * 3600  # a "stale after" so large that every claim counts
#: Documents the scripted model's gate lets through at each step of the run (a sixth of them).
STEP = DOCS // 6
#: Longest an answer waits at the gate (seconds); the test opens it long before.
GATE_S = 120
#: Seconds the set of claimed rows must stay the same before the kill: longer than it takes a
#: worker's heartbeat (2 s) to give back a claim whose message a flush took (two checks 3 s apart,
#: ``stages.message_claims``) and the pump to claim that document again, so the kill lands on claims
#: that stay, not in between (a run under load once killed in that gap and found no claim held).
SETTLE_S = 8


def _documents(extractor, n: int):
    """The first ``n`` shipped documents the extractor can make pages of."""
    found = []
    for doc in shipped_docs():
        if len(doc.text) < MIN_CHARS:
            continue
        try:
            extractor.extract(doc.title, doc.text)
        except ExtractionError:
            continue
        found.append(doc)
        if len(found) == n:
            return found
    pytest.fail(f"fewer than {n} usable shipped documents")


def _start(log_path: Path) -> subprocess.Popen:
    from kbwiki.workers import start_workers

    return start_workers(2, 4, log_path)  # inherits the e2e environment of pipeline_env


def _kill_tree(proc: subprocess.Popen) -> int:
    """SIGKILL the worker command and every process under it at once; returns how many were killed."""
    parent = psutil.Process(proc.pid)
    procs = [parent, *parent.children(recursive=True)]
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=10)
    assert not alive, alive
    proc.wait(timeout=10)
    return len(procs)


def _flush(client: redis.Redis, prefix: str) -> int:
    """Delete every key of the deployment (namespace ``<prefix>-dramatiq`` and key prefix ``<prefix>``)."""
    keys = list(client.scan_iter(f"{prefix}*", count=1000))
    if keys:
        client.delete(*keys)
    return len(keys)


def _has_keys(client: redis.Redis, prefix: str) -> bool:
    return next(client.scan_iter(f"{prefix}*", count=1000), None) is not None


def test_flush_and_kill_mid_run_then_restart_finishes_everything(deps, pipeline_env, tmp_path, monkeypatch):
    """The workers extract with the scripted model behind a gate (``AnswerGate``): the test lets
    answers through a few at a time, so every step meets the state it needs (documents done,
    maps waiting with their claims held) however fast or loaded the machine is. Claims do not go
    stale here (an hour): a map waiting at the gate keeps its claim, and after the kill only the
    dead workers' heartbeats free theirs."""
    from kbwiki.ingest import lane_rows
    from tests.support.llm_deps import scripted_llm_env
    from tests.support.llm_server import AnswerGate, ScriptedLLM
    from wiki.lanes import SCOPE_KB, WIKI_LANES

    prefix = pipeline_env["KBWIKI_KEY_PREFIX"]
    assert pipeline_env["KBWIKI_REDIS_NAMESPACE"].startswith(prefix)
    client = redis.Redis.from_url(pipeline_env["REDIS_URL"])
    kb = deps.kbs.get_or_create(1, f"recovery-{uuid.uuid4().hex[:6]}")

    def claims() -> int:
        return sum(deps.ops.claimed_count(lane, SCOPE_KB, kb.id, ALL_CLAIMS_S) for lane in WIKI_LANES)

    def done() -> int:
        return deps.docs.count_by_status(kb.id).get("done", 0)

    seen: dict = {"ids": None, "since": 0.0}

    def claims_settled() -> bool:
        """Rows claimed, the same ones for ``SETTLE_S`` seconds, and Redis holding state again."""
        with deps.pool.connection() as conn:
            ids = {
                r["id"]
                for r in conn.execute(
                    "SELECT id FROM task_pending_ops WHERE scope_id = %s AND claimed_at IS NOT NULL", (kb.id,)
                )
            }
        now = time.monotonic()
        if ids != seen["ids"]:
            seen.update(ids=ids, since=now)
            return False
        return bool(ids) and now - seen["since"] >= SETTLE_S and _has_keys(client, prefix)

    ids = submit_all(deps, kb, _documents(deps.extractor, DOCS))

    gate = AnswerGate(timeout_s=GATE_S)
    with ScriptedLLM(gate) as server:
        scripted_llm_env(monkeypatch, server.url, KBWIKI_LLM_TIMEOUT_S=str(GATE_S + 30))
        monkeypatch.setenv("KBWIKI_STALE_CLAIM_S", "3600")
        # Two maps in flight: the ones waiting at the gate hold two of the eight worker threads, so
        # reduce always finds one (with 16, waiting maps took every thread of a process and the
        # reduce message it had prefetched waited behind them).
        monkeypatch.setenv("KBWIKI_INGEST_LLM_MAP_PARALLEL", "2")
        gate.allow(STEP)
        workers = _start(tmp_path / "workers-1.log")
        try:
            # 1. Redis flushed under running workers, mid-run: they recover by themselves (sweeper).
            wait_until(lambda: done() >= 1 and claims() > 0, 60, "a run with work done and work claimed")
            first_flush = _flush(client, prefix)
            after_flush = done()
            gate.allow(STEP)
            wait_until(lambda: done() > after_flush, 60, "progress after a flush under running workers")
            # 2. Every worker killed mid-run, Redis flushed again, workers restarted. Redis holds keys
            # again only once a worker has talked to it since the flush (a fetch, an ack or a
            # trigger): kill after that, so the second flush takes state away rather than finding none.
            wait_until(claims_settled, 60, "work claimed (the same rows for a while) and Redis state rebuilt")
            killed = _kill_tree(workers)
            second_flush = _flush(client, prefix)
        finally:
            if workers.poll() is None:
                _kill_tree(workers)
        assert killed >= 3  # the dramatiq command, its two worker processes (and its fork process)
        assert first_flush > 0 and second_flush > 0
        assert not list(client.scan_iter(f"{prefix}*"))
        written_before = done()
        assert written_before <= len(gate.passed) < DOCS and claims() > 0 and lane_rows(deps, kb.id) > 0

        gate.open()
        workers = _start(tmp_path / "workers-2.log")
        try:
            wait_until(
                lambda: done() == DOCS and lane_rows(deps, kb.id) == 0,
                120,
                "every document written and every lane empty after the restart",
            )
        finally:
            _kill_tree(workers)

    assert deps.docs.count_by_status(kb.id) == {"done": DOCS}
    for kid in ids:
        pages = deps.pages.lite_by_slugs(kb.id, deps.pages.slugs_by_source(kb.id, kid))
        assert "summary" in {p.page_type for p in pages.values()}, kid
    assert deps.pages.counts_by_type(kb.id)["summary"] == DOCS
    assert claims() == 0
    assert deps.dead_letters.count(tenant_id=None, scope=SCOPE_KB, scope_id=kb.id) == 0
