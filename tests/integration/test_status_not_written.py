"""``kbwiki status`` says why documents were skipped or failed, on the test database.

A new-user trial saw ``documents: skipped=1`` and no way to learn the reason short of SQL. The
status now lists up to 10 skipped or failed documents with their stored reason; the JSON has them
as a list. DATABASE_URL and REDIS_URL come from ``pipeline_env``, so ``services()`` starts nothing.
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.demo import not_written_summary
from kbwiki.status import NOT_WRITTEN_SAMPLE, status_lines
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)

CODE_ONLY = "# Snippet\n\n```\nThe fenced text is not prose, so there is nothing to write.\n```\n"


@pytest.fixture()
def run(clean_db, deps):  # noqa: F811
    """Invoke ``kbwiki`` with arguments; returns click's Result."""
    from middleware.logging import configure_logging

    configure_logging("INFO")  # JSON logs to stderr, outside the command's output
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def _kb(deps):  # noqa: F811
    return deps.kbs.get_or_create(1, f"st-{uuid.uuid4().hex[:6]}")


def _skipped_by_map(deps, kb, source_uri: str, content: str = CODE_ONLY):  # noqa: F811
    """A document the real map stage skipped (its extractor found no usable sentence)."""
    from stages.map import map_document
    from wiki.lanes import INGEST, OP_INGEST, SCOPE_KB

    doc, _ = deps.docs.upsert(kb, title=source_uri, source_uri=source_uri, content=content)
    op = deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_INGEST,
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
    )
    assert map_document(kb.tenant_id, kb.id, doc.id, op.id, deps) == "skipped"
    return doc


def test_status_prints_the_reason_of_skipped_and_failed_documents(run, deps):  # noqa: F811
    kb = _kb(deps)
    _skipped_by_map(deps, kb, "ast.md")
    failed, _ = deps.docs.upsert(kb, title="bad", source_uri="dir/bad.md", content="bad " * 20)
    deps.docs.set_status([failed.id], "failed", "extraction failed 6 times:\nRuntimeError('boom')")
    fine, _ = deps.docs.upsert(kb, title="fine", source_uri="fine.md", content="fine " * 20)
    deps.docs.set_status([fine.id], "done")

    result = run("status", "--kb", kb.name)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "documents: done=1, failed=1, skipped=1" in lines
    start = lines.index("not written:")
    assert lines[start + 1 :] == [
        "  failed dir/bad.md: extraction failed 6 times: RuntimeError('boom')",
        "  skipped ast.md: no wiki content: the document has no usable sentence",
    ]

    report = json.loads(run("status", "--kb", kb.name, "--json").output)
    assert report["not_written"] == [
        {
            "status": "failed",
            "source_uri": "dir/bad.md",
            "title": "bad",
            "reason": "extraction failed 6 times:\nRuntimeError('boom')",
        },
        {
            "status": "skipped",
            "source_uri": "ast.md",
            "title": "ast.md",
            "reason": "no wiki content: the document has no usable sentence",
        },
    ]
    assert report["not_written_more"] == 0
    assert not_written_summary(report, kb.name) == (
        f"documents not written: skipped=1, failed=1 (reasons: kbwiki status --kb {kb.name})"
    )


def test_status_sample_is_bounded_and_counts_the_rest(run, deps):  # noqa: F811
    kb = _kb(deps)
    docs = [
        deps.docs.upsert(kb, title=f"d{i}", source_uri=f"d{i:02}.md", content=f"doc {i} " * 10)[0]
        for i in range(NOT_WRITTEN_SAMPLE + 3)
    ]
    deps.docs.set_status([d.id for d in docs], "skipped", "no wiki content: the document has no usable sentence")
    deleted, _ = deps.docs.upsert(kb, title="gone", source_uri="a-gone.md", content="gone " * 20)
    deps.docs.set_status([deleted.id], "skipped", "old reason")
    deps.docs.mark_deleting(kb.id, deleted.id)

    lines = run("status", "--kb", kb.name).output.splitlines()
    shown = [line for line in lines if line.startswith("  skipped ")]
    assert shown[0] == "  skipped d00.md: no wiki content: the document has no usable sentence"
    assert len(shown) == NOT_WRITTEN_SAMPLE
    assert lines[-1] == "  ... and 3 more"
    assert not any("gone" in line for line in lines)

    report = json.loads(run("status", "--kb", kb.name, "--json").output)
    assert len(report["not_written"]) == NOT_WRITTEN_SAMPLE and report["not_written_more"] == 3


def test_status_without_unwritten_documents_prints_no_sample(run, deps):  # noqa: F811
    kb = _kb(deps)
    doc, _ = deps.docs.upsert(kb, title="fine", source_uri="fine.md", content="fine " * 20)
    deps.docs.set_status([doc.id], "done")
    output = run("status", "--kb", kb.name).output
    assert "not written" not in output
    assert not_written_summary(json.loads(run("status", "--kb", kb.name, "--json").output), kb.name) == ""


def test_the_tilde_heading_document_is_no_longer_skipped(deps):  # noqa: F811
    """The trial's document goes through the real map stage and is mapped, not skipped."""
    from stages.map import map_document
    from wiki.lanes import INGEST, OP_INGEST, SCOPE_KB

    kb = _kb(deps)
    text = (
        "# Tilde\n\ntilde\n~~~\n\nThe tilde module helps Python programs do things. It keeps the work to a minimum.\n"
    )
    doc, _ = deps.docs.upsert(kb, title="Tilde", source_uri="t.md", content=text)
    op = deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_INGEST,
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
    )
    assert map_document(kb.tenant_id, kb.id, doc.id, op.id, deps) == "mapped"
    assert deps.docs.sample_not_written(kb.id) == []


def test_sample_limit_is_checked(deps):  # noqa: F811
    with pytest.raises(ValueError, match="limit"):
        deps.docs.sample_not_written("any", -1)
    assert deps.docs.sample_not_written(_kb(deps).id, 0) == []


def test_status_lines_keep_the_count_sections() -> None:
    report = {
        "knowledge_base": {"name": "k"},
        "pages": {},
        "dead_letters": 0,
        "not_written": [{"status": "skipped", "source_uri": "", "title": "T", "reason": ""}],
        "not_written_more": 0,
    }
    assert status_lines(report) == [
        "knowledge_base: name=k",
        "pages: none",
        "dead_letters: 0",
        "not written:",
        "  skipped T: (no reason recorded)",
    ]
