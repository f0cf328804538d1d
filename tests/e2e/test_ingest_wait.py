"""``kbwiki ingest --wait`` returns when the wiki is complete: an export right after it has the
index page listing every document (it once returned when the ingest lane emptied, before the
index was rebuilt)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.workers import start_workers, stop_workers

pytestmark = pytest.mark.e2e

TOPICS = ["Kestrel", "Heron", "Osprey", "Plover", "Curlew", "Godwit", "Dunlin", "Avocet"]


def test_export_right_after_ingest_wait_has_the_complete_index(pipeline_env, deps, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))
    folder = tmp_path / "docs"
    folder.mkdir()
    for topic in TOPICS:
        (folder / f"{topic.lower()}.md").write_text(
            f"# {topic}\n\nThe {topic} is a bird of the shore. The {topic} feeds on insects and small fish.\n"
        )
    name = f"wait-{uuid.uuid4().hex[:6]}"
    workers = start_workers(1, 4, tmp_path / "worker.log")
    runner = CliRunner()
    try:
        result = runner.invoke(
            main, ["ingest", str(folder), "--kb", name, "--wait", "--timeout", "180"], catch_exceptions=False
        )
        assert result.exit_code == 0, result.output
        out = tmp_path / "vault"
        assert runner.invoke(main, ["export", "--kb", name, str(out)], catch_exceptions=False).exit_code == 0
    finally:
        stop_workers(workers)
    index = (out / "index.md").read_text()
    for topic in TOPICS:
        assert f"doc-{topic.lower()}" in index, topic
    kb = deps.kbs.get_by_name(1, name)
    assert sum(deps.ops.counts_by_lane("knowledge_base", kb.id).values()) == 0
