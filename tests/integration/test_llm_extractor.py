"""The LLM extractor against a scripted OpenAI-compatible server: real HTTP, the real ``openai`` SDK.

Each test scripts the server's answers and asserts what the extractor made of them: a valid
``Extraction`` (and what it dropped), or the named error a map stage turns into a dead letter, a
retry or a paused KB.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.support.llm_server import ScriptedLLM, answer, error, mode_of, realistic, rejecting, stall
from wiki.extract import validate_item_name
from wiki.extract.llm import LLMConfigError, LLMExtractor, LLMOutputInvalid, LLMRefused, LLMUnavailable
from wiki.extract.llm.extractor import MAX_SPLITS, normalise, remembered_mode
from wiki.llm_config import LLMConfig
from wiki.models import PageLite

TITLE = "Kernel timers"
TEXT = """Kernel timers
=============

A kernel timer runs a function at a given time in the future. The timer wheel keeps pending
timers sorted by their expiry time.

Each timer is described by struct timer_list, which holds the expiry and the callback. The
scheduler tick advances the timer wheel and runs the expired timers.

High resolution timers are a separate mechanism for precise expiry. They use a red-black tree
instead of the timer wheel.
"""
Q1 = "A kernel timer runs a function at a given time in the future."
Q2 = "The timer wheel keeps pending timers sorted by their expiry time."
Q3 = "High resolution timers are a separate mechanism for precise expiry."


def good(**changes) -> dict:
    content = {
        "summary": "How the kernel runs functions at a later time with timers.",
        "body": "Kernel timers run callbacks later. The timer wheel orders them by expiry.",
        "items": [
            {
                "name": "timer wheel",
                "kind": "concept",
                "same_as": None,
                "aliases": [],
                "description": "The structure that keeps pending timers sorted.",
                "evidence": [{"source": "d1", "quote": Q2}],
            },
            {
                "name": "kernel timer",
                "kind": "concept",
                "same_as": None,
                "aliases": ["timer"],
                "description": "A function run at a given time.",
                "evidence": [{"source": "d1", "quote": Q1}],
            },
            {
                "name": "High resolution timers",
                "kind": "concept",
                "same_as": None,
                "aliases": ["hrtimers"],
                "description": "Timers with precise expiry.",
                "evidence": [{"source": "d1", "quote": Q3}],
            },
        ],
    }
    content.update(changes)
    return content


def extractor(server: ScriptedLLM, **changes) -> LLMExtractor:
    config = dict(
        base_url=server.url,
        model="scripted-model",
        api_key="k",
        timeout_s=1.0,
        connect_timeout_s=1.0,
        transport_attempts=3,
        retry_max_wait_s=3.0,
    )
    return LLMExtractor(LLMConfig(**{**config, **changes}))


def assert_valid(extraction, text: str = TEXT) -> None:
    """Every quote is in the document and every name passes the offline name validation."""
    doc = normalise(text)
    for item in extraction.items:
        assert validate_item_name(item.name) == item.name
        assert item.evidence and all(q in doc for q in item.evidence)


def test_a_good_answer_becomes_an_extraction_in_json_schema_mode(server):
    server.push(answer(good()))
    extraction, name, stats = extractor(server).extract_named(TITLE, TEXT)
    assert {i.name for i in extraction.items} == {"timer wheel", "kernel timer", "High resolution timers"}
    assert_valid(extraction)
    request = server.requests[0]
    assert mode_of(request) == "json_schema" and request["response_format"]["json_schema"]["strict"] is True
    assert request["max_tokens"] == 4096 and TEXT.strip() in request["messages"][1]["content"]
    assert name == "llm-map_v2-json_schema:scripted-model" and stats.calls == 1


def test_quotes_not_in_the_source_are_dropped_and_so_is_an_item_left_without_one(server):
    content = good()
    content["items"][0]["evidence"].append({"source": "d1", "quote": "The timer wheel was invented in 1987."})
    content["items"][1]["evidence"] = [{"source": "d1", "quote": "Timers never fire late."}]
    server.push(answer(content))
    extraction = extractor(server).extract(TITLE, TEXT)
    by_name = {i.name: i for i in extraction.items}
    assert "kernel timer" not in by_name
    assert by_name["timer wheel"].evidence == [Q2]
    assert_valid(extraction)


def test_handles_map_back_and_invented_ones_become_plain_text(server):
    pages = [
        PageLite(slug="timer-wheel-x", title="Timer wheel", page_type="concept"),
        PageLite(slug="jiffies", title="Jiffies", page_type="concept"),
    ]
    content = good(
        body="Timers sit in [[p1]] and count [[p2|jiffies]]. See [[p9]], [[softirq-handling|softirqs]],"
        " [[hrtimer-core]] and [the docs](https://example.org/x)."
    )
    content["items"][0]["same_as"] = "p1"
    content["items"][1]["same_as"] = "p7"  # invented: the item keeps its own name
    server.push(answer(content))
    extraction = extractor(server).extract_named(TITLE, TEXT, pages)[0]
    # the sentence linking to an address the document does not hold goes with its link (issue 26)
    assert extraction.body == "Timers sit in Timer wheel and count jiffies."
    names = {i.name: i for i in extraction.items}
    assert "Timer wheel" in names and "kernel timer" in names
    assert "[[" not in extraction.body and "http" not in extraction.body and "timer-wheel-x" not in extraction.body
    offered = server.requests[0]["messages"][1]["content"]
    assert "p1: Timer wheel" in offered and "timer-wheel-x" not in offered


def test_invalid_names_are_dropped_like_offline_names(server):
    content = good()
    content["items"][2]["name"] = "<think>hrtimers</think>"
    server.push(answer(content))
    extraction = extractor(server).extract(TITLE, TEXT)
    assert len(extraction.items) == 2 and all("<" not in i.name for i in extraction.items)


def test_too_many_invalid_items_fail_the_answer_and_keep_its_text(server):
    content = good()
    for item in content["items"][:2]:
        item["evidence"] = [{"source": "d1", "quote": "Nothing like this is in the document at all."}]
    server.push(answer(content))
    with pytest.raises(LLMOutputInvalid, match="2 of 3 items invalid") as caught:
        extractor(server).extract(TITLE, TEXT)
    assert "Nothing like this" in caught.value.raw


def test_truncation_cuts_the_input_smaller_and_never_accepts_the_cut_answer(server):
    long_text = TEXT * 4
    server.push(answer('{"summary": "cut', finish_reason="length"))
    server.responder = lambda request: answer(good())
    extraction, _, stats = extractor(server).extract_named(TITLE, long_text)
    sent = [len(r["messages"][1]["content"]) for r in server.requests]
    assert stats.calls == len(server.requests) >= 3 and max(sent[1:]) < sent[0]
    assert extraction.summary.startswith("How the kernel")
    assert_valid(extraction, long_text)


def test_truncation_that_persists_on_small_sections_fails(server):
    server.responder = lambda request: answer('{"summary": "cut', finish_reason="length")
    with pytest.raises(LLMOutputInvalid, match="cut at max_tokens"):
        extractor(server).extract(TITLE, TEXT * 4)
    # The first piece still cut after three halvings fails the document: no call for the others.
    assert server.calls == 1 + MAX_SPLITS
    assert [len(r["messages"][1]["content"]) for r in server.requests] == sorted(
        (len(r["messages"][1]["content"]) for r in server.requests), reverse=True
    )


def test_empty_content_with_reasoning_is_retried_once_with_thinking_off(server):
    server.push(answer("", reasoning="Let me think about timers..."), answer(good()))
    extraction = extractor(server).extract(TITLE, TEXT)
    assert len(extraction.items) == 3
    assert "chat_template_kwargs" not in server.requests[0]
    assert server.requests[1]["chat_template_kwargs"] == {"enable_thinking": False}


def test_empty_content_twice_fails(server):
    server.push(answer("", reasoning="hmm"), answer("", reasoning="hmm again"))
    with pytest.raises(LLMOutputInvalid, match="empty answer"):
        extractor(server).extract(TITLE, TEXT)
    assert server.calls == 2


def test_invalid_json_fails_with_its_raw_text(server):
    server.push(answer("I cannot produce JSON for this document, sorry."))
    with pytest.raises(LLMOutputInvalid, match="not a JSON object") as caught:
        extractor(server).extract(TITLE, TEXT)
    assert "I cannot produce JSON" in caught.value.raw


def test_repairable_json_after_a_normal_stop_is_repaired(server):
    text = json.dumps(good())
    server.push(answer(text[:-3] + ",]}"))  # trailing comma, missing brace
    extraction, _, stats = extractor(server).extract_named(TITLE, TEXT)
    assert len(extraction.items) == 3 and stats.repaired == 1


def test_extra_fields_are_ignored_and_the_schema_sent_stays_strict(server):
    """Issue 26: an extra top-level field dead-lettered the document; only our validation forgives
    (tests/integration/test_llm_answers.py has the fields of items, evidence, merges and leads)."""
    server.push(answer(good(confidence=0.9)))
    assert len(extractor(server).extract(TITLE, TEXT).items) == 3
    assert server.requests[0]["response_format"]["json_schema"]["schema"]["additionalProperties"] is False


def test_content_filter_is_not_retried(server):
    server.push(answer("", finish_reason="content_filter"))
    with pytest.raises(LLMRefused, match="content filter") as caught:
        extractor(server).extract(TITLE, TEXT)
    assert caught.value.for_good and server.calls == 1


def test_429_waits_as_long_as_retry_after_says(server):
    server.push(error(429, "slow down", {"Retry-After": "1"}), answer(good()))
    extractor(server).extract(TITLE, TEXT)
    assert server.calls == 2 and server.times[1] - server.times[0] >= 0.95


def test_500s_are_retried_with_backoff_then_give_up(server):
    server.push(error(500), error(502), answer(good()))
    assert len(extractor(server).extract(TITLE, TEXT).items) == 3
    server.push(error(503), error(500), error(500))
    with pytest.raises(LLMUnavailable, match="HTTP 500 after 3 tries"):
        extractor(server).extract(TITLE, TEXT)
    assert server.calls == 6


def test_a_timeout_is_retried(server):
    server.push(stall(3.0), answer(good()))
    assert len(extractor(server, timeout_s=0.5).extract(TITLE, TEXT).items) == 3
    assert server.calls == 2


def test_401_is_a_configuration_error_and_not_retried(server):
    server.push(error(401, "Incorrect API key provided"))
    with pytest.raises(LLMConfigError, match="HTTP 401") as caught:
        extractor(server).extract(TITLE, TEXT)
    assert caught.value.status == 401 and "Incorrect API key" in caught.value.message and server.calls == 1


def test_a_provider_rejecting_json_schema_gets_json_object_and_it_is_remembered(server):
    server.responder = rejecting({"json_schema"}, then=lambda request: answer(good()))
    first = extractor(server)
    extraction, name, _ = first.extract_named(TITLE, TEXT)
    assert [mode_of(r) for r in server.requests] == ["json_schema", "json_object"]
    assert "JSON schema" in server.requests[1]["messages"][0]["content"]
    assert len(extraction.items) == 3 and name.startswith("llm-map_v2-json_object:")
    assert remembered_mode(server.url, "scripted-model") == "json_object"
    extractor(server).extract(TITLE, TEXT)
    assert mode_of(server.requests[-1]) == "json_object" and server.calls == 3


def test_a_provider_without_response_format_gets_a_fenced_block(server):
    server.responder = rejecting({"json_schema", "json_object"})
    extraction, name, _ = extractor(server).extract_named(TITLE, TEXT)
    assert name.startswith("llm-map_v2-fenced:") and extraction.summary
    assert_valid(extraction)


def test_400_in_every_mode_is_a_configuration_error(server):
    server.responder = lambda request: error(400, "model 'nope' does not exist")
    with pytest.raises(LLMConfigError, match="does not exist"):
        extractor(server).extract(TITLE, TEXT)
    assert [mode_of(r) for r in server.requests] == ["json_schema", "json_object", "fenced"]
    assert remembered_mode(server.url, "scripted-model") is None


def test_realistic_answers_are_valid(server):
    server.responder = realistic
    extraction = extractor(server).extract(TITLE, TEXT)
    assert extraction.items
    assert_valid(extraction)


def test_a_context_length_refusal_halves_the_section_instead_of_pausing(server):
    server.push(error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."))
    server.responder = lambda request: answer(good())
    extraction, name, stats = extractor(server).extract_named(TITLE, TEXT * 4)
    assert stats.calls == 2 and server.calls == 3 and name.startswith("llm-map_v2-json_schema:")
    assert [mode_of(r) for r in server.requests] == ["json_schema"] * 3
    assert len(extraction.items) == 3


@pytest.mark.timing
def test_a_document_never_takes_longer_than_its_time_budget(server):
    server.responder = lambda request: stall(5.0)
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="model slow: no complete answer in"):
        extractor(server, timeout_s=1.0, document_budget_s=1.5, transport_attempts=10).extract(TITLE, TEXT)
    # 1 s, then at most the 0.5 s left: never 10 tries of 1 s. The calls prove it; the clock only
    # guards against a wait that ignores the budget, with room for a loaded machine.
    assert 1 <= server.calls <= 2
    assert time.monotonic() - started < 5.0


def test_reasoning_left_in_the_content_is_not_parsed_as_the_answer(server):
    server.push(answer("<think>The user wants {JSON}. Items: timer wheel...</think>\n" + json.dumps(good())))
    extraction, _, stats = extractor(server).extract_named(TITLE, TEXT)
    assert len(extraction.items) == 3 and stats.repaired == 0
