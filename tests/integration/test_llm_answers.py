"""What the model's answers are taken for (issue 26, deliverables 1, 2 and 7), through the scripted
OpenAI-compatible server (real HTTP, the real ``openai`` SDK): quotes that differ from the document
only in typography are kept in the document's own spelling, unknown fields are ignored (and said
once per KB and model), a rejected item's reason names the field and the rule, a tool call's
arguments are the answer when the content is empty, a body that is no chat completion says so in
one line, and an answer that fails the same way twice is not asked for again."""

from __future__ import annotations

import json
import re
import unicodedata

import pytest
from structlog.testing import capture_logs

from kbwiki.status import kb_status, status_lines
from stages.map import map_document
from tests.integration.test_llm_extractor import TEXT, TITLE, extractor, good
from tests.integration.test_llm_map import assert_pages_valid, new_kb, pages_of, submit
from tests.support.llm_deps import scripted_llm_deps
from tests.support.llm_server import (
    answer,
    is_lead_request,
    is_merge_request,
    raw,
    realistic,
    realistic_content,
    tool_call_answer,
)
from tests.support.pipeline import settle
from wiki.extract import validate_item_name
from wiki.extract.llm import LLMConfigError, LLMOutputInvalid, unknown_fields
from wiki.extract.llm.leads import LeadQuestion, write_leads
from wiki.extract.llm.merges import Candidate, MergeQuestion, decide_merges
from wiki.extract.llm.ratelimit import sharing
from wiki.lanes import INGEST, SCOPE_KB
from wiki.models import ExtractedItem, PageLite

# --- deliverable 1: quotes that differ in typography only ----------------------------------------

#: (the document's spelling, the model's spelling of the same sentence)
TYPOGRAPHY = {
    "curly double quotes in the answer": (
        'The "run queue" holds every runnable task of a CPU.',
        "The \u201crun queue\u201d holds every runnable task of a CPU.",
    ),
    "straight double quotes in the answer": (
        "The \u201cwait queue\u201d holds the tasks that sleep on an event.",
        'The "wait queue" holds the tasks that sleep on an event.',
    ),
    "curly apostrophe in the answer": (
        "The scheduler's tick advances the clock of each CPU.",
        "The scheduler\u2019s tick advances the clock of each CPU.",
    ),
    "straight apostrophe in the answer": (
        "The timer\u2019s callback runs in softirq context.",
        "The timer's callback runs in softirq context.",
    ),
    "en dash against a hyphen": (
        "Pages of 4\u201364 KiB are mapped at once by the fault handler.",
        "Pages of 4-64 KiB are mapped at once by the fault handler.",
    ),
    "non-breaking hyphen and em dash against hyphens": (
        "Non-blocking reads return at once - even when the pipe is empty.",
        "Non\u2011blocking reads return at once \u2014 even when the pipe is empty.",
    ),
    "three dots against an ellipsis": (
        "The lock holder waits, then retries\u2026 until the lock is free.",
        "The lock holder waits, then retries... until the lock is free.",
    ),
    "decomposed accents against composed ones": (
        unicodedata.normalize("NFC", "The caf\u00e9 driver was written by Jos\u00e9 in one week."),
        unicodedata.normalize("NFD", "The caf\u00e9 driver was written by Jos\u00e9 in one week."),
    ),
    "guillemets and a non-breaking space against plain spelling": (
        "The \u00abfast\u00a0path\u00bb skips the lock\n   entirely.",
        'The "fast path" skips the lock entirely.',
    ),
}


def _one_quote_answer(quote: str) -> dict:
    """An answer with one item quoting ``quote``, named by the quote's longest word the wiki takes
    as a name (a name must occur in its own quotes: ``grounding.in_quotes``), so only the quote
    decides whether the item stays."""
    words = sorted(re.findall(r"[A-Za-z]{4,}", quote), key=len, reverse=True)
    return {
        "summary": "A sentence about the kernel.",
        "body": "A sentence about the kernel.",
        "items": [
            {
                "name": next(w for w in words if validate_item_name(w)),
                "kind": "concept",
                "same_as": None,
                "aliases": [],
                "description": "A detail.",
                "evidence": [{"source": "d1", "quote": quote}],
            }
        ],
    }


@pytest.mark.parametrize("case", list(TYPOGRAPHY))
def test_a_quote_differing_in_typography_only_is_kept_in_the_documents_own_spelling(server, case):
    in_document, in_answer = TYPOGRAPHY[case]
    text = f"Kernel notes\n\nThe first line is here.\n\n{in_document}\n\nThe last line is here.\n"
    server.push(answer(_one_quote_answer(in_answer)))
    [item] = extractor(server).extract("Kernel notes", text).items
    assert item.evidence == [" ".join(in_document.split())]


@pytest.mark.parametrize(
    "in_answer",
    [
        "The scheduler\u2019s tick advances the clock of every CPU.",  # a word differs
        "The Scheduler\u2019s Tick advances the clock of each CPU.",  # case is not typography
        "The scheduler\u2019s tick advances the clock of each CPU!",  # nor is punctuation
    ],
)
def test_a_quote_that_differs_in_more_than_typography_is_still_dropped(server, in_answer):
    text = f"Kernel notes\n\n{TYPOGRAPHY['curly apostrophe in the answer'][0]}\n\n{TEXT}"
    content = good()
    content["items"].append(_one_quote_answer(in_answer)["items"][0])
    server.push(answer(content))
    names = {i.name for i in extractor(server).extract("Kernel notes", text).items}
    assert names == {"timer wheel", "kernel timer", "High resolution timers"}


TYPESET = (
    "Typeset notes",
    "The Timer Wheel's slots hold the pending timers, sorted by their expiry time. The Scheduler Tick"
    " doesn't run work items - it only advances the Timer Wheel's clock. The Worker Pool's threads run"
    " the deferred work items, one at a time. A non-blocking Worker Pool call returns at once, then the"
    " caller polls... until its work item is done.",
)


def _typeset(quote: str) -> str:
    """A quote as a model that typesets writes it: curly apostrophes, an en dash, an ellipsis."""
    return quote.replace("'", "\u2019").replace(" - ", " \u2013 ").replace("...", "\u2026")


def test_a_document_whose_answer_is_mostly_typeset_quotes_gets_its_pages(settings, clean_db, server):
    def respond(request):
        if is_merge_request(request) or is_lead_request(request):
            return realistic(request)
        content = realistic_content(request)
        for item in content["items"]:
            for evidence in item["evidence"]:
                evidence["quote"] = _typeset(evidence["quote"])
        assert all(e["quote"] not in TYPESET[1] for i in content["items"] for e in i["evidence"])
        return answer(content)

    server.responder = respond
    deps = scripted_llm_deps(settings, clean_db, server.url)
    kb = new_kb(deps)
    submit(deps, kb, {"typeset.md": TYPESET})
    settle(deps, kb)
    assert deps.docs.count_by_status(kb.id) == {"done": 1}
    assert not deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    pages = {p.title: p for p in pages_of(deps, kb)}
    assert {"Timer Wheel", "Worker Pool"} <= set(pages)
    quotes = [q for fact in pages["Timer Wheel"].facts.values() for q in fact.evidence]
    assert quotes and all("\u2019" not in q and "'" in q for q in quotes)  # the document's spelling
    assert_pages_valid(deps, kb)


# --- deliverable 2: tolerant parsing, strict meaning ---------------------------------------------


def _with_unknown_fields() -> dict:
    content = good(confidence=0.93, language="en")
    for item in content["items"]:
        item["confidence"] = 0.8
        item["evidence"][0]["page"] = 3
    return content


def test_unknown_fields_anywhere_in_the_answer_are_ignored_and_said_once_per_kb_and_model(server):
    unknown_fields.forget()
    server.responder = lambda request: answer(_with_unknown_fields())
    with capture_logs() as logs:
        with sharing("kb-one"):
            first = extractor(server).extract(TITLE, TEXT)
            extractor(server).extract(TITLE, TEXT)
        with sharing("kb-two"):
            extractor(server).extract(TITLE, TEXT)
    assert {i.name for i in first.items} == {"timer wheel", "kernel timer", "High resolution timers"}
    warned = [e for e in logs if e["event"] == "llm.unknown_fields_ignored"]
    assert [(e["knowledge_base_id"], e["model"]) for e in warned] == [
        ("kb-one", "scripted-model"),
        ("kb-two", "scripted-model"),
    ]
    assert warned[0]["fields"] == ["confidence", "items[].confidence", "items[].evidence[].page", "language"]
    assert warned[0]["log_level"] == "warning"
    # Only our validation forgives: the schema the provider gets still allows no other field.
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["additionalProperties"] is False
    assert all(d["additionalProperties"] is False for d in schema["$defs"].values())


def test_a_rejected_items_reason_names_the_field_and_the_rule(server):
    content = good()
    content["items"][2]["kind"] = "technology"
    content["items"][0]["evidence"] = [{"source": "d1", "quote": "The timer wheel was invented in 1987."}]
    server.push(answer(content))
    with pytest.raises(LLMOutputInvalid) as caught:
        extractor(server).extract(TITLE, TEXT)
    reason = caught.value.reason
    assert reason.startswith("2 of 3 items invalid")
    assert "items[2].kind: must be 'entity' or 'concept'" in reason
    assert "items[0].evidence: no quote of at least 8 characters occurs in the document" in reason


def test_a_missing_top_level_field_names_it(server):
    content = good()
    del content["summary"]
    server.push(answer(content))
    with pytest.raises(LLMOutputInvalid, match=r"summary: is required"):
        extractor(server).extract(TITLE, TEXT)


def test_a_dropped_items_reason_is_logged_when_the_answer_passes(server):
    content = good()
    content["items"][1]["name"] = 42
    server.push(answer(content))
    with capture_logs() as logs:
        extraction = extractor(server).extract(TITLE, TEXT)
    assert len(extraction.items) == 2
    [event] = [e for e in logs if e["event"] == "llm.items_dropped"]
    assert event["reasons"] == ["items[1].name: must be a valid string"]


def test_the_quotes_given_and_kept_are_counted(server):
    # bench/llm_local.py reports them per model: how much of what a model quotes is in the document.
    content = good()
    content["items"][0]["evidence"].append({"source": "d1", "quote": "The scheduler never sleeps at all."})
    content["items"][2]["evidence"] = [{"source": "d1", "quote": "Timers are made of cheese, always."}]
    server.push(answer(content))
    with capture_logs() as logs:
        extractor(server).extract(TITLE, TEXT)
    [event] = [e for e in logs if e["event"] == "llm.extracted"]
    assert (event["quotes"], event["quotes_kept"]) == (4, 2)


def _merge_question() -> MergeQuestion:
    item = ExtractedItem(
        name="Postgres", kind="entity", aliases=[], description="The database.", evidence=["Postgres runs."]
    )
    page = PageLite(slug="postgresql", title="PostgreSQL", page_type="entity")
    return MergeQuestion(item=item, candidates=[Candidate(page, "The database server.")])


def test_unknown_fields_in_a_merge_answer_are_ignored(server):
    server.push(
        answer({"decisions": [{"item": "i1", "merge_into": "p1", "confidence": 0.9}], "reasoning": "same product"})
    )
    chosen, stats = decide_merges(extractor(server).client, "Notes", [_merge_question()])
    assert chosen == ["postgresql"] and not stats.invalid


def test_unknown_fields_in_a_lead_answer_are_ignored(server):
    question = LeadQuestion(
        slug="timer-wheel", title="Timer Wheel", page_type="concept", inputs=("orders timers",), key="k"
    )
    server.push(answer({"leads": [{"page": "p1", "lead": "The Timer Wheel orders timers.", "tone": "neutral"}]}))
    leads, stats = write_leads(extractor(server).client, [question])
    assert leads == ["The Timer Wheel orders timers."] and not stats.invalid


def test_a_tool_calls_arguments_are_the_answer_when_the_content_is_null(server):
    server.push(tool_call_answer(good()))
    extraction = extractor(server).extract(TITLE, TEXT)
    assert {i.name for i in extraction.items} == {"timer wheel", "kernel timer", "High resolution timers"}


def test_a_merge_answer_in_a_tool_call_is_read_too(server):
    server.push(tool_call_answer({"decisions": [{"item": "i1", "merge_into": "p1"}]}, content=""))
    chosen, _ = decide_merges(extractor(server).client, "Notes", [_merge_question()])
    assert chosen == ["postgresql"]


# --- deliverable 7 (part): clear words, sensible retries -----------------------------------------

HTML = "<!DOCTYPE html>\n<html><head><title>Open WebUI</title></head><body><div id=app></div></body></html>"


@pytest.mark.parametrize(
    "response, words",
    [
        (raw(HTML), "the endpoint answered 200 with an HTML page, not a chat completion: is the base URL right?"),
        (
            raw("OK", content_type="text/plain"),
            "the endpoint answered 200 with text, not a chat completion ('OK'): is the base URL right?",
        ),
        (
            raw(json.dumps({"status": "ok", "version": "1.2"}), content_type="application/json"),
            "the endpoint answered 200 with JSON that is not a chat completion: is the base URL right?",
        ),
        (
            raw("", content_type="application/json"),
            "the endpoint answered 200 with an empty body, not a chat completion: is the base URL right?",
        ),
        (
            raw('{"choices": [{"message": ', content_type="application/json"),
            'the endpoint answered 200 with a body that is not JSON (\'{"choices": [{"message":\'),'
            " not a chat completion: is the base URL right?",
        ),
    ],
)
def test_a_200_that_is_no_chat_completion_says_so_in_one_line(server, response, words):
    server.push(response)
    with pytest.raises(LLMConfigError) as caught:
        extractor(server).extract(TITLE, TEXT)
    assert caught.value.message == words and caught.value.status == 200
    assert str(caught.value).count("\n") == 0 and server.calls == 1


def test_an_html_page_for_an_answer_pauses_the_kb_and_status_says_why(settings, clean_db, server):
    server.responder = lambda request: raw(HTML)
    deps = scripted_llm_deps(settings, clean_db, server.url)
    kb = new_kb(deps)
    ids = submit(deps, kb, {"a.md": ("A", TEXT)})
    deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    [op] = deps.ops.peek(INGEST, SCOPE_KB, kb.id, 10)
    assert map_document(1, kb.id, ids["a.md"], op.id, deps) == "paused"
    [line] = [line for line in status_lines(kb_status(deps, kb)) if line.startswith("model paused")]
    assert "the endpoint answered 200 with an HTML page, not a chat completion: is the base URL right?" in line
    assert not deps.dead_letters.list(tenant_id=1, scope_id=kb.id)


def test_an_answer_that_fails_the_same_way_twice_is_dead_lettered_at_once(settings, clean_db, server):
    same = good()
    for item in same["items"]:
        item["kind"] = "technology"
    server.responder = lambda request: answer(same)
    deps = scripted_llm_deps(settings, clean_db, server.url, wiki_max_fail_retries=5)
    kb = new_kb(deps)
    ids = submit(deps, kb, {"a.md": ("A", TEXT)})
    settle(deps, kb)
    assert server.calls == 2  # not 1 + 5 retries: the second identical failure ends it
    [letter] = deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    assert letter.related_id == ids["a.md"] and letter.fail_count == 2
    head = letter.last_error.splitlines()[0]
    assert head.startswith("LLMOutputInvalid: the same invalid answer twice, not asked again: invalid model output:")
    assert "items[0].kind: must be 'entity' or 'concept'" in head
    doc = deps.docs.get(ids["a.md"])
    assert doc.status == "failed" and doc.error.startswith(
        "the same invalid answer twice, not asked again: invalid model output: 3 of 3 items"
    )


def test_answers_that_fail_in_different_ways_keep_their_retries(settings, clean_db, server):
    answers = iter([answer("Sorry, no JSON today."), answer(""), answer("Still no JSON."), answer("")] * 2)
    server.responder = lambda request: next(answers)
    deps = scripted_llm_deps(settings, clean_db, server.url, wiki_max_fail_retries=3)
    kb = new_kb(deps)
    submit(deps, kb, {"a.md": ("A", TEXT)})
    settle(deps, kb)
    assert server.calls == 4
    [letter] = deps.dead_letters.list(tenant_id=1, scope_id=kb.id)
    assert letter.fail_count == 4 and "the same invalid answer" not in letter.last_error
    assert re.search(r"invalid model output: empty answer", letter.last_error)
