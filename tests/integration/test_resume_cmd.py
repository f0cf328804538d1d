"""``kbwiki resume --kb NAME [--reset-budget]`` as a user runs it: a spent budget is refused with
one line and exit 1 until the count is reset; a KB that is not paused says so."""

from __future__ import annotations

import uuid

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures)
from tests.integration.test_ingest_estimate import llm_env  # noqa: F401  (fixture)


def test_resume_refuses_a_spent_budget_until_reset_and_says_what_it_did(llm_env):  # noqa: F811
    deps, server, run = llm_env
    kb = deps.kbs.get_or_create(1, f"resume-{uuid.uuid4().hex[:6]}")
    deps.kbs.set_wiki_config(kb.id, {"llm": {"token_budget": 100}})
    deps.llm_usage.add(kb.id, "scripted", extractions=1, calls=1, prompt_tokens=90, completion_tokens=30)
    deps.llm_errors.record(
        kb.id, "f" * 16, 402, "the KB's token budget is spent: 120 of 100 tokens", None, "scripted", kind="budget"
    )

    refused = run("resume", "--kb", kb.name)
    assert refused.exit_code == 1
    assert "still spent (120 of 100 tokens)" in refused.output and "--reset-budget" in refused.output
    assert deps.llm_errors.get(kb.id) is not None

    done = run("resume", "--kb", kb.name, "--reset-budget")
    assert done.exit_code == 0, done.output
    assert f"token budget of {kb.name}: count reset from 120 tokens to 0" in done.stdout
    assert f"resumed {kb.name} (was paused for budget" in done.stdout
    assert deps.llm_errors.get(kb.id) is None and deps.llm_usage.budget_spent(kb.id) == 0

    again = run("resume", "--kb", kb.name)
    assert again.exit_code == 0 and f"{kb.name} was not paused" in again.stdout
    assert server.calls == 0
