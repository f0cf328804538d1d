"""``kbwiki ingest --estimate PATH``: the expected model calls, tokens and price, counted from the
files as ingest reads them, with no model call (the scripted server sees no request), no document
stored and no op queued; documents the KB already extracted are cache hits."""

from __future__ import annotations

import re
import uuid

import pytest
from click.testing import CliRunner

from actors.deps import get_deps, run_stage, set_deps
from kbwiki.cli import main
from stages.ingest import submit_document
from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures)
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM, realistic
from tests.support.pipeline import settle
from wiki.extract.llm.extractor import forget_modes, sections
from wiki.settings import get_settings

SHORT = "# Timers\n\nA kernel timer runs a function at a given time. The Timer Wheel keeps timers sorted.\n"
LONG = "# Workqueues\n\n" + "\n\n".join(
    f"Paragraph {i}: a workqueue runs deferred work in a kernel thread, and the Worker Pool holds the threads"
    f" that run the work items queued on it. Work item {i} waits for its turn." * 2
    for i in range(12)
)


@pytest.fixture()
def llm_env(pipeline_env, actors_broker, clean_db, monkeypatch, tmp_path):  # noqa: F811
    """The process-wide Deps and the commands configured for the LLM extractor on a scripted server
    (sections of 500 characters, prices set); yields ``(deps, server, run)``."""
    forget_modes()
    with ScriptedLLM(realistic) as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            KBWIKI_HOME=str(tmp_path / "home"),
            KBWIKI_LLM_INDEX_INTRO="false",  # this test counts the calls of map only
            KBWIKI_LLM_SECTION_CHARS="500",
            KBWIKI_LLM_PRICE_IN_PER_MTOK="1",
            KBWIKI_LLM_PRICE_OUT_PER_MTOK="2",
        )
        get_settings.cache_clear()
        set_deps(None)
        runner = CliRunner()
        yield get_deps(), server, lambda *argv: runner.invoke(main, list(argv), catch_exceptions=False)
        set_deps(None)
        get_settings.cache_clear()
    forget_modes()


def _number(pattern: str, text: str) -> int:
    return int(re.search(pattern, text).group(1))


def test_estimate_makes_no_call_stores_nothing_and_counts_what_ingest_then_spends(llm_env, tmp_path):
    deps, server, run = llm_env
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(SHORT)
    (folder / "b.md").write_text(LONG)
    (folder / "tiny.md").write_text("# T\n\nHi.\n")
    (folder / "blob.txt").write_bytes(b"\x00\x01binary\x00" * 20)
    kb = deps.kbs.get_or_create(1, f"estimate-{uuid.uuid4().hex[:6]}")
    run_stage(
        submit_document, deps, tenant_id=1, knowledge_base_id=kb.id, title="Timers", content=SHORT, source_uri="a.md"
    )
    settle(deps, kb)  # a.md extracted by the model: a cache hit for the estimate
    calls, documents = server.calls, deps.docs.count_by_status(kb.id)
    assert calls == 1 and documents == {"done": 1}

    result = run("ingest", str(folder), "--kb", kb.name, "--estimate")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "estimate for model scripted" in out
    assert "1 to extract, 1 already extracted (cache hits), 1 skipped, 1 rejected" in out
    # the reasons, as ingest prints them (new-user trial: the estimate only counted them)
    assert "rejected blob.txt: binary" in out and "skipped tiny.md:" in out
    estimated_calls = _number(r"calls: (\d+)", out)
    assert estimated_calls == len(sections(LONG.strip(), 500)) > 1
    prompt, completion = _number(r"tokens: (\d+) in", out), _number(r", (\d+) out", out)
    assert prompt > len(LONG) // 4 and completion > 0
    assert f"estimated price: ${(prompt + 2 * completion) / 1e6:.4f}" in out
    # No model call, no document stored, no op queued.
    assert server.calls == calls
    assert deps.docs.count_by_status(kb.id) == documents and deps.docs.find(kb.id, "b.md") is None
    with deps.pool.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM task_pending_ops").fetchone()["n"] == 0

    # Ingesting for real makes the calls the estimate counted (no answer was cut).
    assert run("ingest", str(folder), "--kb", kb.name).exit_code == 0
    settle(deps, kb)
    assert server.calls - calls == estimated_calls
    spent = sum(r.prompt_tokens for r in deps.llm_usage.for_kb(kb.id))
    print(f"prompt tokens: estimated {prompt}, reported by the server {spent} (a.md included)")


def test_estimate_for_a_kb_that_does_not_exist_creates_none(llm_env, tmp_path):
    deps, server, run = llm_env
    (tmp_path / "a.md").write_text(SHORT)
    name = f"new-{uuid.uuid4().hex[:6]}"
    result = run("ingest", str(tmp_path / "a.md"), "--kb", name, "--estimate")
    assert result.exit_code == 0, result.output
    assert "1 to extract, 0 already extracted" in result.stdout and "calls: 1 " in result.stdout
    assert deps.kbs.get_by_name(1, name) is None and server.calls == 0


def test_estimate_of_a_folder_without_a_document_fails_like_ingest(llm_env, tmp_path):
    _, server, run = llm_env
    (tmp_path / "empty").mkdir()
    result = run("ingest", str(tmp_path / "empty"), "--kb", "nothing-here", "--estimate")
    assert result.exit_code == 1 and "no .md/.rst/.txt/.html document" in result.output
    assert server.calls == 0
