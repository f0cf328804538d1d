"""Real worker processes (`kbwiki worker`, two of them) under the model's shared rate limit, against
a scripted server that takes three requests at once and answers 429 to any more: every document
of two KBs becomes pages with no dead letter, the limit slows down on the 429s, and a KB of one
document submitted while another of 40 drains waits behind the big KB's map slots, not behind the big KB."""

from __future__ import annotations

import re
import time
import uuid

import pytest

from kbwiki.ingest import lane_rows
from kbwiki.workers import start_workers
from stages.ingest import submit_document
from tests.e2e.conftest import wait_until
from tests.e2e.test_recovery import _kill_tree
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM, document_of, error, realistic, stall
from wiki.lanes import SCOPE_KB

pytestmark = pytest.mark.e2e

CAPACITY = 2
LATENCY_S = 0.3
# Map slots per KB: at most this many of a KB's documents are running or queued as messages.
MAP_SLOTS = 4


def _doc(i: int) -> tuple[str, str]:
    return (
        f"Subsystem {i}",
        f"The Block Layer {i} queues requests for disks. The Request Queue keeps requests"
        f" in order before the Block Layer {i} sends them. Each request carries a Bio Vector of pages."
        f" The Request Queue merges requests that touch neighbouring sectors.",
    )


def _submit(deps, kb_id: str, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        title, text = _doc(i)
        submit_document(deps, tenant_id=1, knowledge_base_id=kb_id, title=title, content=text, source_uri=f"doc{i}.md")


def _first_calls(server) -> dict[int, float]:
    """Document number -> arrival time of the first model call that carried it."""
    first: dict[int, float] = {}
    for request, at in zip(server.requests, server.times, strict=True):
        number = re.search(r"Block Layer (\d+)", document_of(request)[0])
        if number:
            first.setdefault(int(number.group(1)), at)
    return first


def test_a_429_storm_drains_two_kbs_fairly_without_dead_letters(deps, monkeypatch, tmp_path):
    refused = []

    def respond(request):
        if server.in_flight > CAPACITY:
            refused.append(1)
            return error(429, "rate limited", {"retry-after-ms": "300"})
        return stall(LATENCY_S, realistic(request))

    with ScriptedLLM(respond) as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            KBWIKI_LLM_MAX_CONCURRENCY="8",
            KBWIKI_LLM_RETRY_MAX_WAIT_S="2",
            # A document whose calls failed would be a dead letter at its second failure.
            KBWIKI_WIKI_MAX_FAIL_RETRIES="1",
            KBWIKI_DOCUMENT_RETRY_BACKOFF_MS="100",
            KBWIKI_INGEST_LLM_MAP_PARALLEL=str(MAP_SLOTS),
        )
        big = deps.kbs.get_or_create(1, f"llm-big-{uuid.uuid4().hex[:6]}")
        small = deps.kbs.get_or_create(1, f"llm-small-{uuid.uuid4().hex[:6]}")
        _submit(deps, big.id, 40)
        proc = start_workers(2, 4, tmp_path / "workers.log")
        try:
            wait_until(lambda: deps.docs.count_by_status(big.id).get("done", 0) >= 4, 120, "the big KB draining")
            submitted_at = time.monotonic()
            _submit(deps, small.id, 1, start=100)
            wait_until(lambda: deps.docs.count_by_status(small.id) == {"done": 1}, 120, "the small KB's document")
            wait_until(
                lambda: deps.docs.count_by_status(big.id) == {"done": 40} and lane_rows(deps, big.id) == 0,
                300,
                "every document of the big KB done",
            )
        finally:
            _kill_tree(proc)
    span = server.times[-1] - server.times[0]
    answered = server.calls - len(refused)
    # The small KB's document waits behind the big KB's map slots, not behind the big KB: its
    # trigger and then its map message each queue behind at most MAP_SLOTS of the big KB's maps
    # (measured 2 to 4 of the 36 left).
    first = _first_calls(server)
    started_before = [n for n, at in first.items() if n < 100 and submitted_at < at < first[100]]
    assert len(started_before) <= 2 * MAP_SLOTS, sorted(started_before)
    # The server answers CAPACITY / LATENCY_S calls a second at most; measured 0.72 of it (the
    # window halves to 1 at the first 429 and grows back a step per RECOVER_S).
    assert answered / span >= 0.4 * CAPACITY / LATENCY_S, (answered, span)
    for kb in (big, small):
        assert deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0
    assert sum(p.page_type == "summary" for p in deps.pages.iter_pages(big.id)) == 40
    assert server.max_in_flight <= 8
    log = (tmp_path / "workers.log").read_text()
    assert '"llm.rate_slowdown"' in log
    assert len(refused) <= server.calls // 2, (len(refused), server.calls)
