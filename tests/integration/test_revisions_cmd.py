"""``kbwiki history`` and ``kbwiki revert`` through click's CliRunner on the test database
(``pipeline_env`` sets DATABASE_URL and REDIS_URL, so ``services()`` starts nothing)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.lanes import FINALIZE, SCOPE_KB
from wiki.models import Page, SourceRef


@pytest.fixture()
def run(clean_db, deps, tmp_path, monkeypatch):  # noqa: F811
    """Invoke ``kbwiki`` with arguments; returns click's Result (stdout and stderr apart)."""
    from middleware.logging import configure_logging

    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    configure_logging("INFO")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


@pytest.fixture()
def kb(deps):  # noqa: F811
    """KB ``notes`` of tenant 1 with the page ``widget`` at version 3, written by three writers."""
    kb = deps.kbs.get_or_create(1, "notes")
    docs = []
    for title in ("First", "Second"):
        doc, _ = deps.docs.upsert(kb, title=title, source_uri=f"{title}.md", content=f"{title} text " * 20)
        docs.append(SourceRef(knowledge_id=doc.id, title=title))
    for content, refs, by in (
        ("Widget, as the first guide says.\n", docs[:1], f"document:{docs[0].knowledge_id}"),
        ("Widget, as both guides say. [[gear|Gear]]\n", docs, "batch:2"),
        ("Widget, as both guides say. [[gear|Gear]] [[cog|Cog]]\n", docs, "crosslink"),
    ):
        page = Page(
            tenant_id=1,
            knowledge_base_id=kb.id,
            slug="widget",
            title="Widget",
            page_type="entity",
            content=content,
            source_refs=refs,
        )
        deps.pages.save(page, written_by=by)
    return kb


def test_history_lists_versions_newest_first_with_writer_size_and_sources(run, deps, kb):  # noqa: F811
    result = run("history", "--kb", "notes", "widget")
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["VERSION", "WRITTEN", "AT", "WRITTEN", "BY", "SIZE", "SOURCES"]
    cells = [row.split() for row in rows]
    assert [c[0] for c in cells] == ["3", "2", "1"] and cells[0][1] == "current"
    assert [c[-3] for c in cells] == ["crosslink", "batch:2", f"document:{kb_doc(deps, kb, 'First')}"]
    assert [c[-1] for c in cells] == ["2", "2", "1"]
    assert cells[2][-2] == str(len("Widget, as the first guide says.\n"))

    report = json.loads(run("history", "--kb", "notes", "widget", "--json").stdout)
    assert [(v["version"], v["current"], v["written_by"]) for v in report["versions"]] == [
        (3, True, "crosslink"),
        (2, False, "batch:2"),
        (1, False, f"document:{kb_doc(deps, kb, 'First')}"),
    ]
    assert report["more"] is False and report["knowledge_base"]["name"] == "notes"
    limited = run("history", "--kb", "notes", "widget", "--limit", "1").stdout.splitlines()
    assert len(limited) == 4 and limited[-1] == "older versions not shown: kbwiki history --kb notes widget --limit 2"


def kb_doc(deps, kb, title: str) -> str:  # noqa: F811
    return deps.docs.find(kb.id, f"{title}.md").id


def test_revert_writes_the_old_version_as_a_new_one(run, deps, kb):  # noqa: F811
    result = run("revert", "--kb", "notes", "widget", "1")
    assert result.exit_code == 0, result.output
    assert result.stdout == "reverted widget to version 1: it is version 4 now (cross-linking queued)\n"
    page = deps.pages.get(kb.id, "widget")
    assert page.content == "Widget, as the first guide says.\n" and [r.title for r in page.source_refs] == ["First"]
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 1
    rows = run("history", "--kb", "notes", "widget").stdout.splitlines()[1:]
    assert rows[0].split()[:2] == ["4", "current"] and rows[0].split()[-3] == "revert:1"


@pytest.mark.parametrize(
    ("argv", "error", "code"),
    [
        (["--kb", "Notes", "widget", "1"], "Error: no knowledge base named 'Notes' for tenant 1; did you mean", 1),
        (["--kb", "notes", "--tenant", "2", "widget", "1"], "Error: no knowledge base named 'notes' for tenant 2", 1),
        (["--kb", "notes", "gizmo", "1"], "Error: no live page 'gizmo' in knowledge base 'notes'", 1),
        (
            ["--kb", "notes", "widget", "9"],
            "Error: page 'widget' has no kept version 9; its kept versions are 3 (current), 2, 1",
            1,
        ),
        (["--kb", "notes", "widget", "3"], "Error: version 3 is the current version of 'widget': nothing to revert", 1),
        (["--kb", "notes", "widget", "0"], "Error: Invalid value for 'VERSION'", 2),
        (["--kb", "notes", "widget", "two"], "Error: Invalid value for 'VERSION'", 2),
    ],
)
def test_revert_refusals_are_one_line_and_write_nothing(run, deps, kb, argv, error, code):  # noqa: F811
    result = run("revert", *argv)
    assert result.exit_code == code, result.output
    assert error in result.stderr and "Traceback" not in result.output
    page = deps.pages.get(kb.id, "widget")
    assert page.version == 3 and "[[cog|Cog]]" in page.content
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 0


def test_history_of_an_unknown_page_is_one_line(run, kb):  # noqa: F811
    result = run("history", "--kb", "notes", "gizmo")
    assert result.exit_code == 1
    assert result.stderr.strip().endswith("Error: no live page 'gizmo' in knowledge base 'notes'")
