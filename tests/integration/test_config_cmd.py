"""``kbwiki config`` as a user runs it on the test database: it shows a KB's own settings, changes
them all or nothing, and the workers' view of the KB (``kb_tunables``, the model override) follows."""

from __future__ import annotations

import uuid

from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from tests.integration.test_list_cmd import run  # noqa: F401  (fixture)
from wiki.settings import kb_tunables


def test_config_shows_sets_and_unsets_a_kbs_own_settings(run, deps):  # noqa: F811
    kb = deps.kbs.get_or_create(1, f"config-{uuid.uuid4().hex[:6]}")
    shown = run("config", "--kb", kb.name)
    assert shown.exit_code == 0 and "has no settings of its own" in shown.stdout

    done = run("config", "--kb", kb.name, "--set", "ingest_batch_size=7", "--set", "llm.api_key=sk-abcdefgh12345")
    assert done.exit_code == 0, done.output
    assert "ingest_batch_size = 7" in done.stdout and 'llm.api_key = "****2345"' in done.stdout
    assert "sk-abcdefgh" not in done.output
    live = deps.kbs.get(kb.id)
    assert kb_tunables(deps.settings, live).batch_size == 7
    assert live.wiki_config.llm.api_key == "sk-abcdefgh12345"

    undone = run("config", "--kb", kb.name, "--unset", "ingest_batch_size", "--unset", "llm.api_key")
    assert undone.exit_code == 0 and "has no settings of its own" in undone.stdout
    assert kb_tunables(deps.settings, deps.kbs.get(kb.id)).batch_size == deps.settings.ingest_batch_size


def test_a_refused_change_says_why_and_stores_nothing(run, deps):  # noqa: F811
    kb = deps.kbs.get_or_create(1, f"config-{uuid.uuid4().hex[:6]}")
    run("config", "--kb", kb.name, "--set", "ingest_batch_size=7")
    refused = run("config", "--kb", kb.name, "--set", "link_defer_s=1", "--set", "ingest_map_parallel=0")
    assert refused.exit_code == 2
    assert "ingest_map_parallel: Input should be greater than or equal to 1 (got 0)" in refused.output
    assert deps.kbs.get(kb.id).wiki_config.model_dump(exclude_none=True) == {"ingest_batch_size": 7}
    # a value jsonb refuses is refused before the write, and no error repeats the key
    secret = run(
        "config", "--kb", kb.name, "--set", "llm.api_key=sk-never-shown-1234", "--set", 'llm.extra_body={"a": NaN}'
    )
    assert secret.exit_code == 2 and "llm.extra_body: NaN" in secret.output
    assert "sk-never-shown" not in secret.output and "Traceback" not in secret.output
    unknown = run("config", "--kb", kb.name + "x", "--set", "ingest_batch_size=3")
    assert unknown.exit_code == 1 and "did you mean" in unknown.output
