"""``kbwiki ingest --estimate PATH``: the expected model calls, tokens and price, counted from the
files as ingest reads them, with no model call (the scripted server sees no request), no document
stored and no op queued; documents the KB already extracted are cache hits. Extraction, merge and
(when ``page_leads`` / ``index_intro`` are on) page-lead and index-introduction calls are shown apart
and summed."""

from __future__ import annotations

import dataclasses
import re
import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.corpus import CorpusDoc
from kbwiki.estimate import LEAD_CALLS_PER_DOCUMENT, MERGE_CALLS_PER_DOCUMENT, estimate_docs, intro_call_sizes
from stages.deps import get_deps, set_deps
from stages.ingest import submit_document
from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures)
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM, is_intro_request, is_merge_request, realistic
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
            KBWIKI_LLM_PAGE_LEADS="false",
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


def _kinds(text: str) -> dict[str, tuple[int, int, int]]:
    """The per-kind lines of the estimate: name -> (calls, tokens in, tokens out)."""
    found = re.findall(r"^  ([a-z ]+): (?:about )?(\d+) calls?, (\d+) tokens? in, (\d+) out \(", text, re.M)
    return {name: (int(c), int(i), int(o)) for name, c, i, o in found}


def _totals_are_sums(out: str) -> dict[str, tuple[int, int, int]]:
    kinds = _kinds(out)
    assert _number(r"(?m)^calls: (?:about )?(\d+) in all", out) == sum(k[0] for k in kinds.values())
    assert _number(r"tokens: (\d+) in", out) == sum(k[1] for k in kinds.values())
    assert _number(r"tokens: \d+ in \([^)]*\), (\d+) out", out) == sum(k[2] for k in kinds.values())
    return kinds


def test_estimate_makes_no_call_stores_nothing_and_counts_what_ingest_then_spends(llm_env, tmp_path):
    deps, server, run = llm_env
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(SHORT)
    (folder / "b.md").write_text(LONG)
    (folder / "tiny.md").write_text("# T\n\nHi.\n")
    (folder / "blob.txt").write_bytes(b"\x00\x01binary\x00" * 20)
    kb = deps.kbs.get_or_create(1, f"estimate-{uuid.uuid4().hex[:6]}")
    submit_document(deps, tenant_id=1, knowledge_base_id=kb.id, title="Timers", content=SHORT, source_uri="a.md")
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
    kinds = _totals_are_sums(out)
    assert list(kinds) == ["extraction", "merge"]  # the fixture turns the index intro off
    estimated_calls = kinds["extraction"][0]
    assert estimated_calls == len(sections(LONG.strip(), 500)) > 1
    assert kinds["merge"] == (0, 0, 0)  # about 0.08 per document: 0 for one document
    assert "merge: about 0 calls" in out and f"about {MERGE_CALLS_PER_DOCUMENT} per document" in out
    prompt, completion = _number(r"tokens: (\d+) in", out), _number(r"tokens: \d+ in \([^)]*\), (\d+) out", out)
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
    made = server.requests[calls:]
    assert sum(not is_merge_request(r) and not is_intro_request(r) for r in made) == estimated_calls
    assert not any(is_intro_request(r) for r in made)
    spent = sum(r.prompt_tokens for r in deps.llm_usage.for_kb(kb.id))
    print(f"prompt tokens: estimated {prompt}, reported by the server {spent} (a.md included)")


def test_estimate_for_a_kb_that_does_not_exist_creates_none(llm_env, tmp_path):
    deps, server, run = llm_env
    (tmp_path / "a.md").write_text(SHORT)
    name = f"new-{uuid.uuid4().hex[:6]}"
    result = run("ingest", str(tmp_path / "a.md"), "--kb", name, "--estimate")
    assert result.exit_code == 0, result.output
    assert "1 to extract, 0 already extracted" in result.stdout and "calls: 1 in all," in result.stdout
    assert _totals_are_sums(result.stdout)["extraction"][0] == 1
    assert deps.kbs.get_by_name(1, name) is None and server.calls == 0


def test_estimate_of_a_folder_without_a_document_fails_like_ingest(llm_env, tmp_path):
    _, server, run = llm_env
    (tmp_path / "empty").mkdir()
    result = run("ingest", str(tmp_path / "empty"), "--kb", "nothing-here", "--estimate")
    assert result.exit_code == 1 and "no .md/.rst/.txt/.html document" in result.output
    assert server.calls == 0


def _docs(n: int) -> list[CorpusDoc]:
    return [CorpusDoc(f"Timers {i}", f"t{i}.md", SHORT.replace("Timers", f"Timers {i}")) for i in range(n)]


def test_estimate_counts_merge_calls_at_their_measured_rate_and_sums_every_kind(llm_env):
    deps, server, _ = llm_env
    estimate = estimate_docs(deps, None, _docs(25))
    data = estimate.as_dict()
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert list(kinds) == ["extraction", "merge"]
    assert kinds["extraction"]["calls"] == 25 and not kinds["extraction"]["about"]
    assert kinds["merge"]["calls"] == 2 and kinds["merge"]["about"]  # 25 x 0.08
    # a typical merge prompt: 2 items x 2 candidates of 200-character lines and the schema
    assert kinds["merge"]["prompt_tokens"] > 2 * 6 * 200 // 4
    assert 0 < kinds["merge"]["completion_tokens"] < kinds["merge"]["prompt_tokens"]
    for total in ("calls", "prompt_tokens", "completion_tokens"):
        assert data[total] == sum(k[total] for k in kinds.values())
    assert server.calls == 0


def test_estimate_counts_page_lead_calls_only_when_page_leads_are_on(llm_env):
    deps, server, _ = llm_env
    on_settings = deps.settings.model_copy(update={"llm_page_leads": True})
    on = estimate_docs(dataclasses.replace(deps, settings=on_settings), None, _docs(25))
    [leads] = [k for k in on.kinds if k.name == "page leads"]
    assert leads.about and leads.calls == int(25 * LEAD_CALLS_PER_DOCUMENT + 0.5)
    # a full call: 8 pages of 4 contribution lines of about 360 characters, and the schema
    assert leads.prompt_tokens >= leads.calls * 8 * 4 * 360 // 4
    assert 0 < leads.completion_tokens < leads.prompt_tokens
    assert "page leads: about 3 calls" in on.describe()
    off = estimate_docs(deps, None, _docs(25))
    assert "page leads" not in [k.name for k in off.kinds] and on.calls == off.calls + leads.calls
    assert server.calls == 0


def test_estimate_counts_index_intro_calls_only_when_index_intro_is_on(llm_env, monkeypatch, tmp_path):
    deps, server, run = llm_env
    docs = _docs(120)
    off = estimate_docs(deps, None, docs)
    assert "index intro" not in [k.name for k in off.kinds]

    on_settings = deps.settings.model_copy(update={"llm_index_intro": True, "ingest_batch_size": 50})
    on = estimate_docs(dataclasses.replace(deps, settings=on_settings), None, docs)
    intro = on.kinds[-1]
    # batches of 50 (the default): written at 50 and at 100 (50 < 3/4 of 100), not at 120 (100 >= 90)
    assert (intro.name, intro.calls, intro.about) == ("index intro", 2, True)
    assert intro_call_sizes(120, 50) == [50, 100]
    # each prompt lists its summaries (title + 240 characters): 150 lines of at least 240 characters
    assert intro.prompt_tokens > 150 * 240 // 4 and intro.completion_tokens > 0
    assert on.calls == off.calls + 2 and on.prompt_tokens == off.prompt_tokens + intro.prompt_tokens
    assert on.as_dict()["calls"] == sum(k.calls for k in on.kinds)
    # the KB's batch size decides when the rule is checked: smaller batches, more calls under 200
    small = dataclasses.replace(deps, settings=on_settings.model_copy(update={"ingest_batch_size": 5}))
    assert estimate_docs(small, None, docs).kinds[-1].calls == len(intro_call_sizes(120, 5)) > 2

    # The command line: the intro line is there when KBWIKI_LLM_INDEX_INTRO is on, and counted.
    (tmp_path / "a.md").write_text(SHORT)
    (tmp_path / "b.md").write_text(LONG)
    monkeypatch.setenv("KBWIKI_LLM_INDEX_INTRO", "true")
    get_settings.cache_clear()
    set_deps(None)
    name = f"intro-{uuid.uuid4().hex[:6]}"
    out = run("ingest", str(tmp_path), "--kb", name, "--estimate").stdout
    kinds = _totals_are_sums(out)
    assert list(kinds) == ["extraction", "merge", "index intro"] and kinds["index intro"][0] == 1
    assert "index intro: about 1 call," in out and "3/4 of the 200 most recent summaries" in out
    assert server.calls == 0
    # ingesting for real writes the introduction (one call per index rebuild that finds it stale)
    assert run("ingest", str(tmp_path), "--kb", name).exit_code == 0
    settle(get_deps(), get_deps().kbs.get_by_name(1, name))
    assert sum(is_intro_request(r) for r in server.requests) >= 1


def test_intro_calls_follow_the_stale_rule():
    # an empty KB, batches of 50: 50, 100, 150, then one per 100 new documents past 200
    assert intro_call_sizes(1000, 50) == [50, 100, 150] + [200] * 8
    assert intro_call_sizes(12, 50) == [12] and intro_call_sizes(0, 50) == []
    # a KB whose intro was written from its 200 recent summaries: 50 new ones keep 150 (3/4)
    recent = [f"s{i}" for i in range(200)]
    assert intro_call_sizes(50, 50, recent, recent) == []
    assert intro_call_sizes(51, 1, recent, recent) == [200]
    assert intro_call_sizes(1, 50, recent, None) == [200]  # no intro yet: the first rebuild writes one
