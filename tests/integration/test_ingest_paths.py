"""One file, one document (issue 25, a new user's trial): a subfolder of a folder ingested before
finds the same documents, a symbolic link to a file of the folder is no second document, and a
link loop never stops `kbwiki ingest`."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from tests.support.pipeline import settle

BIRDS = {
    "plover.md": "# Plover\n\nThe Plover is a wading bird of open shores. The Plover feeds on insects and worms.\n",
    "guide/curlew.md": "# Curlew\n\nThe Curlew is a large wader with a long curved bill. It probes mud for crabs.\n",
    "guide/dunlin.md": "# Dunlin\n\nThe Dunlin is a small sandpiper of tidal flats. Dunlin fly in tight flocks.\n",
}


@pytest.fixture()
def run(pipeline_env, clean_db, tmp_path, monkeypatch):  # noqa: F811
    """``run(*argv)``: the real ``kbwiki`` command on the test servers, its exceptions kept in the result."""
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    runner = CliRunner()
    return lambda *argv: runner.invoke(main, [str(a) for a in argv])


def _folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    for rel, text in BIRDS.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(text)
    return docs


def _documents(deps, kb) -> dict[str, str]:  # noqa: F811
    """{source_uri: knowledge id} of every document the KB ever held (deleted ones too)."""
    with deps.pool.connection() as conn:
        rows = conn.execute("SELECT source_uri, id FROM knowledges WHERE knowledge_base_id = %s", (kb.id,)).fetchall()
    return {r["source_uri"]: r["id"] for r in rows}


def _source_refs(deps, kb) -> dict[str, list]:  # noqa: F811
    with deps.pool.connection() as conn:
        rows = conn.execute(
            "SELECT slug, source_refs FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL", (kb.id,)
        ).fetchall()
    return {r["slug"]: r["source_refs"] for r in rows}


def _ok(result) -> str:
    assert result.exit_code == 0 and result.exception is None, result.output
    assert "Traceback" not in result.output
    return result.output


def test_a_subfolder_or_a_file_under_the_root_finds_the_same_documents(run, deps, tmp_path):  # noqa: F811
    docs = _folder(tmp_path)
    name = f"paths-{uuid.uuid4().hex[:6]}"
    assert "queued=3" in _ok(run("ingest", docs, "--kb", name))
    kb = deps.kbs.get_by_name(1, name)
    settle(deps, kb)
    documents, refs = _documents(deps, kb), _source_refs(deps, kb)
    assert set(documents) == set(BIRDS) and any(refs.values())
    (tmp_path / "shortcut").symlink_to(docs / "guide", target_is_directory=True)
    # the subfolder as given, with a trailing slash, through "..", by a symlinked name, one file of it
    for given in (
        docs / "guide",
        f"{docs / 'guide'}/",
        docs / "guide" / ".." / "guide",
        tmp_path / "shortcut",
        docs / "guide" / "curlew.md",
    ):
        out = _ok(run("ingest", given, "--kb", name))
        assert out.splitlines()[0].startswith("unchanged="), (given, out)
        assert "queued" not in out, (given, out)
    settle(deps, kb)
    assert _documents(deps, kb) == documents
    assert _source_refs(deps, kb) == refs
    assert deps.kbs.get_by_name(1, name).source_root == os.path.realpath(docs)


def test_a_folder_outside_the_root_is_refused_unless_the_kb_moved_there(run, deps, tmp_path):  # noqa: F811
    docs = _folder(tmp_path)
    name = f"moved-{uuid.uuid4().hex[:6]}"
    _ok(run("ingest", docs, "--kb", name))
    kb = deps.kbs.get_by_name(1, name)
    documents = _documents(deps, kb)
    moved = tmp_path / "elsewhere" / "docs"
    shutil.copytree(docs, moved)
    for outside in (moved, tmp_path):  # another folder, and the root's parent
        result = run("ingest", outside, "--kb", name)
        assert result.exit_code == 2, result.output
        [line] = result.output.splitlines()
        assert line.startswith(f"Error: {outside} is outside {os.path.realpath(docs)}, the root folder of")
        assert "--set-root" in line
    assert _documents(deps, kb) == documents and deps.kbs.get_by_name(1, name).source_root == os.path.realpath(docs)
    # the KB's folder moved: its documents keep their paths, read under the new place
    out = _ok(run("ingest", moved, "--kb", name, "--set-root"))
    assert f"under {os.path.realpath(moved)} (was {os.path.realpath(docs)})" in out and "unchanged=3" in out
    assert _documents(deps, kb) == documents
    assert "unchanged=2" in _ok(run("ingest", moved / "guide", "--kb", name))


def test_a_kb_without_a_root_gets_the_folder_of_its_next_ingest(run, deps, tmp_path):  # noqa: F811
    docs = _folder(tmp_path)
    name = f"older-{uuid.uuid4().hex[:6]}"
    _ok(run("ingest", docs, "--kb", name))
    kb = deps.kbs.get_by_name(1, name)
    with deps.pool.connection() as conn:  # as a KB made before migration 0140 is
        conn.execute("UPDATE knowledge_bases SET source_root = NULL WHERE id = %s", (kb.id,))
    documents = _documents(deps, kb)
    out = _ok(run("ingest", docs, "--kb", name))
    assert f"names its documents by their path under {os.path.realpath(docs)}" in out and "unchanged=3" in out
    assert "unchanged=2" in _ok(run("ingest", docs / "guide", "--kb", name))
    assert _documents(deps, kb) == documents


def test_a_symlink_to_a_file_of_the_folder_is_skipped_naming_that_file(run, deps, tmp_path):  # noqa: F811
    docs = _folder(tmp_path)
    (docs / "alias.md").symlink_to("plover.md")
    (docs / "guide" / "also-plover.md").symlink_to(docs / "plover.md")
    name = f"alias-{uuid.uuid4().hex[:6]}"
    out = _ok(run("ingest", docs, "--kb", name))
    assert out.splitlines()[2] == "queued=3, skipped=2"
    assert "skipped alias.md: same file as plover.md (a symbolic link to it)" in out
    assert "skipped guide/also-plover.md: same file as plover.md (a symbolic link to it)" in out
    assert set(_documents(deps, deps.kbs.get_by_name(1, name))) == set(BIRDS)


def test_symlink_loops_are_skipped_and_everything_else_is_stored(run, deps, tmp_path):  # noqa: F811
    docs = _folder(tmp_path)
    (docs / "guide" / "up").symlink_to("..", target_is_directory=True)  # a folder holding the link
    (docs / "loop.md").symlink_to("loop.md")  # itself
    (docs / "ping.md").symlink_to("pong.md")
    (docs / "pong.md").symlink_to("ping.md")
    (docs / "gone.md").symlink_to("nowhere.md")
    name = f"loops-{uuid.uuid4().hex[:6]}"
    out = _ok(run("ingest", docs, "--kb", name))
    assert out.splitlines()[2] == "queued=3, rejected=4, skipped=1"
    for line in (
        "skipped guide/up: symbolic link to ., a folder that holds it (a loop); not followed",
        "rejected loop.md: symbolic link loop (it leads back to itself); skipped",
        "rejected ping.md: symbolic link loop (it leads back to itself); skipped",
        "rejected pong.md: symbolic link loop (it leads back to itself); skipped",
        "rejected gone.md: symbolic link to nowhere.md, which does not exist; skipped",
    ):
        assert line in out.splitlines(), out
    assert set(_documents(deps, deps.kbs.get_by_name(1, name))) == set(BIRDS)
    # the same from a subfolder: the link to its parent now leads outside the folder read
    out = _ok(run("ingest", docs / "guide", "--kb", name))
    assert f"rejected guide/up: symbolic link to {os.path.realpath(docs)}, outside the folder; skipped" in out
