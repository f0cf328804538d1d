"""The corpus readers: standard-library docstrings (read, never imported) and document folders."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kbwiki.corpus import (
    MIN_STDLIB_DOC_CHARS,
    CorpusDoc,
    Rejected,
    Skipped,
    iter_folder_docs,
    iter_stdlib_docs,
    split_front_matter,
)
from wiki.text import document_text, document_title

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
    (tmp_path / "notes.md").write_bytes(b"# Notes\n\nCaf\xc3\xa9 text.\n")
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


def _results(root: Path) -> dict[str, CorpusDoc | Rejected]:
    return {r.source_uri if isinstance(r, CorpusDoc) else r.path: r for r in iter_folder_docs(root)}


def test_text_that_is_not_utf8_is_rejected_with_its_position(tmp_path: Path) -> None:
    # The new-user trial's Latin-1 file: it used to be stored with U+FFFD for each accented letter.
    (tmp_path / "latin1.md").write_bytes(b"# Caf\xe9 notes\n\nStra\xdfe in M\xfcnchen is a street.\n")
    (tmp_path / "cp1252.txt").write_bytes(b"Line one\r\nLine two\r\nIt\x92s a quote.\r\n")
    (tmp_path / "bom_then_latin1.md").write_bytes(b"\xef\xbb\xbf# Caf\xe9\n")
    (tmp_path / "cut_short.rst").write_bytes("Title\n=====\n\nCaf\u00e9".encode()[:-1])
    (tmp_path / "lone_surrogate.html").write_bytes(b"<p>\xed\xb3\xa9</p>")  # UTF-8 of U+DCE9
    (tmp_path / "utf16_lone_surrogate.txt").write_bytes(b"\xff\xfeh\x00i\x00\n\x00\x00\xd8!\x00")
    (tmp_path / "blob.md").write_bytes(b"\x00\xe9binary\x00" * 50)
    (tmp_path / "good.md").write_text("# Good\n\nStill read.\n")

    results = _results(tmp_path)
    where = {
        "latin1.md": "not UTF-8 text (invalid byte 0xe9 at offset 5, line 1)",
        "cp1252.txt": "not UTF-8 text (invalid byte 0x92 at offset 22, line 3)",
        # The offset counts from the start of the file, BOM included.
        "bom_then_latin1.md": "not UTF-8 text (invalid byte 0xe9 at offset 8, line 1)",
        "cut_short.rst": "not UTF-8 text (invalid byte 0xc3 at offset 16, line 4)",
        "lone_surrogate.html": "not UTF-8 text (invalid byte 0xed at offset 3, line 1)",
        "utf16_lone_surrogate.txt": "not UTF-16 text (illegal UTF-16 surrogate at offset 8, line 2)",
    }
    for name, problem in where.items():
        assert results[name] == Rejected(name, problem + "; convert it to UTF-8")
    assert results["blob.md"] == Rejected("blob.md", "binary")  # binary is checked first
    assert results["good.md"] == CorpusDoc("Good", "good.md", "# Good\n\nStill read.")


def test_names_that_do_not_print_on_one_line_are_rejected_and_shown_escaped(tmp_path: Path) -> None:
    # A new user's trial: a file named "new\nline.md" was queued, and every listing of the KB's
    # documents printed its row over two lines.
    _make(tmp_path / "a.md", b"# A\n\nFirst.\n")
    _make(tmp_path / "new\nline.md", b"# N\n\nA newline in the name.\n")
    _make(tmp_path / "rtl\u202e" / "inner.md", b"# I\n\nA bidirectional control in the folder name.\n")
    results = list(iter_folder_docs(tmp_path))
    assert results == [
        CorpusDoc("A", "a.md", "# A\n\nFirst."),
        Rejected("new\\nline.md", "file name contains a control character (\\n); rename it"),
        Rejected("rtl\\u202e/inner.md", "folder name contains a bidirectional control (\\u202e); rename it"),
    ]


def test_utf8_bom_utf16_and_crlf_still_read(tmp_path: Path) -> None:
    body = "# Caf\u00e9 notes\r\n\r\nStra\u00dfe in M\u00fcnchen.\r\n"
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbf" + body.encode())
    (tmp_path / "crlf.md").write_bytes(body.encode())
    (tmp_path / "le.md").write_bytes(body.encode("utf-16"))  # with a BOM
    (tmp_path / "be.md").write_bytes(b"\xfe\xff" + body.encode("utf-16-be"))
    expected = "# Caf\u00e9 notes\n\nStra\u00dfe in M\u00fcnchen."
    results = _results(tmp_path)
    assert list(results) == ["be.md", "bom.md", "crlf.md", "le.md"]
    for uri, doc in results.items():
        assert doc == CorpusDoc("Caf\u00e9 notes", uri, expected)


def _make(path: Path, data: bytes) -> None:
    try:
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses names that are not UTF-8")


def test_names_that_are_not_utf8_are_rejected_and_the_rest_is_read(tmp_path: Path) -> None:
    # The trial's `touch $'caf\xe9.md'`: os.walk gives 'caf\udce9.md', which crashed the ingest
    # (UnicodeEncodeError storing the source_uri) and lost every file after it.
    _make(tmp_path / "a.md", b"# A\n\nFirst.\n")
    _make(tmp_path / "caf\udce9.md", b"# Cafe\n\nLatin-1 name.\n")
    _make(tmp_path / "d\udce9" / "inner.md", b"# Inner\n\nIn a Latin-1 folder.\n")
    _make(tmp_path / "z.md", b"# Z\n\nLast.\n")

    results = list(iter_folder_docs(tmp_path))
    assert results == [
        CorpusDoc("A", "a.md", "# A\n\nFirst."),
        Rejected("caf\\xe9.md", "file name is not valid UTF-8; rename it"),
        Rejected("d\\xe9/inner.md", "folder name is not valid UTF-8; rename it"),
        CorpusDoc("Z", "z.md", "# Z\n\nLast."),
    ]
    for r in results:  # everything can be stored in PostgreSQL and printed
        for value in (r.title, r.source_uri, r.text) if isinstance(r, CorpusDoc) else (r.path, r.reason):
            value.encode("utf-8")


def test_a_single_file_whose_name_is_not_utf8_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "caf\udce9 notes.md"
    _make(path, b"# Notes\n\nText.\n")
    assert list(iter_folder_docs(path)) == [Rejected("caf\\xe9 notes.md", "file name is not valid UTF-8; rename it")]


def test_stdlib_module_names_that_are_not_utf8_are_skipped(tmp_path: Path) -> None:
    # Module names become titles and source URIs: a surrogate is not an identifier character.
    _make(tmp_path / "caf\udce9.py", DOC.encode())
    _make(tmp_path / "plain.py", DOC.encode())
    assert [doc.title for doc in iter_stdlib_docs(tmp_path)] == ["plain"]


FRONT_MATTER = "---\ntitle: Front Matter Title\ntags: [alpha, beta]\nauthor: Jane Doe\n---\n\n"
BODY = "# Heading\n\nBody text about widgets.\n"


def test_front_matter_is_dropped_and_gives_the_title(tmp_path: Path) -> None:
    # The trial's file: the front matter was read as prose ("tags: [alpha, beta]", "Jane Doe").
    (tmp_path / "trial.md").write_text(FRONT_MATTER + BODY)
    (tmp_path / "crlf.markdown").write_bytes((FRONT_MATTER + BODY).replace("\n", "\r\n").encode())
    (tmp_path / "bom.md").write_bytes(b"\xef\xbb\xbf" + (FRONT_MATTER + BODY).encode())
    (tmp_path / "utf16.md").write_bytes((FRONT_MATTER + BODY).encode("utf-16"))
    results = _results(tmp_path)
    for uri in ("trial.md", "crlf.markdown", "bom.md", "utf16.md"):
        assert results[uri] == CorpusDoc("Front Matter Title", uri, BODY.rstrip()), uri


@pytest.mark.parametrize(
    ("name", "content", "title", "text"),
    [
        # Not valid YAML: still metadata, dropped; the title comes from the heading.
        ("bad_yaml.md", "---\ntitle: [unclosed\n---\n" + BODY, "Heading", BODY),
        ("bad_date.md", "---\ntitle: X\ndate: 2023-13-45\n---\n" + BODY, "Heading", BODY),
        # Valid YAML without a string title, or an empty one.
        ("number.md", "---\ntitle: 2023\n---\n" + BODY, "Heading", BODY),
        ("list.md", "---\n- a\n- b\n---\n" + BODY, "Heading", BODY),
        ("empty.md", "---\n---\n" + BODY, "Heading", BODY),
        ("blank_title.md", "---\ntitle: '  '\n---\n" + BODY, "Heading", BODY),
        ("no_heading.md", "---\ndraft: true\n...\nJust prose.\n", "no heading", "Just prose.\n"),
        # A YAML escape cannot smuggle a lone surrogate or a control into the title.
        ("escapes.md", '---\ntitle: "Caf\\udce9\\0 \\n Notes"\n---\n' + BODY, "Caf Notes", BODY),
        # Not front matter: kept as it is.
        ("later.md", BODY + "\n---\ntitle: Later\n---\n", "Heading", BODY + "\n---\ntitle: Later\n---\n"),
        ("blank_first.md", "\n---\ntitle: X\n---\n" + BODY, None, None),
        ("unclosed.md", "---\ntitle: X\n\n" + BODY, None, None),
        ("spaced.md", "--- \ntitle: X\n---\n" + BODY, None, None),
        ("notes.txt", FRONT_MATTER + BODY, None, None),
    ],
)
def test_front_matter_rules(tmp_path: Path, name: str, content: str, title: str | None, text: str | None) -> None:
    (tmp_path / name).write_text(content)
    [doc] = iter_folder_docs(tmp_path)
    assert isinstance(doc, CorpusDoc)
    if text is None:  # left alone: read exactly as before front matter was recognised
        kept = document_text(name, content.encode())
        assert doc == CorpusDoc(document_title(name, kept), name, kept)
        assert "title: X" in doc.text or "title: Front Matter Title" in doc.text
    else:
        assert doc == CorpusDoc(title, name, text.strip())


def test_split_front_matter_cuts_a_long_title() -> None:
    title, body = split_front_matter("---\ntitle: " + "word " * 100 + "\n---\nBody")
    assert body == "Body"
    assert title is not None and len(title) <= 200 and title.startswith("word word")
    assert split_front_matter("Body\n---\nx: 1\n---\n") == (None, "Body\n---\nx: 1\n---\n")


def test_the_walk_streams_in_the_order_of_the_sorted_relative_paths(tmp_path: Path) -> None:
    names = ["a.md", "a/b.md", "a-b/c.md", "a b.md", "a/a/a.md", "B.md", "ab.md", "a.md.md", "z/ä.md", "é.md"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(f"# {name}\n\nA document named {name} in a folder being walked.\n")
    assert [d.source_uri for d in iter_folder_docs(tmp_path)] == sorted(names)


def test_paths_are_named_under_the_given_path_in_the_kb(tmp_path: Path) -> None:
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "one.md").write_text("# One\n\nA single document.\n")
    (tmp_path / "guide" / "blob.txt").write_bytes(b"\x00\x01binary\x00" * 20)
    assert list(iter_folder_docs(tmp_path / "guide", "docs/guide")) == [
        Rejected("docs/guide/blob.txt", "binary"),
        CorpusDoc("One", "docs/guide/one.md", "# One\n\nA single document."),
    ]
    one = tmp_path / "guide" / "one.md"
    assert [d.source_uri for d in iter_folder_docs(one, "docs/guide/one.md")] == ["docs/guide/one.md"]


def test_symlinks_inside_the_folder(tmp_path: Path) -> None:
    (tmp_path / ".drafts").mkdir()
    (tmp_path / ".drafts" / "next.md").write_text("# Next\n\nA draft in a hidden folder, read through a link.\n")
    (tmp_path / "v2").mkdir()
    (tmp_path / "v2" / "api.md").write_text("# API\n\nThe second version of the interface.\n")
    (tmp_path / "next.md").symlink_to(".drafts/next.md")  # the walk never reads its target: read here
    (tmp_path / "latest").symlink_to("v2", target_is_directory=True)
    (tmp_path / "notes").symlink_to("v2/api.md")  # no document extension: not a document
    assert _results(tmp_path) == {
        "latest": Skipped("latest", "symbolic link to folder v2, inside the folder; not followed"),
        "next.md": CorpusDoc("Next", "next.md", "# Next\n\nA draft in a hidden folder, read through a link."),
        "v2/api.md": CorpusDoc("API", "v2/api.md", "# API\n\nThe second version of the interface."),
    }


@pytest.mark.timeout(30)  # reading a FIFO waits for a writer: the old reader hung here
def test_a_file_that_is_not_a_regular_one_is_rejected(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    (tmp_path / "z.md").write_text("# Z\n\nRead after the pipe.\n")
    assert list(iter_folder_docs(tmp_path)) == [
        Rejected("pipe.md", "not a regular file"),
        CorpusDoc("Z", "z.md", "# Z\n\nRead after the pipe."),
    ]


def test_a_folder_that_cannot_be_listed_is_rejected_and_the_rest_read(tmp_path: Path) -> None:
    # A real OSError while walking: a folder whose path is longer than the system's PATH_MAX
    # cannot be listed (made through folder descriptors, which have no such limit).
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(20):
            os.mkdir("d" * 250, dir_fd=fd)
            inner = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)
    (tmp_path / "z.md").write_text("# Z\n\nRead after the deep folder.\n")
    results = list(iter_folder_docs(tmp_path))
    assert results[-1] == CorpusDoc("Z", "z.md", "# Z\n\nRead after the deep folder.")
    [deep] = results[:-1]
    assert type(deep) is Rejected and deep.reason == "unreadable folder (File name too long)"
    assert deep.path.startswith("d" * 250 + "/")
