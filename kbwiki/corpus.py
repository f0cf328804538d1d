"""Document sources for ingest and demos: the Python standard library's docstrings and folders.

Both readers are generators in a deterministic (sorted) order, so a run over the same input
submits the same documents in the same order; memory stays bounded by one document.
"""

from __future__ import annotations

import ast
import math
import os
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from wiki.markdown import front_matter
from wiki.settings import Settings
from wiki.text import BadDocument, clean_text, cut, document_text, document_title, is_binary

#: Folder and module names never read from the standard library: tests, demos with side
#: effects on import, private helpers and platform build folders.
STDLIB_SKIP = frozenset(
    {
        "test",
        "tests",
        "idle_test",
        "site-packages",
        "dist-packages",
        "__pycache__",
        "__main__",
        "this",
        "antigravity",
        "lib-dynload",
    }
)
#: Modules whose docstrings add up to fewer characters are skipped (too thin for a page).
MIN_STDLIB_DOC_CHARS = 200
#: Extensions ``iter_folder_docs`` reads (lower case).
FOLDER_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt", ".html", ".htm"})
#: Files larger than this many MiB are rejected unread (``KBWIKI_MAX_FILE_MB``); the ingest cuts
#: documents far below it anyway (``KBWIKI_MAX_DOCUMENT_CHARS``).
DEFAULT_MAX_FILE_MB: int = Settings.model_fields["max_file_mb"].default
MIB = 1024 * 1024
#: Extensions whose files may open with a YAML front matter block (lower case).
FRONT_MATTER_EXTENSIONS = frozenset({".md", ".markdown"})
#: A front-matter title is cut to this many characters (the length of a heading title).
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class CorpusDoc:
    """One document to ingest: its title, where it came from, and its clean text."""

    title: str
    source_uri: str
    text: str


@dataclass(frozen=True)
class Rejected:
    """A file that cannot become a document. ``path`` is relative to the folder read (POSIX form;
    bytes of a name that are not UTF-8 shown as ``\\xe9``, so it can always be printed);
    ``reason`` is a short code ("binary", "unsupported type") or a sentence saying what is wrong
    and what to do ("too large: 100.0 MiB, over the 20 MiB limit (KBWIKI_MAX_FILE_MB raises it)",
    "unreadable: Permission denied", "not UTF-8 text (...); convert it to UTF-8", "file name is not
    valid UTF-8; rename it", the same for a folder name)."""

    path: str
    reason: str


# --- the standard library ---------------------------------------------------------------------


def _public(name: str) -> bool:
    return name.isidentifier() and not name.startswith("_") and name not in STDLIB_SKIP


def _stdlib_modules(root: Path) -> Iterator[tuple[str, Path]]:
    """(dotted module name, source file) for every public module and package under ``root``."""
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.is_file() and entry.suffix == ".py" and _public(entry.stem):
            yield entry.stem, entry
        elif entry.is_dir() and _public(entry.name) and (entry / "__init__.py").is_file():
            yield from _package_modules(entry.name, entry)


def _package_modules(name: str, folder: Path) -> Iterator[tuple[str, Path]]:
    yield name, folder / "__init__.py"
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.is_file() and entry.suffix == ".py" and _public(entry.stem):
            yield f"{name}.{entry.stem}", entry
        elif entry.is_dir() and _public(entry.name) and (entry / "__init__.py").is_file():
            yield from _package_modules(f"{name}.{entry.name}", entry)


def _declared_all(tree: ast.Module) -> set[str] | None:
    """The names of a literal ``__all__ = [...]``, or None when there is none."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                return set(value)
    return None


def module_markdown(name: str, tree: ast.Module) -> tuple[str, int]:
    """Markdown for module ``name`` from its syntax tree, and the docstring characters it holds.

    Layout: ``# name`` and the module docstring, then ``## Class`` / ``## function`` for each
    public top-level class and function (in ``__all__`` when the module declares a literal one)
    with its docstring, and ``### Class.method`` for documented public methods.
    """
    exported = _declared_all(tree)
    parts = [f"# {name}"]
    chars = 0
    doc = ast.get_docstring(tree)
    if doc:
        parts.append(doc)
        chars += len(doc)
    for node in tree.body:
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if node.name.startswith("_") or (exported is not None and node.name not in exported):
            continue
        doc = ast.get_docstring(node)
        methods: list[str] = []
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                    method_doc = ast.get_docstring(item)
                    if method_doc:
                        methods.append(f"### {node.name}.{item.name}\n\n{method_doc}")
                        chars += len(method_doc)
        if not doc and not methods:
            continue
        parts.append(f"## {node.name}")
        if doc:
            parts.append(doc)
            chars += len(doc)
        parts.extend(methods)
    return "\n\n".join(parts) + "\n", chars


def iter_stdlib_docs(stdlib: Path | None = None) -> Iterator[CorpusDoc]:
    """The documentation of the standard library's public modules, one ``CorpusDoc`` per module.

    Reads the source files under ``stdlib`` (default ``sysconfig.get_paths()["stdlib"]``) with
    ``ast`` only: nothing is imported or executed. Covers top-level public modules and packages
    and the public modules of public packages, recursively; names starting with ``_``, tests
    and ``STDLIB_SKIP`` are left out. Files that cannot be read or parsed are skipped, and so are
    modules with fewer than ``MIN_STDLIB_DOC_CHARS`` (200) characters of docstrings.
    title = the dotted module name (``json.decoder``), source_uri = ``stdlib:<name>``, text =
    Markdown from ``module_markdown``. Sorted by module name; titles are unique.
    """
    root = Path(stdlib or sysconfig.get_paths()["stdlib"])
    found: dict[str, Path] = {}
    for name, path in _stdlib_modules(root):
        found.setdefault(name, path)
    for name in sorted(found):
        try:
            tree = ast.parse(found[name].read_bytes(), filename=str(found[name]))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        text, chars = module_markdown(name, tree)
        if chars >= MIN_STDLIB_DOC_CHARS:
            yield CorpusDoc(title=name, source_uri=f"stdlib:{name}", text=text)


# --- folders ------------------------------------------------------------------------------------


def _folder_files(root: Path) -> list[Path]:
    """Document files under ``root`` sorted by relative POSIX path (a few MB for 40,000 files),
    and the symlinked folders that lead outside it (to be rejected with a reason; symlinked folders
    are never followed, and one inside ``root`` is read through its real path)."""
    if root.is_file():
        return [root]
    base = root.resolve()
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(folder) / d for d in dirs if _outside(Path(folder) / d, base) is not None)
        found.extend(
            Path(folder) / name
            for name in files
            if not name.startswith(".") and Path(name).suffix.lower() in FOLDER_EXTENSIONS
        )
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _outside(path: Path, base: Path) -> Path | None:
    """Where ``path`` leads when a symbolic link takes it outside the folder ``base`` (resolved); else None."""
    if not path.is_symlink():
        return None
    target = path.resolve()
    return None if target.is_relative_to(base) else target


def _printable(name: str) -> str:
    """``name`` with the bytes that were not UTF-8 (surrogate escapes from ``os.walk``) written as
    ``\\xe9``: a str that encodes to UTF-8, for messages. Valid names come back unchanged."""
    try:
        raw = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no file system decoding produces
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _bad_name(path: Path, rel: str) -> str | None:
    """The rejection reason when relative path ``rel`` of ``path`` is not valid UTF-8, else None.

    Such a name reaches Python as lone surrogates, which neither PostgreSQL nor a UTF-8 terminal
    accepts: it could be neither stored as a ``source_uri`` nor printed.
    """
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        try:
            path.name.encode("utf-8")
        except UnicodeEncodeError:
            return "file name is not valid UTF-8; rename it"
        return "folder name is not valid UTF-8; rename it"
    return None


def decode_strict(data: bytes) -> str:
    """``data`` as text: UTF-8 (a leading BOM dropped), or UTF-16 when it starts with a UTF-16 BOM.

    Raises ``BadDocument`` whose ``reason`` names the first undecodable byte, its offset in
    ``data`` and its line, e.g. "not UTF-8 text (invalid byte 0xe9 at offset 5, line 1); convert
    it to UTF-8": a Latin-1 or cp1252 file decoded leniently would be stored with U+FFFD in
    place of its accented letters, and guessing the encoding could be silently wrong.
    """
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:  # offsets count from the start of data, BOM included
            line = data[: exc.start].decode("utf-16", "replace").count("\n") + 1
            where = f"{exc.reason} at offset {exc.start}, line {line}"
            raise BadDocument(f"not UTF-16 text ({where}); convert it to UTF-8") from None
    skip = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = skip + exc.start
        line = data.count(b"\n", 0, at) + 1
        where = f"invalid byte 0x{data[at]:02x} at offset {at}, line {line}"
        raise BadDocument(f"not UTF-8 text ({where}); convert it to UTF-8") from None


def split_front_matter(text: str) -> tuple[str | None, str]:
    """(title from the front matter or None, text without it) for Markdown text ``text``.

    The block is ``wiki.markdown.front_matter``'s: it opens the text (first line ``---``) and is
    closed by a line ``---`` or ``...``; a ``---`` anywhere later, or an opening one never closed,
    is left alone. The block is
    dropped even when it is not valid YAML (it is metadata, not prose). The title is its
    ``title`` when the block is a YAML mapping whose ``title`` is a string: one line, clean (no
    controls or lone surrogates), at most ``MAX_TITLE_CHARS``; None when empty. Never raises.
    """
    source, end = front_matter(text)
    if source is None:
        return None, text
    body = text[end:]
    try:
        meta = yaml.safe_load(source)
    except (yaml.YAMLError, ValueError, RecursionError):  # ValueError: e.g. a date 2023-13-45
        return None, body
    title = meta.get("title") if isinstance(meta, dict) else None
    if not isinstance(title, str):
        return None, body
    # YAML escapes can spell any code point ("\udce9", "\0"): clean like the document text.
    title = cut(" ".join(clean_text(title).split()), MAX_TITLE_CHARS)[0]
    return title or None, body


def _read_doc(path: Path, rel: str, data: bytes) -> CorpusDoc | Rejected:
    """The document in file ``path`` (bytes ``data``), or why it is rejected."""
    try:
        if is_binary(data):  # checked first: a binary file is "binary", not "not UTF-8"
            raise BadDocument("binary", path.name)
        decoded = decode_strict(data)
        title = None
        if path.suffix.lower() in FRONT_MATTER_EXTENSIONS:
            title, body = split_front_matter(decoded)
            if len(body) != len(decoded):
                data = body.encode("utf-8")  # front matter dropped; document_text reads bytes
        text = document_text(path.name, data)
    except BadDocument as exc:
        return Rejected(rel, exc.reason)
    return CorpusDoc(title=title or document_title(path.name, text), source_uri=rel, text=text)


def too_large(size_bytes: int, max_file_mb: int) -> str:
    """The reason a file of ``size_bytes`` over the ``max_file_mb`` limit is rejected: its size in
    MiB rounded up to a tenth (so it never reads as the limit itself), the limit and the setting
    that raises it."""
    size_mb = math.ceil(size_bytes * 10 / MIB) / 10
    return f"too large: {size_mb:.1f} MiB, over the {max_file_mb} MiB limit (KBWIKI_MAX_FILE_MB raises it)"


def iter_folder_docs(root: Path, max_file_mb: int = DEFAULT_MAX_FILE_MB) -> Iterator[CorpusDoc | Rejected]:
    """Every document file under ``root`` (a folder, read recursively, or a single file).

    Reads ``.md .markdown .rst .txt .html .htm`` files (any case) sorted by relative path, skipping
    hidden files and folders; text and title come from ``wiki.text.document_text`` /
    ``document_title``, except that a Markdown file's leading YAML front matter is dropped and its
    string ``title`` wins (``split_front_matter``). A file that cannot be used yields
    ``Rejected(path, reason)`` instead of raising: a path that is not valid UTF-8 ("file name is
    not valid UTF-8; rename it", or "folder name ..."), a symbolic link (to a file or a folder)
    that leads outside ``root`` ("symbolic link to ..., outside the folder; skipped"), "too
    large: ..." (over ``max_file_mb`` MiB, :func:`too_large`), "unreadable: <the OS's reason>"
    (an ``OSError``), "binary", or text that
    is neither UTF-8 nor UTF-16 with a BOM
    (``decode_strict``'s reason). ``source_uri`` and ``Rejected.path`` are the path relative to
    ``root`` in POSIX form (the file name when ``root`` is a file).
    """
    root = Path(root)
    base = root.resolve()
    for path in _folder_files(root):
        rel = path.name if root.is_file() else path.relative_to(root).as_posix()
        bad_name = _bad_name(path, rel)
        if bad_name:
            yield Rejected(_printable(rel), bad_name)
            continue
        target = None if root.is_file() else _outside(path, base)
        if target is not None:  # reading it would ingest what the user did not point at
            yield Rejected(rel, f"symbolic link to {_printable(str(target))}, outside the folder; skipped")
            continue
        try:
            size = path.stat().st_size
            if size > max_file_mb * MIB:
                yield Rejected(rel, too_large(size, max_file_mb))
                continue
            data = path.read_bytes()
        except OSError as exc:
            yield Rejected(rel, f"unreadable: {exc.strerror or type(exc).__name__}")
            continue
        yield _read_doc(path, rel, data)
