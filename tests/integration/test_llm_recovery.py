"""A model endpoint that is slow, throttles, refuses for a while or goes away, through the scripted
server (real HTTP, the real SDK) and the test database: every try ends within its time whatever
pace the server sends at, status says what the KB's model calls wait for, a KB paused by an
endpoint that refused every request resumes by itself once a probe succeeds, and documents
dead-lettered for an outage are requeued by the system when the endpoint answers again."""

from __future__ import annotations

import threading
import time

import pytest

from kbwiki.status import kb_status, status_lines
from stages import llm_recovery
from stages.ingest import pump_ingest_lane
from stages.map import map_document, map_step
from tests.e2e.conftest import wait_until
from tests.integration.test_llm_map import DOCS, _ops, new_kb, submit
from tests.support.llm_deps import scripted_llm_deps
from tests.support.llm_server import error, realistic, trickle
from tests.support.pipeline import settle
from wiki.errors import error_headline
from wiki.lanes import INGEST, OP_INGEST, SCOPE_KB

TIMERS = {"timers.md": DOCS["timers.md"]}


def _map_claimed(deps, kb) -> list[str]:
    """Map every op of the KB's ingest lane that can be claimed now; their outcomes."""
    claimed = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    return [map_document(1, kb.id, op.dedup_key, op.id, deps) for op in claimed]


@pytest.mark.timing
def test_a_trickling_server_fails_the_try_in_bounded_time_with_the_cause_in_status(settings, clean_db, server):  # noqa: F811
    """One byte every 0.05 s never trips a 1 s read timeout: without a total deadline the try took
    the whole answer's trickle (minutes for a real one) and status said only "pending"."""
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_timeout_s=1.0, llm_document_budget_s=2.0)
    server.responder = lambda request: trickle(0.05, realistic(request))
    kb = new_kb(deps)
    ids = submit(deps, kb, TIMERS)
    started = time.monotonic()
    assert _map_claimed(deps, kb) == ["retry"]  # counted as a failure, tried again later
    # Two tries of 1 s at most within the 2 s budget; the clock only guards against a try that
    # ignores its deadline (the whole answer takes over 80 s), with room for a loaded machine.
    assert 1 <= server.calls <= 2 and time.monotonic() - started < 15
    [(_, op)] = _ops(deps, kb, ids)
    assert op.fail_count == 1
    report = kb_status(deps, kb)
    assert report["llm_notice"]["text"].startswith("slow: no complete answer in 1 s (")
    [line] = [line for line in status_lines(report) if line.startswith("model: ")]
    assert line.startswith("model: slow: no complete answer in 1 s (")


def test_during_a_429_back_off_status_says_how_long_it_waits(settings, clean_db, server):  # noqa: F811
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_retry_max_wait_s=30.0)
    released = threading.Event()

    def respond(request):
        if server.calls == 1:
            return error(429, "Rate limit reached", {"Retry-After": "3"})
        released.set()
        return realistic(request)

    server.responder = respond
    kb = new_kb(deps)
    submit(deps, kb, TIMERS)
    outcome: list[str] = []
    worker = threading.Thread(target=lambda: outcome.extend(_map_claimed(deps, kb)))
    worker.start()
    notice = wait_until(lambda: kb_status(deps, kb)["llm_notice"], 10, "the back-off's notice")
    seen_before_retry = not released.is_set()
    worker.join(30)
    assert outcome == ["mapped"] and server.calls == 2
    assert seen_before_retry and notice["text"] == "waiting 3 s for rate limit (HTTP 429)"
    lines = status_lines({**kb_status(deps, kb), "llm_notice": notice})
    assert any(line.startswith("model: waiting 3 s for rate limit (HTTP 429), at ") for line in lines)


def test_a_kb_paused_by_a_streaming_only_server_resumes_by_itself_once_a_probe_succeeds(settings, clean_db, server):  # noqa: F811
    """A server that refuses non-streaming requests refuses every output mode: the KB pauses, as
    before. Once the server answers plainly nothing changed in the configuration, so the KB waited
    for `kbwiki resume`; now a document goes through as a probe after the pause period (doubling)
    and its success resumes the KB."""
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_pause_s=0.2)
    streaming_only = {"on": True}

    def respond(request):
        if streaming_only["on"] and not request.get("stream"):
            return error(400, "This endpoint only supports streaming: set 'stream': true")
        return realistic(request)

    server.responder = respond
    kb = new_kb(deps)
    ids = submit(deps, kb)
    assert _map_claimed(deps, kb) == ["paused", "paused"]
    row = deps.llm_errors.get(kb.id)
    assert row.kind == "config" and row.status == 400 and server.calls == 3  # one refusal per output mode
    [line] = [line for line in status_lines(kb_status(deps, kb)) if line.startswith("model paused")]
    assert "a probe call succeeds" in line and f"`kbwiki resume --kb {kb.name}`" in line

    streaming_only["on"] = False  # the endpoint is fixed; the configuration is not changed
    outcomes: list[str] = []
    wait_until(
        lambda: outcomes.extend(_map_claimed(deps, kb)) or outcomes.count("mapped") == len(ids),
        20,
        "both documents mapped after a probe",
    )
    assert deps.llm_errors.get(kb.id) is None
    assert not any(line.startswith("model paused") for line in status_lines(kb_status(deps, kb)))


def _map_lane(deps, kb, step=map_document) -> list[str]:
    """Pump the KB's ingest lane and run ``step`` (``map_document`` or ``map_step``, which also
    requeues after an outage) on every op it claimed; their outcomes."""
    pump_ingest_lane(1, kb.id, deps)
    claimed = [op for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100) if op.claimed_at and op.op == OP_INGEST]
    return [step(1, kb.id, op.dedup_key, op.id, deps) for op in claimed]


def _doc(name: str) -> dict:
    return {f"{name}.md": (f"Timers {name}", DOCS["timers.md"][1] + f" Part {name}.")}


def test_documents_dead_lettered_in_an_outage_are_requeued_by_the_system_bounded_and_once(
    settings,
    clean_db,
    server,  # noqa: F811
    monkeypatch,
):
    """An endpoint answering 503 dead-letters documents (no retry left); when it answers again the
    next mapped document sends them back, at most ``REQUEUE_MAX`` a pass (1 here), and a document
    that fails again in the same outage is not sent a second time: it stays for a manual requeue."""
    monkeypatch.setattr(llm_recovery, "REQUEUE_MAX", 1)
    deps = scripted_llm_deps(settings, clean_db, server.url, wiki_max_fail_retries=0)
    down = lambda request: error(503, "upstream connect error")  # noqa: E731
    server.responder = down
    kb = new_kb(deps)
    first = submit(deps, kb, {**_doc("a"), **_doc("b")})
    assert _map_lane(deps, kb) == ["dead", "dead"]
    letters = deps.dead_letters.list(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id)
    assert [error_headline(d.last_error) for d in letters] == [
        "LLMUnavailable: HTTP 503 after 2 tries: upstream connect error"
    ] * 2

    server.responder = realistic  # the endpoint is back: the next mapped document requeues one letter
    submit(deps, kb, _doc("c"))
    assert _map_lane(deps, kb, map_step) == ["mapped"]
    pending = {op.dedup_key for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100)}
    assert len(pending) == 1 and deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 1
    [requeued] = pending
    assert deps.docs.get(requeued).status == "pending"

    server.responder = down  # it fails again within the same outage: dead-lettered again
    assert _map_lane(deps, kb) == ["dead"]
    server.responder = realistic
    submit(deps, kb, _doc("d"))
    assert _map_lane(deps, kb, map_step) == ["mapped"]  # sends the other letter back, not this one
    [other] = {op.dedup_key for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100)}
    assert other != requeued and {other, requeued} == set(first.values())
    assert _map_lane(deps, kb, map_step) == ["mapped"]
    [left] = deps.dead_letters.list(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id)
    assert left.related_id == requeued  # once per outage: a manual requeue is its way back
    settle(deps, kb)
    assert deps.docs.count_by_status(kb.id) == {"done": 3, "failed": 1}
