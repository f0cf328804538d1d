"""Redis away under live worker processes: claims whose message the outage lost come back within
seconds of its return, while their worker lives (``stages.message_claims``).

Seen in a fault run: Redis stopped for 180 s; once it was back, claims held by a live worker for map
messages that never ran filled the KB's map slots and the map stage stalled until the stale-claim
time. Here the workers reach Redis through a TCP proxy the test switches off and on, claims go stale
only after an hour, and the scripted model's gate holds two maps at the state the test needs: their
answers come while Redis is away, so each map moves its document on (PostgreSQL answers) and its
pump claims the next document, but cannot send that document's map message. Nothing but the claim's
message being gone can free those claims (their worker beats on).
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import wait_until
from tests.support.pipeline import submit_all
from tests.support.tcp_proxy import TcpProxy
from wiki.lanes import INGEST, REDUCE, SCOPE_KB

pytestmark = pytest.mark.e2e

DOCS = 8
SLOTS = 2
#: Longest a scripted model answer waits at the test's gate (seconds); the gate opens long before.
GATE_S = 120


@pytest.fixture()
def redis_proxy(pipeline_env):
    from redis.connection import parse_url

    url = parse_url(pipeline_env["REDIS_URL"])
    p = TcpProxy((url.get("host", "127.0.0.1"), int(url.get("port", 6379))))
    p.up()
    yield p
    p.down()


def test_claims_whose_map_messages_an_outage_lost_come_back_while_their_worker_lives(
    deps, pipeline_env, redis_proxy, tmp_path, monkeypatch
):
    from kbwiki.ingest import lane_rows
    from stages.liveness import redis_marker_key
    from tests.e2e.test_recovery import _documents, _kill_tree
    from tests.support.llm_deps import scripted_llm_env
    from tests.support.llm_server import AnswerGate, ScriptedLLM

    # Redis keeps its data through this outage: its marker is there (else the first beat after the
    # outage would give every claim back as after a flush, stages.liveness.after_redis_loss)
    deps.redis.set(redis_marker_key(deps.settings.key_prefix), "1")
    kb = deps.kbs.get_or_create(1, f"lost-{uuid.uuid4().hex[:6]}")
    submit_all(deps, kb, _documents(deps.extractor, DOCS))

    def ingest_claims() -> int:
        return deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, 3600)

    def done() -> int:
        return deps.docs.count_by_status(kb.id).get("done", 0)

    gate = AnswerGate(timeout_s=GATE_S)
    proc = None
    with ScriptedLLM(gate) as server:
        scripted_llm_env(monkeypatch, server.url, KBWIKI_LLM_TIMEOUT_S=str(GATE_S + 30))
        monkeypatch.setenv("KBWIKI_STALE_CLAIM_S", "3600")
        monkeypatch.setenv("KBWIKI_INGEST_LLM_MAP_PARALLEL", str(SLOTS))
        monkeypatch.setenv("KBWIKI_HEARTBEAT_INTERVAL_S", "1")
        monkeypatch.setenv("REDIS_URL", pipeline_env["REDIS_URL"].replace(":6379", f":{redis_proxy.port}", 1))
        try:
            from kbwiki.workers import start_workers

            proc = start_workers(1, 4, tmp_path / "workers.log")
            wait_until(lambda: server.in_flight == SLOTS, 60, "two maps waiting at the gate, their claims held")
            assert ingest_claims() == SLOTS
            redis_proxy.down()
            gate.allow(SLOTS)  # the two maps finish while Redis is away
            wait_until(
                lambda: deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id) == SLOTS and ingest_claims() == SLOTS,
                60,
                "both maps done and their pumps holding the next two documents, whose messages were never sent",
            )
            assert done() == 0
            redis_proxy.up()
            gate.open()
            wait_until(
                lambda: done() == DOCS and lane_rows(deps, kb.id) == 0,
                120,
                "every document written long before the claims go stale (an hour)",
            )
        finally:
            gate.open()
            if redis_proxy._listener is None:
                redis_proxy.up()
            if proc is not None and proc.poll() is None:
                _kill_tree(proc)
    log = (tmp_path / "workers.log").read_text()
    assert '"claims.orphaned_released"' in log


def test_delayed_messages_a_consumer_dropped_on_a_connection_error_run_after_the_outage(pipeline_env, redis_proxy):
    """Dramatiq's delay-queue consumer empties its in-memory delay queue on a connection error and
    the messages stay in the ack set of a worker that lives on (``middleware.delayed_requeue``):
    debounced triggers, backoff triggers and retries, lost until a restart. Here they run."""
    import dramatiq

    from actors.broker import build_broker
    from wiki.settings import get_settings

    url = pipeline_env["REDIS_URL"].replace(":6379", f":{redis_proxy.port}", 1)
    namespace = f"{pipeline_env['KBWIKI_REDIS_NAMESPACE']}-dq-{uuid.uuid4().hex[:6]}"
    settings = get_settings().model_copy(update={"redis_url": url, "redis_namespace": namespace})
    broker = build_broker(settings)
    ran: set[int] = set()
    probe = dramatiq.Actor(
        ran.add, broker=broker, actor_name="delayed_probe", queue_name="probe", priority=0, options={"max_retries": 0}
    )
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=100)
    worker.start()
    try:
        for i in range(6):
            probe.send_with_options(args=(i,), delay=2000)
        acks = f"{namespace}:__acks__.{broker.broker_id}.probe.DQ"
        wait_until(lambda: broker.client.scard(acks) == 6, 30, "the delayed messages fetched by the worker")
        redis_proxy.down()
        wait_until(lambda: not any(c.delay_queue.qsize() for c in worker.consumers.values()), 30, "the consumer reset")
        redis_proxy.up()
        wait_until(lambda: ran == set(range(6)), 60, "every delayed message run after the outage")
    finally:
        if redis_proxy._listener is None:
            redis_proxy.up()
        worker.stop(timeout=10_000)
        for key in broker.client.scan_iter(f"{namespace}*"):
            broker.client.delete(key)
