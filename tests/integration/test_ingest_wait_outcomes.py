"""How ``kbwiki ingest --wait`` ends when the wiki cannot be complete (new-user trial): a KB whose
model work is paused ends the wait at once with how to resume, and failed documents end it with
exit 1 instead of a silent success."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

import kbwiki.ingest as ingest_module
from actors.deps import run_stage
from kbwiki.cli import main
from kbwiki.command import lanes_timeout
from stages.map import map_document
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.lanes import INGEST, SCOPE_KB, WIKI_LANES


@pytest.mark.timeout(60)  # a wait that ignored the pause would run into its 600 s timeout
def test_a_wait_on_a_paused_kb_ends_without_its_timeout_and_says_how_to_resume(deps, clean_db, monkeypatch):  # noqa: F811
    monkeypatch.setattr(ingest_module, "PAUSED_GIVE_UP_S", 0.5)
    monkeypatch.setattr(ingest_module, "POLL_S", 0.05)
    kb = deps.kbs.get_or_create(1, f"paused-{uuid.uuid4().hex[:6]}")
    deps.ops.enqueue(tenant_id=1, task_type=INGEST, scope=SCOPE_KB, scope_id=kb.id, op="ingest", dedup_key="k1")
    deps.llm_errors.record(kb.id, "fp", 402, "Insufficient Balance", None, "m", kind="credit")
    assert ingest_module.wait_for_lanes(deps, kb, 1, 600, progress=False) is False
    message = str(lanes_timeout(deps, kb, kb.name, 600))
    assert "paused for credit" in message and f"kbwiki resume --kb {kb.name}" in message
    assert "after 600 s" not in message


def test_ingest_wait_exits_1_naming_the_failed_documents(pipeline_env, deps, clean_db, tmp_path: Path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))
    name = f"failed-{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "docs"
    folder.mkdir()
    for bird in ("Plover", "Curlew"):
        text = f"# {bird}\n\nThe {bird} is a bird of the shore. It feeds on insects and small fish.\n"
        (folder / f"{bird}.md").write_text(text)
    assert CliRunner().invoke(main, ["ingest", str(folder), "--kb", name]).exit_code == 0
    kb = deps.kbs.get_by_name(1, name)
    docs = {uri: deps.docs.find(kb.id, uri).id for uri in ("Plover.md", "Curlew.md")}
    # the worker failed Plover for good and wrote Curlew; nothing is left in the lanes
    deps.docs.set_status([docs["Plover.md"]], "failed", "extraction failed 6 times")
    [curlew_op] = [op for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100) if op.dedup_key == docs["Curlew.md"]]
    assert run_stage(map_document, deps, 1, kb.id, docs["Curlew.md"], curlew_op.id) == "mapped"  # cached now
    deps.docs.set_status([docs["Curlew.md"]], "done")
    for lane in WIKI_LANES:
        deps.ops.delete_by_ids([op.id for op in deps.ops.peek(lane, SCOPE_KB, kb.id, 100)])
    (folder / "Plover.md").unlink()  # Curlew.md is left unchanged: nothing queued
    out = CliRunner().invoke(main, ["ingest", str(folder), "--kb", name, "--wait", "--timeout", "30"])
    assert out.exit_code == 1, out.output
    assert f"1 document(s) of '{name}' failed" in out.output and "kbwiki status --kb" in out.output
