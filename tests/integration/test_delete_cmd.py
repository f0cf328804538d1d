"""``kbwiki delete`` says exactly what it deleted, even when stopped between or during its batches,
and a rerun finishes the rest (issue 27, deliverable 4)."""

from __future__ import annotations

import os
import signal
import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.lanes import Actor

N_DOCS, BATCH = 7, 3


@pytest.fixture()
def folder_kb(clean_db, deps, tmp_path, monkeypatch):  # noqa: F811
    """``(kb name, source URIs, run)``: a KB of ``N_DOCS`` stored documents (no worker runs)."""
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    name = f"del-{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "docs"
    folder.mkdir()
    uris = [f"n{i}.md" for i in range(N_DOCS)]
    for i, uri in enumerate(uris):
        (folder / uri).write_text(f"# Note {i}\n\n" + f"Note {i} tells how the Harbor service stores ledgers. " * 4)
    runner = CliRunner()

    def run(*argv: str):
        return runner.invoke(main, list(argv))

    stored = run("ingest", str(folder), "--kb", name)
    assert stored.exit_code == 0 and f"queued={N_DOCS}" in stored.stdout, stored.output
    return name, uris, run


def _deleted_ids(deps, name) -> set[str]:  # noqa: F811
    """Knowledge ids of the KB's documents a delete committed (``deleting`` or ``deleted``)."""
    kb = deps.kbs.get_by_name(1, name)
    with deps.pool.connection() as conn:
        rows = conn.execute(
            "SELECT id FROM knowledges WHERE knowledge_base_id = %s AND status IN ('deleting', 'deleted')", (kb.id,)
        ).fetchall()
    return {r["id"] for r in rows}


def _printed(stdout: str, status: str) -> set[str]:
    return {line.split()[1] for line in stdout.splitlines() if line.startswith(f"{status} ")}


def test_a_delete_stopped_as_a_batch_commits_prints_exactly_what_it_deleted(folder_kb, deps, monkeypatch):  # noqa: F811
    import kbwiki.delete_cmd
    import stages.triggers

    name, uris, run = folder_kb
    monkeypatch.setattr(kbwiki.delete_cmd, "DELETE_BATCH", BATCH, raising=False)
    sent = []
    real_send = stages.triggers.Triggers.send

    def interrupted_trigger(self, actor_name, **kwargs):
        """The reduce trigger after a commit: Ctrl-C arrives right then, on the second one."""
        if actor_name == Actor.reduce:
            sent.append(1)
            if len(sent) == 2:
                os.kill(os.getpid(), signal.SIGINT)
        return real_send(self, actor_name, **kwargs)

    monkeypatch.setattr(stages.triggers.Triggers, "send", interrupted_trigger)
    stopped = run("delete", "--kb", name, *uris)
    committed = _deleted_ids(deps, name)
    assert 0 < len(committed) < N_DOCS, stopped.output
    assert _printed(stopped.stdout, "deleting") == committed, stopped.output
    assert stopped.exit_code == 130 and "delete stopped" in stopped.output, stopped.output

    monkeypatch.setattr(stages.triggers.Triggers, "send", real_send)
    again = run("delete", "--kb", name, *uris)  # the rerun deletes the rest and names what was done
    assert again.exit_code == 0, again.output
    assert _printed(again.stdout, "already_deleted") == committed
    assert _printed(again.stdout, "deleting") | committed == _deleted_ids(deps, name)
    assert len(_deleted_ids(deps, name)) == N_DOCS


def test_a_delete_goes_in_batches_and_names_each_document_once(folder_kb, deps, monkeypatch):  # noqa: F811
    import kbwiki.delete_cmd
    import stages.delete

    name, uris, run = folder_kb
    monkeypatch.setattr(kbwiki.delete_cmd, "DELETE_BATCH", BATCH, raising=False)
    marks = []
    real_mark = type(deps.docs).mark_deleting_many

    def counted_mark(self, kb_id, ids, conn=None):
        marks.append(len(ids))
        return real_mark(self, kb_id, ids, conn=conn)

    monkeypatch.setattr(type(deps.docs), "mark_deleting_many", counted_mark)
    kb = deps.kbs.get_by_name(1, name)
    first = deps.docs.find(kb.id, uris[0])
    # a document named twice (by id and by path) and an unknown one, among the others
    result = run("delete", "--kb", name, first.id, *uris, "missing\n.md")
    assert result.exit_code == 1 and "1 of 9 documents not found" in result.output, result.output
    assert marks == [3, 3, 2], marks  # one statement per batch of 3 refs (the last: 2 known), not one per document
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"deleting {first.id} {uris[0]}", f"already_deleted {first.id} {uris[0]}"]
    assert lines[-1] == "unknown missing\\n.md" and len(lines) == N_DOCS + 2  # one line, the newline shown
    assert len(_printed(result.stdout, "deleting")) == N_DOCS == len(_deleted_ids(deps, name))
    assert stages.delete.DELETE_BATCH >= 100  # the default: many documents a transaction
