"""The vault export never deletes files it did not write."""

from __future__ import annotations

import pytest

from kbwiki.export import MARKER, ExportRefused, prepare_out_dir


def test_a_folder_with_someone_elses_files_is_refused_and_left_alone(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    with pytest.raises(ExportRefused):
        prepare_out_dir(tmp_path)
    assert (tmp_path / "notes" / "todo.txt").read_text() == "mine"
    assert not (tmp_path / MARKER).exists()


def test_a_previous_export_is_replaced_but_other_files_in_it_stay(tmp_path):
    prepare_out_dir(tmp_path / "vault")
    vault = tmp_path / "vault"
    (vault / "entity").mkdir()
    (vault / "entity" / "old.md").write_text("old page")
    (vault / "index.md").write_text("old index")
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text("{}")
    prepare_out_dir(vault)
    assert not (vault / "entity" / "old.md").exists() and not (vault / "index.md").exists()
    assert (vault / ".obsidian" / "app.json").read_text() == "{}"


def test_a_file_is_not_a_folder(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    with pytest.raises(ExportRefused):
        prepare_out_dir(target)
    assert target.read_text() == "x"
