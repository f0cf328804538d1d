"""The vault export never deletes or overwrites files it did not write, nor ones it wrote that
you edited since (unless forced)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from kbwiki.export import MARKER, ExportRefused, export_vault, prepare_out_dir, render_file
from wiki.errors import ExportEdited
from wiki.models import Page


class FakePages:
    """Stands in for ``WikiPageRepository``: the live pages of each KB id."""

    def __init__(self, **kbs: list[Page]) -> None:
        self.kbs = kbs

    def iter_pages(self, kb_id: str):
        yield from self.kbs.get(kb_id, [])


def page(slug: str, page_type: str = "entity", kb: str = "a", content: str = "") -> Page:
    return Page(
        slug=slug,
        title=slug.title(),
        page_type=page_type,
        tenant_id=1,
        knowledge_base_id=kb,
        content=content or f"about {slug}",
    )


def kb_pages(*slugs: str, kb: str = "a", content: str = "") -> list[Page]:
    return [page("index", "index", kb)] + [page(s, kb=kb, content=content) for s in slugs]


def snapshot(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_with_someone_elses_files_is_refused_and_left_alone(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(ExportRefused):
        export_vault(FakePages(a=kb_pages("x")), "a", tmp_path, kb_name="A")
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"
    assert not (tmp_path / MARKER).exists()


def test_a_file_is_not_a_folder(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    with pytest.raises(ExportRefused):
        prepare_out_dir(target)
    assert target.read_text() == "x"


def test_a_folder_that_cannot_be_created_is_refused_clearly(tmp_path):
    # A README trial: "export --kb x <a path under a file>" ended in a NotADirectoryError traceback.
    (tmp_path / "links.md").write_text("mine")
    with pytest.raises(ExportRefused, match="cannot create the folder"):
        prepare_out_dir(tmp_path / "links.md" / "sub", kb_id="kb-1")
    assert (tmp_path / "links.md").read_text() == "mine"


def test_the_marker_names_the_kb_and_lists_the_files_written(tmp_path):
    vault = tmp_path / "vault"
    assert export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A") == 3
    marker = json.loads((vault / MARKER).read_text())
    assert (marker["kb"], marker["kb_id"]) == ("A", "a")
    assert marker["files"] == ["entity/x.md", "entity/y.md", "index.md"]
    assert (vault / "entity" / "x.md").read_text().startswith("---\ntitle: X\n")


def test_a_user_file_at_the_root_survives_a_reexport(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "My notes.md").write_text("note")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    assert (vault / "My notes.md").read_text() == "note"
    assert (vault / ".obsidian" / "app.json").read_text() == "{}"
    assert (vault / "index.md").exists() and (vault / "entity" / "x.md").exists()


def test_a_user_file_inside_a_page_folder_survives_a_reexport(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "entity" / "scratch.md").write_text("mine")
    export_vault(FakePages(a=kb_pages("y")), "a", vault, kb_name="A")
    assert (vault / "entity" / "scratch.md").read_text() == "mine"
    assert "entity/scratch.md" not in json.loads((vault / MARKER).read_text())["files"]


def test_a_page_deleted_from_the_kb_disappears_on_reexport(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y") + [page("s", "summary")]), "a", vault, kb_name="A")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    assert (vault / "entity" / "x.md").exists()
    assert not (vault / "entity" / "y.md").exists()
    assert not (vault / "summary").exists()  # emptied page folder goes too
    assert json.loads((vault / MARKER).read_text())["files"] == ["entity/x.md", "index.md"]


def test_another_kbs_export_is_refused_and_nothing_changes(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "My notes.md").write_text("note")
    before = snapshot(vault)
    with pytest.raises(ExportRefused) as refused:
        export_vault(FakePages(b=kb_pages("z", kb="b")), "b", vault, kb_name="B")
    assert "'A'" in str(refused.value) and "'B'" in str(refused.value) and "--replace" in str(refused.value)
    assert snapshot(vault) == before


def test_replace_swaps_another_kbs_export_but_keeps_user_files(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "My notes.md").write_text("note")
    export_vault(FakePages(b=kb_pages("z", kb="b")), "b", vault, kb_name="B", replace=True)
    assert not (vault / "entity" / "x.md").exists() and (vault / "entity" / "z.md").exists()
    assert (vault / "My notes.md").read_text() == "note"
    assert json.loads((vault / MARKER).read_text())["kb"] == "B"


def test_a_user_file_where_a_page_would_go_is_not_overwritten(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "entity" / "new.md").write_text("mine")
    with pytest.raises(ExportRefused):
        export_vault(FakePages(a=kb_pages("x", "new")), "a", vault, kb_name="A")
    assert (vault / "entity" / "new.md").read_text() == "mine"
    assert "entity/new.md" not in json.loads((vault / MARKER).read_text())["files"]


def test_an_older_marker_only_loses_what_that_layout_wrote(tmp_path):
    vault = tmp_path / "vault"
    (vault / "entity").mkdir(parents=True)
    (vault / "entity" / "old.md").write_text("old page")
    (vault / "entity" / "keep.txt").write_text("mine")
    (vault / "index.md").write_text("old index")
    (vault / "My notes.md").write_text("note")
    (vault / MARKER).write_text("This folder is written by `kbwiki export`; its page files are replaced on export.\n")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    assert not (vault / "entity" / "old.md").exists()
    assert (vault / "entity" / "keep.txt").read_text() == "mine"
    assert (vault / "My notes.md").read_text() == "note"
    assert (vault / "index.md").read_text().startswith("---")
    assert json.loads((vault / MARKER).read_text())["kb"] == "A"


def test_marker_entries_outside_the_vault_are_never_removed(tmp_path):
    vault = tmp_path / "vault"
    outside = tmp_path / "precious.md"
    outside.write_text("keep")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    marker = json.loads((vault / MARKER).read_text())
    marker["files"] += ["../precious.md", str(outside)]
    (vault / MARKER).write_text(json.dumps(marker))
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    assert outside.read_text() == "keep"


# --- files edited since the earlier export -----------------------------------------------------


def test_the_marker_records_each_files_sha256(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A")
    marker = json.loads((vault / MARKER).read_text())
    assert marker["sha256"] == {
        rel: hashlib.sha256((vault / rel).read_bytes()).hexdigest()
        for rel in ("entity/x.md", "entity/y.md", "index.md")
    }


def test_an_edited_file_blocks_the_reexport_and_is_left_untouched(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A")
    (vault / "entity" / "x.md").write_text("my own notes on x")
    before = snapshot(vault)
    with pytest.raises(ExportEdited) as refused:  # a new page and new content: nothing of it is written
        export_vault(FakePages(a=kb_pages("x", "y", "z", content="v2")), "a", vault, kb_name="A")
    message = str(refused.value)
    assert "1 file " in message and "entity/x.md" in message and "--force" in message
    assert "entity/y.md" not in message
    assert snapshot(vault) == before


def test_force_overwrites_an_edited_file_and_records_its_new_hash(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "entity" / "x.md").write_text("my own notes on x")
    assert export_vault(FakePages(a=kb_pages("x", content="v2")), "a", vault, kb_name="A", force=True) == 2
    written = (vault / "entity" / "x.md").read_bytes()
    assert b"v2" in written and b"my own notes" not in written
    assert json.loads((vault / MARKER).read_text())["sha256"]["entity/x.md"] == hashlib.sha256(written).hexdigest()
    export_vault(FakePages(a=kb_pages("x", content="v3")), "a", vault, kb_name="A")  # unedited again: no --force
    assert b"v3" in (vault / "entity" / "x.md").read_bytes()


def test_an_unedited_reexport_replaces_the_files(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A")
    (vault / "My notes.md").write_text("note")  # a file of the user's own is no edit of the export
    export_vault(FakePages(a=kb_pages("x", "new", content="v2")), "a", vault, kb_name="A")
    assert "v2" in (vault / "entity" / "x.md").read_text() and (vault / "entity" / "new.md").exists()
    assert not (vault / "entity" / "y.md").exists()
    assert (vault / "My notes.md").read_text() == "note"


def test_a_removed_pages_edited_file_is_kept(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A")
    (vault / "entity" / "y.md").write_text("my own notes on y")
    before = snapshot(vault)
    with pytest.raises(ExportEdited, match="entity/y.md"):
        export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")  # page y is gone from the KB
    assert snapshot(vault) == before
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A", force=True)
    assert not (vault / "entity" / "y.md").exists()


def test_a_deleted_exported_file_is_written_again(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "entity" / "x.md").unlink()  # nothing of the user's is lost by writing it again
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    assert (vault / "entity" / "x.md").exists()


def test_the_refusal_names_the_first_five_edited_files_and_counts_the_rest(tmp_path):
    vault = tmp_path / "vault"
    slugs = [f"p{i}" for i in range(8)]
    export_vault(FakePages(a=kb_pages(*slugs)), "a", vault, kb_name="A")
    for slug in slugs[:7]:
        (vault / "entity" / f"{slug}.md").write_text("edited")
    with pytest.raises(ExportEdited) as refused:
        export_vault(FakePages(a=kb_pages(*slugs)), "a", vault, kb_name="A")
    message = str(refused.value)
    assert message.startswith("7 files ") and "and 2 more" in message and len(message.splitlines()) == 1
    assert [f"entity/p{i}.md" in message for i in range(7)] == [True] * 5 + [False] * 2


def test_a_symlink_put_in_place_of_an_exported_file_is_an_edit_and_its_target_is_never_written(tmp_path):
    vault = tmp_path / "vault"
    target = tmp_path / "elsewhere.md"
    target.write_text("mine")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    (vault / "entity" / "x.md").unlink()
    (vault / "entity" / "x.md").symlink_to(target)
    with pytest.raises(ExportEdited, match="entity/x.md"):
        export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A", force=True)
    assert target.read_text() == "mine"
    assert not (vault / "entity" / "x.md").is_symlink() and "about x" in (vault / "entity" / "x.md").read_text()


def _as_before_hashes(vault) -> None:
    """Make ``vault``'s marker what kbwiki wrote before hashes (no ``sha256``), its files older than it."""
    marker = json.loads((vault / MARKER).read_text())
    del marker["sha256"]
    (vault / MARKER).write_text(json.dumps(marker))
    stamp = (vault / MARKER).stat().st_mtime_ns
    for rel in marker["files"]:
        os.utime(vault / rel, ns=(stamp - 60 * 10**9, stamp - 60 * 10**9))


def test_an_export_from_before_hashes_is_replaced_when_unedited_and_then_hashed(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x")), "a", vault, kb_name="A")
    _as_before_hashes(vault)
    export_vault(FakePages(a=kb_pages("x", content="v2")), "a", vault, kb_name="A")
    assert "v2" in (vault / "entity" / "x.md").read_text()
    assert set(json.loads((vault / MARKER).read_text())["sha256"]) == {"entity/x.md", "index.md"}


def test_a_file_of_an_export_from_before_hashes_modified_after_its_marker_counts_as_edited(tmp_path):
    vault = tmp_path / "vault"
    export_vault(FakePages(a=kb_pages("x", "y")), "a", vault, kb_name="A")
    _as_before_hashes(vault)
    (vault / "entity" / "y.md").write_text("my own notes on y")
    stamp = (vault / MARKER).stat().st_mtime_ns
    os.utime(vault / "entity" / "y.md", ns=(stamp + 10**9, stamp + 10**9))  # edited after that export
    before = snapshot(vault)
    with pytest.raises(ExportEdited) as refused:
        export_vault(FakePages(a=kb_pages("x", "y", content="v2")), "a", vault, kb_name="A")
    assert "entity/y.md" in str(refused.value) and "entity/x.md" not in str(refused.value)
    assert snapshot(vault) == before


def test_a_page_file_is_the_same_whatever_the_number_of_writes_that_made_it():
    # a page's version counts its writes, and how many a page gets depends on the batches and the
    # cross-link runs that wrote it: the file shows only what its documents decide
    once, thrice = page("acme"), page("acme").model_copy(update={"version": 3})
    assert render_file(once) == render_file(thrice)
    assert "version" not in render_file(thrice).split("\n---\n")[0]
