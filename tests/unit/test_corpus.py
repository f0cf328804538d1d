"""The corpus readers: standard-library docstrings (read, never imported) and document folders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kbwiki.corpus import (
    MIN_STDLIB_DOC_CHARS,
    CorpusDoc,
    Rejected,
    iter_folder_docs,
    iter_stdlib_docs,
)

DOC = '"""{}"""\n'.format("Explains the widget protocol used between producers and consumers. " * 5)


@pytest.fixture(scope="module")
def stdlib_docs() -> list[CorpusDoc]:
    before = set(sys.modules)
    docs = list(iter_stdlib_docs())
    # Reading sources may look up a codec for a coding cookie; nothing else may be imported.
    new = {m for m in set(sys.modules) - before if not m.startswith("encodings.")}
    assert new == set()
    return docs


def test_stdlib_yields_enough_unique_sorted_docs(stdlib_docs: list[CorpusDoc]) -> None:
    titles = [doc.title for doc in stdlib_docs]
    assert len(titles) >= 180
    assert len(set(titles)) == len(titles)
    assert titles == sorted(titles)
    assert {"json", "json.decoder", "subprocess"} <= set(titles)
    for doc in stdlib_docs:
        assert doc.source_uri == f"stdlib:{doc.title}"
        assert doc.text.startswith(f"# {doc.title}\n")
        assert not any(part.startswith("_") for part in doc.title.split("."))
        assert not {"test", "tests", "idle_test", "this", "antigravity"} & set(doc.title.split("."))


def test_stdlib_is_read_not_imported(stdlib_docs: list[CorpusDoc]) -> None:
    assert stdlib_docs
    assert "antigravity" not in sys.modules and "this" not in sys.modules
    assert "turtledemo" not in sys.modules and "idlelib" not in sys.modules


def test_stdlib_markdown_layout(stdlib_docs: list[CorpusDoc]) -> None:
    decoder = next(doc for doc in stdlib_docs if doc.title == "json.decoder")
    assert "## JSONDecoder" in decoder.text
    assert "### JSONDecoder.decode" in decoder.text


def _fake_stdlib(root: Path) -> Path:
    marker = root / "imported.marker"
    (root / "widgets.py").write_text(
        DOC + f"open({str(marker)!r}, 'w').write('x')\n\n"
        "def make(x):\n    'Make a widget from x.'\n\n"
        "def _hidden():\n    'Private helper.'\n\n"
        "class Gadget:\n    'A gadget.'\n    def spin(self):\n        'Spin the gadget.'\n"
        "    def _stop(self):\n        'Private.'\n"
    )
    (root / "exported.py").write_text(
        DOC + "__all__ = ['kept']\n\ndef kept():\n    'Listed in __all__.'\n\n"
        "def dropped():\n    'Not listed in __all__.'\n"
    )
    (root / "thin.py").write_text('"""Too short."""\n')
    (root / "broken.py").write_text(DOC + "def (:\n")
    (root / "_private.py").write_text(DOC)
    (root / "antigravity.py").write_text(DOC)
    for package in ("pkg", "pkg/sub", "tests", "pkg/test"):
        (root / package).mkdir()
        (root / package / "__init__.py").write_text(DOC)
    (root / "pkg" / "leaf.py").write_text(DOC)
    (root / "site-packages").mkdir()
    (root / "site-packages" / "thirdparty.py").write_text(DOC)
    return marker


def test_stdlib_reader_rules_on_a_fake_stdlib(tmp_path: Path) -> None:
    marker = _fake_stdlib(tmp_path)
    docs = {doc.title: doc for doc in iter_stdlib_docs(tmp_path)}
    assert list(docs) == ["exported", "pkg", "pkg.leaf", "pkg.sub", "widgets"]
    assert not marker.exists()  # the module's top-level code never ran
    widgets = docs["widgets"].text
    assert "## make" in widgets and "## Gadget" in widgets and "### Gadget.spin" in widgets
    assert "_hidden" not in widgets and "_stop" not in widgets
    assert "## kept" in docs["exported"].text and "dropped" not in docs["exported"].text
    assert all(len(doc.text) >= MIN_STDLIB_DOC_CHARS for doc in docs.values())


def test_folder_reader(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "intro.rst").write_text(
        "Widget Guide\n============\n\nWidgets connect producers to consumers.\n"
    )
    (tmp_path / "page.HTML").write_text(
        "<html><body><h1>Gadget Page</h1><p>Gadgets spin <b>fast</b>.</p></body></html>"
    )
    (tmp_path / "notes.md").write_bytes(b"# Notes\n\nCaf\xc3\xa9 and caf\xe9 text.\n")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02binary\x00" * 50)
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / ".secret.md").write_text("# Hidden\n")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD.md").write_text("# Hidden folder\n")

    results = list(iter_folder_docs(tmp_path))
    uris = [r.source_uri if isinstance(r, CorpusDoc) else r.path for r in results]
    assert uris == ["blob.txt", "guide/intro.rst", "notes.md", "page.HTML"]
    rejected = [r for r in results if isinstance(r, Rejected)]
    assert rejected == [Rejected("blob.txt", "binary")]
    docs = {r.source_uri: r for r in results if isinstance(r, CorpusDoc)}
    assert docs["guide/intro.rst"].title == "Widget Guide"
    assert "Widgets connect producers to consumers." in docs["guide/intro.rst"].text
    assert docs["page.HTML"].title == "Gadget Page"
    assert "<b>" not in docs["page.HTML"].text and "Gadgets spin" in docs["page.HTML"].text
    assert "\x00" not in docs["notes.md"].text and "Caf\u00e9" in docs["notes.md"].text


def test_folder_reader_accepts_a_single_file(tmp_path: Path) -> None:
    path = tmp_path / "one.md"
    path.write_text("# One\n\nA single document.\n")
    assert list(iter_folder_docs(path)) == [CorpusDoc("One", "one.md", "# One\n\nA single document.")]
