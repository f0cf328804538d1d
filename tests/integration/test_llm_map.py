"""The map stage with the LLM extractor, through a scripted OpenAI-compatible server (real HTTP,
the real SDK) and the test database: what each kind of answer ends as (pages, a dead letter, a
paused KB shown by status) and that nothing invalid reaches ``wiki_pages``."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from kbwiki.status import kb_status, status_lines
from repos.llm_errors import LLMConfigErrorRepository
from stages.ingest import submit_document
from stages.map import map_document
from tests.e2e.conftest import wait_until
from tests.support.llm_deps import ingest_op, scripted_llm_deps
from tests.support.llm_server import answer, error, realistic, realistic_content, rejecting, stall
from tests.support.pipeline import settle
from wiki.extract import validate_item_name
from wiki.extract.llm.extractor import normalise
from wiki.lanes import INGEST, SCOPE_KB

DOCS = {
    "timers.md": (
        "Kernel timers",
        "A kernel timer runs a function at a given time in the future. The Timer Wheel keeps"
        " pending timers sorted by their expiry time. The Scheduler Tick advances the Timer Wheel and runs"
        " the expired timers. High Resolution Timers use a tree instead of the Timer Wheel.",
    ),
    "workqueue.md": (
        "Workqueues",
        "A workqueue runs deferred work in a kernel thread. The Worker Pool holds the"
        " threads that run work items. Each work item is queued on a workqueue and run by the Worker"
        " Pool later. The Scheduler Tick does not run work items.",
    ),
}


@pytest.fixture()
def llm_deps(settings, clean_db, server):
    """Deps whose extractor is the LLM one on the scripted server; fast retries and pauses."""
    return scripted_llm_deps(settings, clean_db, server.url)


def submit(deps, kb, names=DOCS):
    ids = {}
    for uri, (title, text) in names.items():
        result = submit_document(
            deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=title, content=text, source_uri=uri
        )
        ids[uri] = result.knowledge_id
    return ids


def pages_of(deps, kb):
    return list(deps.pages.iter_pages(kb.id))


def assert_pages_valid(deps, kb) -> None:
    """No entity or concept page is named against the offline rules, and every evidence quote of
    every page's facts occurs in its source document."""
    texts = {
        d.id: normalise(d.content)
        for d in deps.docs.get_many([ref.knowledge_id for p in pages_of(deps, kb) for ref in p.source_refs]).values()
    }
    for page in pages_of(deps, kb):
        if page.page_type in ("entity", "concept"):
            assert validate_item_name(page.title) == page.title
            for knowledge_id, fact in page.facts.items():
                for quote in fact.evidence:
                    assert quote in texts[knowledge_id], (page.slug, quote)


def new_kb(deps):
    return deps.kbs.get_or_create(1, f"llm-{uuid.uuid4().hex[:6]}")


def test_good_answers_become_pages_and_an_unchanged_document_costs_no_call(llm_deps, server):
    server.responder = realistic
    kb = new_kb(llm_deps)
    ids = submit(llm_deps, kb)
    settle(llm_deps, kb)
    pages = pages_of(llm_deps, kb)
    assert sum(p.page_type == "summary" for p in pages) == 2
    assert {"Timer Wheel", "Worker Pool"} <= {p.title for p in pages if p.page_type in ("entity", "concept")}
    assert llm_deps.docs.count_by_status(kb.id) == {"done": 2}
    assert_pages_valid(llm_deps, kb)
    calls = server.calls
    doc = llm_deps.docs.get(ids["timers.md"])
    op = ingest_op(llm_deps, kb, doc)
    assert map_document(1, kb.id, doc.id, op.id, llm_deps) == "cached"
    assert server.calls == calls


def test_the_second_document_is_offered_the_first_ones_pages_as_handles(llm_deps, server):
    server.responder = realistic
    kb = new_kb(llm_deps)
    submit(llm_deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(llm_deps, kb)
    submit(llm_deps, kb, {"workqueue.md": DOCS["workqueue.md"]})
    settle(llm_deps, kb)
    offered = server.requests[-1]["messages"][1]["content"].split("<document", 1)[0]
    assert "Scheduler Tick" in offered and "scheduler-tick" not in offered
    tick = [p for p in pages_of(llm_deps, kb) if p.title == "Scheduler Tick"]
    assert len(tick) == 1 and len(tick[0].source_refs) == 2


def test_output_that_stays_invalid_is_a_dead_letter_with_its_reason_never_a_page(llm_deps, server):
    server.responder = lambda request: answer("Sure! Here are the entities: timers, workqueues.")
    kb = new_kb(llm_deps)
    ids = submit(llm_deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(llm_deps, kb)
    assert server.calls == 2  # the first try and the one retry the budget allows
    [letter] = llm_deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    assert letter.task_type == INGEST and letter.related_id == ids["timers.md"]
    assert "invalid model output: the answer is not a JSON object" in letter.last_error
    assert "Here are the entities" in letter.last_error  # the raw answer, for triage
    assert [p for p in pages_of(llm_deps, kb) if p.page_type != "index"] == []
    with llm_deps.pool.connection() as conn:
        assert (
            conn.execute(
                "SELECT count(*) AS n FROM wiki_extractions WHERE knowledge_base_id = %s", (kb.id,)
            ).fetchone()["n"]
            == 0
        )
    report = kb_status(llm_deps, kb)
    assert report["dead_letters"] == 1
    assert any("invalid model output" in line for line in status_lines(report))


def test_a_content_filter_refusal_is_dead_lettered_at_once(llm_deps, server):
    server.responder = lambda request: answer("", finish_reason="content_filter")
    kb = new_kb(llm_deps)
    submit(llm_deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(llm_deps, kb)
    assert server.calls == 1
    [letter] = llm_deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    assert "content filter" in letter.last_error and letter.fail_count == 1
    assert [p for p in pages_of(llm_deps, kb) if p.page_type != "index"] == []


def test_a_refused_configuration_pauses_the_kb_until_it_changes(llm_deps, server):
    def respond(request):
        if request["model"] != "good-model":
            return error(404, f"The model `{request['model']}` does not exist")
        return realistic(request)

    server.responder = respond
    kb = new_kb(llm_deps)
    ids = submit(llm_deps, kb)
    llm_deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    outcomes = [map_document(1, kb.id, knowledge_id, op.id, llm_deps) for knowledge_id, op in _ops(llm_deps, kb, ids)]
    assert outcomes == ["paused", "paused"]
    assert server.calls == 1  # the second document saw the recorded error and made no call
    row = LLMConfigErrorRepository(llm_deps.pool).get(kb.id)
    assert row.status == 404 and "does not exist" in row.message
    lines = status_lines(kb_status(llm_deps, kb))
    assert any(line.startswith("model paused: HTTP 404") and "scripted-model" in line for line in lines)
    assert all(op.fail_count == 0 and op.not_before is not None for _, op in _ops(llm_deps, kb, ids))
    assert llm_deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0

    llm_deps.kbs.set_wiki_config(kb.id, {"llm": {"model": "good-model"}})
    claimed = []
    wait_until(
        lambda: claimed.extend(llm_deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)) or len(claimed) == 2,
        10,
        "both paused ops claimable again after llm_pause_s",
    )
    assert [map_document(1, kb.id, op.dedup_key, op.id, llm_deps) for op in claimed] == ["mapped"] * len(claimed)
    settle(llm_deps, kb)
    assert llm_deps.docs.count_by_status(kb.id) == {"done": 2}
    assert LLMConfigErrorRepository(llm_deps.pool).get(kb.id) is None
    assert not any(line.startswith("model paused") for line in status_lines(kb_status(llm_deps, kb)))
    assert {r["model"] for r in server.requests[1:]} == {"good-model"}
    assert_pages_valid(llm_deps, kb)


def _ops(deps, kb, ids):
    by_key = {op.dedup_key: op for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100)}
    return [(knowledge_id, by_key[knowledge_id]) for knowledge_id in ids.values()]


def _first_then_realistic(change):
    """A responder: the first call gets ``realistic``'s answer passed through ``change`` (a
    function of the content dict returning a response), later calls plain ``realistic``."""
    state = {"first": True}

    def respond(request):
        if state.pop("first", False):
            return change(realistic_content(request))
        return realistic(request)

    return respond


def _invent_handles(content):
    content["body"] += " See [[p9]], [[block-layer-internals|the block layer]] and [docs](https://example.org/x)."
    content["items"][0]["same_as"] = "p7"
    return answer(content)


def _bad_quote(content):
    content["items"].append(
        {
            "name": "Imaginary Scheduler",
            "kind": "entity",
            "same_as": None,
            "aliases": [],
            "description": "Made up.",
            "evidence": [{"source": "d1", "quote": "The Imaginary Scheduler runs every task twice."}],
        }
    )
    return answer(content)


def _repairable(content):
    return answer(json.dumps(content)[:-2] + ",]")


# name: (responder or script, outcome) -- outcome "page", "dead" or "paused"
SCENARIOS = {
    "good answer": (lambda s: setattr(s, "responder", realistic), "page"),
    "truncation": (
        lambda s: (
            s.push(answer('{"summary": "The Timer Wheel is', finish_reason="length")),
            setattr(s, "responder", realistic),
        ),
        "page",
    ),
    "empty content with reasoning": (
        lambda s: (s.push(answer("", reasoning="Thinking about timers...")), setattr(s, "responder", realistic)),
        "page",
    ),
    "invalid JSON": (lambda s: setattr(s, "responder", lambda r: answer("timers: yes; wheel: yes")), "dead"),
    "repairable JSON": (lambda s: setattr(s, "responder", _first_then_realistic(_repairable)), "page"),
    "invented handles": (lambda s: setattr(s, "responder", _first_then_realistic(_invent_handles)), "page"),
    "quotes not in the source": (lambda s: setattr(s, "responder", _first_then_realistic(_bad_quote)), "page"),
    "429 with Retry-After": (
        lambda s: (s.push(error(429, "rate limited", {"Retry-After": "1"})), setattr(s, "responder", realistic)),
        "page",
    ),
    "500s": (lambda s: (s.push(error(500), error(502)), setattr(s, "responder", realistic)), "page"),
    "timeout": (lambda s: (s.push(stall(3.0)), setattr(s, "responder", realistic)), "page"),
    "401": (lambda s: setattr(s, "responder", lambda r: error(401, "Incorrect API key provided: k")), "paused"),
    "json_schema rejected": (lambda s: setattr(s, "responder", rejecting({"json_schema"})), "page"),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_each_kind_of_answer_ends_as_a_page_a_dead_letter_or_a_paused_kb(llm_deps, server, scenario):
    setup, outcome = SCENARIOS[scenario]
    setup(server)
    kb = new_kb(llm_deps)
    ids = submit(llm_deps, kb, {"timers.md": DOCS["timers.md"]})
    if outcome == "paused":
        llm_deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
        [(knowledge_id, op)] = _ops(llm_deps, kb, ids)
        assert map_document(1, kb.id, knowledge_id, op.id, llm_deps) == "paused"
    else:
        settle(llm_deps, kb)
    pages = [p for p in pages_of(llm_deps, kb) if p.page_type != "index"]
    lines = status_lines(kb_status(llm_deps, kb))
    letters = llm_deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    if outcome == "page":
        assert llm_deps.docs.count_by_status(kb.id) == {"done": 1} and not letters
        assert any(p.page_type == "summary" for p in pages) and any(p.title == "Timer Wheel" for p in pages)
    elif outcome == "dead":
        assert [dl.related_id for dl in letters] == [ids["timers.md"]] and pages == []
        assert any("invalid model output" in line for line in lines)
    else:
        assert pages == [] and not letters
        assert any(line.startswith("model paused: HTTP 401") and "Incorrect API key" in line for line in lines)
    # Nothing invalid reaches wiki_pages, whatever the answer was.
    assert_pages_valid(llm_deps, kb)
    for page in pages:
        assert not re.search(r"\[\[p\d|block-layer-internals|example\.org|Imaginary|<think>", page.content), page.slug


def test_a_page_named_at_the_end_of_a_sentence_is_offered_as_a_handle(llm_deps, server):
    """Found by a new user: "... came from Oskar Venn." was not offered the page "Oskar Venn" (the
    word pattern kept the full stop, so "venn." never matched the title)."""
    server.responder = realistic
    kb = new_kb(llm_deps)
    submit(llm_deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(llm_deps, kb)
    ending = "A soft timer is polled by the idle loop. Its expiry is checked at every Scheduler Tick."
    submit(llm_deps, kb, {"soft.md": ("Soft timers", ending)})
    settle(llm_deps, kb)
    offered = server.requests[-1]["messages"][1]["content"].split("<document", 1)[0]
    assert "Scheduler Tick" in offered
