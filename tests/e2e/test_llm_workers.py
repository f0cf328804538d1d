"""Real worker processes (`kbwiki worker`) with ``KBWIKI_EXTRACTOR=llm`` against the scripted
OpenAI-compatible server the test runs: good answers become pages (a page four of them describe
opens with the lead the model wrote), a 429 is waited out, a document whose answers stay invalid
becomes a ``wiki:ingest`` dead letter and never a page."""

from __future__ import annotations

import re
import uuid

import pytest

from kbwiki.ingest import lane_rows
from kbwiki.workers import start_workers
from stages.ingest import submit_document
from tests.e2e.conftest import wait_until
from tests.e2e.test_recovery import _kill_tree
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM, answer, document_of, error, realistic
from wiki.extract import validate_item_name
from wiki.extract.llm.extractor import normalise
from wiki.lanes import INGEST, SCOPE_KB
from wiki.render import lead_inputs, lead_key

pytestmark = pytest.mark.e2e

GOOD = {
    f"doc{i}.md": (
        f"Subsystem {i}",
        f"The Block Layer {i} queues requests for disks. The Request Queue keeps requests"
        f" in order before the Block Layer {i} sends them. Each request carries a Bio Vector of pages."
        f" The Request Queue merges requests that touch neighbouring sectors.",
    )
    for i in range(4)
}
POISON = (
    "poison.md",
    (
        "Poison",
        "This document is about the Poison Pill. The Poison Pill makes every answer invalid"
        " so that the document ends as a dead letter.",
    ),
)


def test_worker_processes_write_pages_from_the_model_and_dead_letter_what_stays_invalid(deps, monkeypatch, tmp_path):
    seen_429 = []

    def respond(request):
        text, _ = document_of(request)
        if "Poison Pill" in text:
            return answer('{"summary": "unfinished", "items": [')  # a normal stop, beyond repair: no body
        if not seen_429:
            seen_429.append(True)
            return error(429, "rate limited", {"Retry-After": "1"})
        return realistic(request)

    with ScriptedLLM(respond) as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            KBWIKI_LLM_RETRY_MAX_WAIT_S="2",
            KBWIKI_WIKI_MAX_FAIL_RETRIES="1",
            KBWIKI_DOCUMENT_RETRY_BACKOFF_MS="100",
        )
        kb = deps.kbs.get_or_create(1, f"llm-e2e-{uuid.uuid4().hex[:6]}")
        ids = {}
        for uri, (title, text) in [*GOOD.items(), POISON]:
            ids[uri] = submit_document(
                deps, tenant_id=1, knowledge_base_id=kb.id, title=title, content=text, source_uri=uri
            ).knowledge_id
        proc = start_workers(2, 2, tmp_path / "workers.log")
        try:
            wait_until(
                lambda: deps.docs.count_by_status(kb.id) == {"done": 4, "failed": 1} and lane_rows(deps, kb.id) == 0,
                180,
                "four documents done and the poison one failed",
            )
        finally:
            _kill_tree(proc)
    [letter] = deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    assert letter.task_type == INGEST and letter.related_id == ids["poison.md"]
    assert "invalid model output" in letter.last_error
    pages = list(deps.pages.iter_pages(kb.id))
    assert sum(p.page_type == "summary" for p in pages) == 4
    assert not any("Poison" in p.title for p in pages)
    texts = {d.id: normalise(d.content) for d in deps.docs.get_many(list(ids.values())).values()}
    items = [p for p in pages if p.page_type in ("entity", "concept")]
    [queue] = [p for p in items if p.title == "Request Queue" and len(p.source_refs) == 4]
    # four sources describe it: its lead is the one the model wrote from them (stages.leads)
    assert queue.lead and queue.lead_key == lead_key(queue.title, lead_inputs(queue.facts))
    assert re.sub(r"\[\[[^|\]]+\|([^\]]+)\]\]", r"\1", queue.content).startswith(queue.lead)
    for page in items:
        assert validate_item_name(page.title) == page.title
        for knowledge_id, fact in page.facts.items():
            assert all(q in texts[knowledge_id] for q in fact.evidence)
    stats = deps.pages.link_stats(kb.id)
    assert stats["links"] > 0 and stats["dead_links"] == 0
    log = (tmp_path / "workers.log").read_text()
    assert '"llm.retry"' in log and seen_429 and '"lead.written"' in log
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == 0


def test_a_refused_key_pauses_the_kb_in_status_and_a_new_key_resumes_it(deps, monkeypatch, tmp_path):
    """401 from the endpoint: the worker processes record it once, `kbwiki status` says so, the
    documents wait uncounted; the KB's own key (wiki_config.llm) then lets them through."""
    from kbwiki.status import kb_status, status_lines

    with ScriptedLLM() as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            KBWIKI_LLM_PAUSE_S="0.5",
        )
        server.responder = lambda request: (
            realistic(request)
            if request["_authorization"] == "Bearer fresh"
            else error(401, "Incorrect API key provided: revoked")
        )
        kb = deps.kbs.get_or_create(1, f"llm-pause-{uuid.uuid4().hex[:6]}")
        for uri, (title, text) in GOOD.items():
            submit_document(deps, tenant_id=1, knowledge_base_id=kb.id, title=title, content=text, source_uri=uri)
        proc = start_workers(1, 2, tmp_path / "workers.log")
        try:
            lines = wait_until(
                lambda: [
                    line for line in status_lines(kb_status(deps, kb)) if line.startswith("model paused: HTTP 401")
                ],
                60,
                "the KB paused in status",
            )
            assert "Incorrect API key" in lines[0]
            calls = server.calls
            assert calls >= 1
            wait_until(lambda: '"llm.config_error"' in (tmp_path / "workers.log").read_text(), 10, "the error logged")
            deps.kbs.set_wiki_config(kb.id, {"llm": {"api_key": "fresh"}})
            wait_until(
                lambda: deps.docs.count_by_status(kb.id) == {"done": len(GOOD)} and lane_rows(deps, kb.id) == 0,
                120,
                "every document done once the configuration changed",
            )
        finally:
            _kill_tree(proc)
    log = (tmp_path / "workers.log").read_text()
    assert log.count('"llm.config_error"') == 1 and '"llm.config_error_cleared"' in log
    assert not any(line.startswith("model paused") for line in status_lines(kb_status(deps, kb)))
    assert deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0
    assert sum(p.page_type == "summary" for p in deps.pages.iter_pages(kb.id)) == len(GOOD)
