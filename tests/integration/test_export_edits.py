"""``kbwiki export`` on a real KB: a re-export never overwrites or removes an exported file you
edited since (one ``Error:`` line, exit 1, nothing written) unless ``--force``.

Found by a new user: re-exporting silently overwrote the edits made to exported files.
"""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.models import Page


def _snapshot(folder) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture()
def kb_and_run(clean_db, deps, tmp_path, monkeypatch):  # noqa: F811
    """``(kb, run)``: a KB with entity pages ``alpha`` and ``beta``, and ``run(*argv)`` for kbwiki."""
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    kb = deps.kbs.get_or_create(1, f"edits-{uuid.uuid4().hex[:6]}")
    for slug in ("alpha", "beta"):
        deps.pages.save(
            Page(
                tenant_id=1,
                knowledge_base_id=kb.id,
                slug=slug,
                title=slug.title(),
                page_type="entity",
                content=f"{slug} v1.",
            )
        )
    runner = CliRunner()

    def run(*argv: str):
        return runner.invoke(main, list(argv), catch_exceptions=False)

    return kb, run


def test_an_edited_file_blocks_the_reexport_until_force(kb_and_run, deps, tmp_path):  # noqa: F811
    kb, run = kb_and_run
    vault = tmp_path / "vault"
    assert run("export", "--kb", kb.name, str(vault)).exit_code == 0
    (vault / "entity" / "alpha.md").write_text("my notes on alpha")
    deps.pages.save(deps.pages.get(kb.id, "beta").model_copy(update={"content": "beta v2."}))
    before = _snapshot(vault)

    refused = run("export", "--kb", kb.name, str(vault))
    assert refused.exit_code == 1
    assert refused.stderr.startswith("Error: 1 file of the earlier export") and len(refused.stderr.splitlines()) == 1
    assert "entity/alpha.md" in refused.stderr and "--force" in refused.stderr
    assert _snapshot(vault) == before  # beta's new text is not written either

    forced = run("export", "--kb", kb.name, "--force", str(vault))
    assert forced.exit_code == 0, forced.output
    assert "alpha v1." in (vault / "entity" / "alpha.md").read_text()
    assert "beta v2." in (vault / "entity" / "beta.md").read_text()
    assert run("export", "--kb", kb.name, str(vault)).exit_code == 0  # unedited since: no --force needed


def test_a_removed_pages_edited_file_is_kept(kb_and_run, deps, tmp_path):  # noqa: F811
    kb, run = kb_and_run
    vault = tmp_path / "vault"
    assert run("export", "--kb", kb.name, str(vault)).exit_code == 0
    (vault / "entity" / "beta.md").write_text("my notes on beta")
    assert deps.pages.delete(kb.id, "beta")

    refused = run("export", "--kb", kb.name, str(vault))
    assert refused.exit_code == 1 and "entity/beta.md" in refused.stderr
    assert (vault / "entity" / "beta.md").read_text() == "my notes on beta"


@pytest.mark.parametrize("force", [False, True])
def test_a_page_folder_replaced_by_a_link_is_refused_and_nothing_is_written_through_it(kb_and_run, tmp_path, force):
    """Found by a new user: with vault/entity a link to another folder, a re-export wrote its
    pages into that folder (with --force it would overwrite same-named files there)."""
    kb, run = kb_and_run
    vault, elsewhere = tmp_path / "vault", tmp_path / "sources"
    assert run("export", "--kb", kb.name, str(vault)).exit_code == 0
    elsewhere.mkdir()
    (elsewhere / "alpha.md").write_text("a source document")
    for f in (vault / "entity").iterdir():
        f.unlink()
    (vault / "entity").rmdir()
    (vault / "entity").symlink_to(elsewhere, target_is_directory=True)

    refused = run("export", "--kb", kb.name, str(vault), *(["--force"] if force else []))
    assert refused.exit_code == 1 and "is a link to another folder" in refused.stderr
    assert sorted(p.name for p in elsewhere.iterdir()) == ["alpha.md"]
    assert (elsewhere / "alpha.md").read_text() == "a source document"
