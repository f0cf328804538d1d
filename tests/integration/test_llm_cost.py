"""Cost with the LLM extractor, through the scripted OpenAI-compatible server (real HTTP, the real
SDK) and the test database: an account out of credit pauses the KB after one request and spends
no retry, ``resume`` lets it continue at once, a token budget pauses it, and the usage counters
equal the tokens the server reported, or, where it reported none or an implausible count, the
tokens counted with a tokenizer, marked estimated, on which budgets act all the same."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from kbwiki.command import lanes_timeout
from kbwiki.status import kb_status, status_lines
from stages.map import map_document
from stages.resume import resume_kb
from tests.e2e.conftest import wait_until
from tests.integration.test_llm_map import DOCS, _ops, new_kb, submit
from tests.support.llm_deps import ingest_op, scripted_llm_deps
from tests.support.llm_server import answer, realistic, with_usage
from tests.support.pipeline import settle
from wiki.errors import LLMOutOfCredit, ResumeRefused
from wiki.extract.llm import tokens
from wiki.extract.llm.client import ChatClient
from wiki.lanes import INGEST, SCOPE_KB
from wiki.llm_config import LLMConfig

QUOTA = "You exceeded your current quota, please check your plan and billing details."


def credit_error(status: int, message: str, code: str | None = None, headers: dict | None = None) -> dict:
    """An error in OpenAI's shape with ``code`` and ``type`` set (OpenAI's out-of-quota 429)."""
    return {
        "status": status,
        "headers": headers or {},
        "json": {"error": {"message": message, "type": code or "invalid_request_error", "code": code}},
    }


@pytest.fixture()
def cost_deps(settings, clean_db, server):  # noqa: F811
    """Deps on the scripted server with the default five transport tries (a retry would show) and a
    pause recheck far longer than any test: only ``resume`` or a configuration change wakes a KB."""

    def make(**changes):
        slow = {"llm_timeout_s": 5.0, "llm_transport_attempts": 5, "llm_pause_s": 600.0}
        return scripted_llm_deps(settings, clean_db, server.url, **{**slow, **changes})

    return make


def _map_all(deps, kb, ids):
    deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    return [map_document(1, kb.id, knowledge_id, op.id, deps) for knowledge_id, op in _ops(deps, kb, ids)]


@pytest.mark.parametrize(
    ("response", "credit", "requests"),
    [
        (credit_error(429, QUOTA, "insufficient_quota"), True, 1),  # OpenAI
        (credit_error(402, "Insufficient credits. Add more using https://example.org/credits"), True, 1),
        (credit_error(400, "Your credit balance is too low to access the API."), True, 1),  # a 400 in words
        (credit_error(403, "Billing is not active for this project."), True, 1),
        # Gemini's and Azure's per-minute limits use quota words under a 429: a wait clears them.
        (credit_error(429, QUOTA + " For more information head to the rate-limits page."), False, 2),
        (credit_error(429, "Rate limit reached for requests", headers={"Retry-After": "0"}), False, 2),
    ],
)
def test_out_of_credit_in_any_of_the_providers_words_is_not_retried(server, response, credit, requests):  # noqa: F811
    server.push(response).responder = lambda request: answer("{}")
    client = ChatClient(LLMConfig(base_url=server.url, model="m", api_key="k", retry_max_wait_s=0.1))
    messages = [{"role": "user", "content": "hi"}]
    if credit:
        with pytest.raises(LLMOutOfCredit) as caught:
            client.complete(messages, "json_object", {})
        assert caught.value.kind == "credit" and caught.value.status == response["status"]
    else:
        assert client.complete(messages, "json_object", {}).content == "{}"
    assert server.calls == requests


def test_429_insufficient_quota_pauses_the_kb_after_exactly_one_request(cost_deps, server):  # noqa: F811
    deps = cost_deps()
    server.responder = lambda request: credit_error(429, QUOTA, "insufficient_quota")
    kb = new_kb(deps)
    ids = submit(deps, kb)
    with capture_logs() as logs:
        assert _map_all(deps, kb, ids) == ["paused", "paused"]
    assert server.calls == 1  # no transport retry, and the second document saw the pause
    row = deps.llm_errors.get(kb.id)
    assert row.kind == "credit" and row.status == 429 and "exceeded your current quota" in row.message
    [event] = [e for e in logs if e["event"] == "llm.out_of_credit"]
    assert "kbwiki resume --kb NAME" in event["resume"] and event["status"] == 429
    report = kb_status(deps, kb)
    assert report["llm_paused"]["kind"] == "credit" and f"--kb {kb.name}" in report["llm_paused"]["resume"]
    [line] = [line for line in status_lines(report) if line.startswith("model paused")]
    assert line.startswith("model paused for credit: HTTP 429") and f"kbwiki resume --kb {kb.name}" in line
    assert all(op.fail_count == 0 and op.not_before is not None for _, op in _ops(deps, kb, ids))
    assert deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0
    timed_out = str(lanes_timeout(deps, kb, kb.name, 5))  # what `ingest --wait` ends with
    assert "paused for credit (HTTP 429" in timed_out and f"kbwiki resume --kb {kb.name}" in timed_out


def test_402_pauses_and_resume_lets_every_document_finish_with_its_retries_unspent(cost_deps, server):  # noqa: F811
    deps = cost_deps()
    server.responder = lambda request: credit_error(402, "Insufficient Balance")
    kb = new_kb(deps)
    ids = submit(deps, kb)
    assert _map_all(deps, kb, ids) == ["paused", "paused"]
    assert server.calls == 1
    assert deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300) == []  # waiting out llm_pause_s (600 s)

    server.responder = realistic  # credit added at the provider
    result = resume_kb(1, kb.id, deps)
    assert result.pause.kind == "credit" and result.woken == 2
    assert deps.llm_errors.get(kb.id) is None
    claimed = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    assert len(claimed) == 2 and all(op.fail_count == 0 for op in claimed)
    outcomes = [map_document(1, kb.id, op.dedup_key, op.id, deps) for op in claimed]
    assert outcomes == ["mapped", "mapped"]
    settle(deps, kb)
    assert deps.docs.count_by_status(kb.id) == {"done": 2}
    assert deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0
    assert server.calls == 3  # the refused one and one per document: nothing retried
    assert not any(line.startswith("model paused") for line in status_lines(kb_status(deps, kb)))
    assert resume_kb(1, kb.id, deps).pause is None  # idempotent


def test_usage_counters_equal_the_tokens_the_server_reported_and_count_cache_hits(cost_deps, server):  # noqa: F811
    deps = cost_deps(llm_price_in_per_mtok=0.15, llm_price_out_per_mtok=0.6)
    reported = []

    def respond(request):
        response = realistic(request)
        reported.append(response["json"]["usage"])
        return response

    server.responder = respond
    kb = new_kb(deps)
    ids = submit(deps, kb)
    with capture_logs() as logs:
        settle(deps, kb)
    prompt = sum(u["prompt_tokens"] for u in reported)
    completion = sum(u["completion_tokens"] for u in reported)
    assert prompt > 0 and completion > 0 and len(reported) == server.calls == 2
    [row] = deps.llm_usage.for_kb(kb.id)
    assert (row.model, row.extractions, row.calls, row.prompt_tokens, row.completion_tokens, row.cache_hits) == (
        "scripted-model",
        2,
        2,
        prompt,
        completion,
        0,
    )
    usage = [e for e in logs if e["event"] == "llm.usage"]
    assert sorted(e["knowledge_id"] for e in usage) == sorted(ids.values())
    assert sum(e["prompt_tokens"] for e in usage) == prompt and all(e["estimated_usd"] > 0 for e in usage)

    doc = deps.docs.get(ids["timers.md"])  # the same content again: served from the cache
    op = ingest_op(deps, kb, doc)
    assert map_document(1, kb.id, doc.id, op.id, deps) == "cached"
    assert server.calls == 2
    report = kb_status(deps, kb)["llm_usage"]
    model = report["models"]["scripted-model"]
    assert model["cache_hits"] == 1 and model["calls"] == 2 and model["prompt_tokens"] == prompt
    assert model["estimated_usd"] == pytest.approx((prompt * 0.15 + completion * 0.6) / 1e6, abs=1e-6)
    assert report["total"]["estimated_usd"] == model["estimated_usd"] and report["token_budget"] is None


def test_unknown_price_is_shown_as_unknown_never_as_free(cost_deps, server):  # noqa: F811
    deps = cost_deps()
    server.responder = realistic
    kb = new_kb(deps)
    submit(deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(deps, kb)
    report = kb_status(deps, kb)
    assert report["llm_usage"]["models"]["scripted-model"]["estimated_usd"] is None
    [line] = [line for line in status_lines(report) if line.startswith("model usage")]
    assert "1 extraction, 1 call, " in line and "price unknown" in line


def test_failed_extractions_count_their_tokens_too(cost_deps, server):  # noqa: F811
    deps = cost_deps()
    server.responder = lambda request: answer("not JSON at all", usage=(100, 7))
    kb = new_kb(deps)
    submit(deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(deps, kb)
    [row] = deps.llm_usage.for_kb(kb.id)
    # "extractions" counts only successes: the two failed tries are failures, their tokens still spent
    assert (row.extractions, row.failures, row.calls, row.prompt_tokens, row.completion_tokens) == (0, 2, 2, 200, 14)
    [line] = [line for line in status_lines(kb_status(deps, kb)) if line.startswith("model usage")]
    assert line.startswith("model usage scripted-model: 0 extractions (2 failed tries), 2 calls, 200 tokens in")


def test_a_spent_token_budget_pauses_the_kb_before_the_next_call(cost_deps, server):  # noqa: F811
    deps = cost_deps(llm_token_budget=500)
    server.responder = lambda request: answer(
        realistic(request)["json"]["choices"][0]["message"]["content"], usage=(300, 100)
    )
    kb = new_kb(deps)
    three = {**DOCS, "third.md": ("Third", DOCS["timers.md"][1].replace("timer", "alarm"))}
    ids = submit(deps, kb, three)
    with capture_logs() as logs:
        outcomes = _map_all(deps, kb, ids)
    # 400 tokens after the first document (< 500): the second runs and spends 400 more; the third waits.
    assert outcomes == ["mapped", "mapped", "paused"] and server.calls == 2
    assert deps.llm_usage.budget_spent(kb.id) == 800
    row = deps.llm_errors.get(kb.id)
    assert row.kind == "budget" and "800 of 500 tokens" in row.message
    assert [e["reason"] for e in logs if e["event"] == "llm.paused"] == ["budget"]
    lines = status_lines(kb_status(deps, kb))
    assert any(line.startswith("model paused: the KB's token budget is spent") for line in lines)
    assert "token budget: 800 of 500 tokens spent" in lines
    with pytest.raises(ResumeRefused, match="still spent"):
        resume_kb(1, kb.id, deps)
    assert deps.llm_errors.get(kb.id) is not None  # refused: nothing changed

    result = resume_kb(1, kb.id, deps, reset_budget=True)
    assert result.budget_reset_from == 800 and result.pause.kind == "budget" and result.woken == 1
    assert deps.llm_usage.budget_spent(kb.id) == 0
    assert deps.llm_usage.for_kb(kb.id)[0].tokens == 800  # the totals stay
    [op] = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)
    assert map_document(1, kb.id, op.dedup_key, op.id, deps) == "mapped"
    assert server.calls == 3


def test_raising_the_budget_resumes_the_kb_by_itself(cost_deps, server):  # noqa: F811
    deps = cost_deps(llm_token_budget=1, llm_pause_s=0.2)
    server.responder = lambda request: answer(
        realistic(request)["json"]["choices"][0]["message"]["content"], usage=(10, 10)
    )
    kb = new_kb(deps)
    ids = submit(deps, kb)
    assert _map_all(deps, kb, ids) == ["mapped", "paused"]
    deps.kbs.set_wiki_config(kb.id, {"llm": {"token_budget": 1000}})
    claimed = []
    wait_until(
        lambda: claimed.extend(deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300)) or claimed,
        10,
        "the paused op claimable again after llm_pause_s",
    )
    assert [map_document(1, kb.id, op.dedup_key, op.id, deps) for op in claimed] == ["mapped"]
    settle(deps, kb)
    assert deps.docs.count_by_status(kb.id) == {"done": 2} and server.calls == 2
    assert deps.llm_errors.get(kb.id) is None


PRICED = {"llm_price_in_per_mtok": 0.15, "llm_price_out_per_mtok": 0.6}


def _prompt_tokens(llm) -> int:
    """The tokenizer's count of every prompt the server received."""
    return sum(tokens.prompt_tokens(r["messages"]) for r in llm.requests)


def test_without_usage_tokens_are_counted_marked_estimated_and_a_budget_trips(cost_deps, server):  # noqa: F811
    """A server that sends no ``usage``: the tokens are counted with the tokenizer (status says
    estimated, the price is not $0) and a 3,000-token budget pauses the KB (it never tripped)."""
    deps = cost_deps(llm_token_budget=3000, **PRICED)
    server.responder = lambda request: with_usage(realistic(request), None)
    kb = new_kb(deps)
    docs = {f"doc{i}.md": (f"Timers {i}", DOCS["timers.md"][1] + f" Part {i}.") for i in range(8)}
    ids = submit(deps, kb, docs)
    outcomes = _map_all(deps, kb, ids)
    assert "paused" in outcomes and outcomes.count("mapped") == server.calls >= 1
    [row] = deps.llm_usage.for_kb(kb.id)
    assert row.prompt_tokens == _prompt_tokens(server) and row.completion_tokens > 0
    assert row.estimated_tokens == row.tokens >= 3000
    assert deps.llm_errors.get(kb.id).kind == "budget"
    report = kb_status(deps, kb)
    assert report["llm_usage"]["models"]["scripted-model"]["estimated_usd"] > 0
    [line] = [line for line in status_lines(report) if line.startswith("model usage")]
    assert f"({row.tokens} of them estimated: the server gave no usable count)" in line


@pytest.mark.parametrize("reported", [10**19, 10**12, -5])
def test_implausible_usage_is_replaced_by_the_count_and_the_answer_kept(cost_deps, server, reported):  # noqa: F811
    """A usage larger than the request could be (1e19 overflowed the column and threw the answer
    away; 1e12 was taken as given, $3,000,000) or negative is replaced by the tokenizer's count."""
    deps = cost_deps(**PRICED)
    usage = {"prompt_tokens": reported, "completion_tokens": reported, "total_tokens": 2 * reported}
    server.responder = lambda request: with_usage(realistic(request), usage)
    kb = new_kb(deps)
    submit(deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(deps, kb)
    assert deps.docs.count_by_status(kb.id) == {"done": 1}  # the answer was kept
    [row] = deps.llm_usage.for_kb(kb.id)
    assert (row.extractions, row.failures) == (1, 0)
    assert row.prompt_tokens == _prompt_tokens(server) and row.estimated_tokens == row.tokens < 20_000
    assert kb_status(deps, kb)["llm_usage"]["total"]["estimated_usd"] < 0.01


def test_an_answer_without_choices_still_counts_the_usage_it_reports(cost_deps, server):  # noqa: F811
    empty = with_usage(
        answer("{}", usage=(120, 0)), {"prompt_tokens": 120, "completion_tokens": 0, "total_tokens": 120}
    )
    empty["json"]["choices"] = []
    server.responder = lambda request: empty
    deps = cost_deps()
    kb = new_kb(deps)
    submit(deps, kb, {"timers.md": DOCS["timers.md"]})
    settle(deps, kb)
    [row] = deps.llm_usage.for_kb(kb.id)
    assert row.calls == server.calls == 2 and row.prompt_tokens == 240 and row.estimated_tokens == 0
