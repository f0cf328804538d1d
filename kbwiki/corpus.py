"""Document sources for ingest and demos: the Python standard library's docstrings and folders.

Both readers are generators in a deterministic (sorted) order, so a run over the same input
submits the same documents in the same order; memory stays bounded by one document.
"""

from __future__ import annotations

import ast
import errno
import math
import os
import stat
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import yaml

from wiki.markdown import front_matter
from wiki.models import printable, unprintable
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
    """A file that cannot become a document. ``path`` is its source path (``iter_folder_docs``; POSIX
    form, bytes of a name that are not UTF-8 shown as ``\\xe9``, so it can always be printed);
    ``reason`` is a short code ("binary", "unsupported type", "not a regular file") or a sentence
    saying what is wrong and what to do ("too large: 100.0 MiB, over the 20 MiB limit
    (KBWIKI_MAX_FILE_MB raises it)", "not UTF-8 text (...); convert it to UTF-8", "file name is not
    valid UTF-8; rename it", the same for a folder name, "unreadable (Permission denied)").
    ``status`` is the word ingest reports it under."""

    path: str
    reason: str
    status: ClassVar[str] = "rejected"


@dataclass(frozen=True)
class Skipped(Rejected):
    """A file left out on purpose, nothing to fix: a symbolic link to a file read anyway, or to a
    folder (never followed). Reported as ``skipped``, like a document too short to keep."""

    status: ClassVar[str] = "skipped"


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


def path_within(path: str, folder: str) -> str | None:
    """``path`` relative to ``folder`` in POSIX form ("" when they are the same), or None when it is
    neither ``folder`` nor under it. Both are absolute real paths (``os.path.realpath``), compared
    by whole components: ``/a/bc`` is not under ``/a/b``."""
    if path == folder:
        return ""
    prefix = folder if folder.endswith("/") else folder + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def _join(at: str, rel: str) -> str:
    """Relative path ``rel`` under ``at`` (both POSIX, "" for the folder itself)."""
    return f"{at}/{rel}" if at and rel else at or rel


def _is_document_name(name: str) -> bool:
    return Path(name).suffix.lower() in FOLDER_EXTENSIONS


def _listing(folder: str, rel: str) -> list[tuple[str, str, os.DirEntry | OSError, bool]]:
    """(sort key, relative path, entry, is a folder) of the visible entries of ``folder`` (at
    relative path ``rel``, "" or ending in "/"), in walk order; [(.., rel, error, False)] when it
    cannot be listed. A folder's key ends in "/", so the walk's order is that of the relative paths
    sorted as strings ("a.md" before "a/b.md")."""
    try:
        with os.scandir(folder) as entries:
            visible = [e for e in entries if not e.name.startswith(".")]
    except OSError as exc:
        return [("", rel.rstrip("/"), exc, False)]
    listed = []
    for entry in visible:
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:  # read as a file, whose stat then says what is wrong
            is_dir = False
        path = rel + entry.name
        listed.append((path + "/" if is_dir else path, path, entry, is_dir))
    listed.sort(key=lambda item: item[0])
    return listed


def _walk(base: str) -> Iterator[tuple[str, os.DirEntry | OSError]]:
    """(path relative to folder ``base`` in POSIX form, entry) of every entry under ``base`` that is
    not a folder (files, symbolic links, FIFOs...), and (relative path, ``OSError``) of every
    folder that cannot be listed ("" for ``base``), sorted by relative path; hidden names (a leading
    ".") are left out with what is under them. Symbolic links to folders are yielded, never followed,
    so a link loop cannot trap the walk. Streams: memory is one listing per level being walked."""
    levels = [iter(_listing(base, ""))]
    while levels:
        item = next(levels[-1], None)
        if item is None:
            levels.pop()
            continue
        _, rel, entry, is_dir = item
        if is_dir:
            levels.append(iter(_listing(entry.path, rel + "/")))
        else:
            yield rel, entry


def _bad_name(rel: str) -> str | None:
    """The rejection reason when relative path ``rel`` is not valid UTF-8 or holds a character
    that does not print on one line (``wiki.models.unprintable``: a newline, a bidirectional
    control), else None.

    A name that is not UTF-8 reaches Python as lone surrogates, which neither PostgreSQL nor a
    UTF-8 terminal accepts: it could be neither stored as a ``source_uri`` nor printed. A newline
    in a name split its row in two in every listing (``kbwiki documents``, ``delete``).
    """
    folder, _, name = rel.rpartition("/")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            return "file name is not valid UTF-8; rename it"
        return "folder name is not valid UTF-8; rename it"
    if what := unprintable(name):
        return f"file name contains {what}; rename it"
    if what := unprintable(folder):
        return f"folder name contains {what}; rename it"
    return None


def _os_reason(exc: OSError) -> str:
    """What the operating system said, e.g. "Permission denied"."""
    return exc.strerror or str(exc)


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


def _read_doc(name: str, rel: str, data: bytes) -> CorpusDoc | Rejected:
    """The document in the bytes ``data`` of a file named ``name``, or why it is rejected."""
    path = Path(name)
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


def _read_file(path: str, rel: str, max_file_mb: int) -> CorpusDoc | Rejected:
    """The document in file ``path`` (read as a file named like the last part of ``rel``, its source
    path), or why it is rejected: "not a regular file" (a FIFO, socket or device: reading one could
    block or never end), "too large: ..." (over ``max_file_mb`` MiB, :func:`too_large`),
    "unreadable (<what the system said>)"."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return Rejected(rel, "not a regular file")
        # O_NONBLOCK: should the file become a FIFO after the stat, opening it must not wait for a writer
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return Rejected(rel, "not a regular file")
            if info.st_size > max_file_mb * MIB:
                return Rejected(rel, too_large(info.st_size, max_file_mb))
            data = file.read()
    except OSError as exc:
        return Rejected(rel, f"unreadable ({_os_reason(exc)})")
    return _read_doc(rel.rpartition("/")[2], rel, data)


def _broken_link(path: str, exc: OSError) -> str:
    """Why the symbolic link ``path`` leads nowhere (``exc``: what resolving it raised)."""
    if exc.errno == errno.ELOOP:
        return "symbolic link loop (it leads back to itself); skipped"
    try:
        target = printable(os.readlink(path))
    except OSError:
        return f"unreadable ({_os_reason(exc)})"
    if exc.errno == errno.ENOENT:
        return f"symbolic link to {target}, which does not exist; skipped"
    return f"symbolic link to {target} cannot be followed ({_os_reason(exc)}); skipped"


def _link_entry(entry: os.DirEntry, rel: str, base: str, at: str, max_file_mb: int) -> CorpusDoc | Rejected | None:
    """What the symbolic link ``entry`` (at ``rel`` under folder ``base``, whose source path is
    ``at``) gives: a link to a folder is never followed (its target is outside the folder, inside
    it, or a folder holding the link: a loop, each said so); a link to a file outside the folder is
    rejected and one to a file the walk reads anyway is skipped as a duplicate (decided by the
    target's relative path: no set of files seen); any other is read through. None for a link that
    is no document (a file of another extension)."""
    uri = _join(at, rel)
    is_document = _is_document_name(entry.name)
    try:
        target = os.path.realpath(entry.path, strict=True)
    except OSError as exc:  # a loop, a dangling link, a forbidden folder on the way
        return Rejected(uri, _broken_link(entry.path, exc)) if is_document else None
    is_folder = os.path.isdir(target)
    if not (is_folder or is_document):
        return None
    inside = path_within(target, base)
    if inside is None:  # reading it would ingest what the user did not point at
        return Rejected(uri, f"symbolic link to {printable(target)}, outside the folder; skipped")
    shown = printable(_join(at, inside)) or "."
    if is_folder:
        holder = rel.rpartition("/")[0]
        if path_within(holder, inside) is not None or inside == "":
            return Skipped(uri, f"symbolic link to {shown}, a folder that holds it (a loop); not followed")
        return Skipped(uri, f"symbolic link to folder {shown}, inside the folder; not followed")
    parts = inside.split("/")
    if _is_document_name(parts[-1]) and not any(part.startswith(".") for part in parts):
        return Skipped(uri, f"same file as {shown} (a symbolic link to it)")
    return _read_file(target, uri, max_file_mb)  # a file the walk leaves out (hidden, another extension)


def iter_folder_docs(
    root: Path, at: str | None = None, max_file_mb: int = DEFAULT_MAX_FILE_MB
) -> Iterator[CorpusDoc | Rejected]:
    """Every document file under ``root`` (a folder, read recursively, or a single file).

    Reads ``.md .markdown .rst .txt .html .htm`` files (any case) sorted by relative path, skipping
    hidden files and folders; text and title come from ``wiki.text.document_text`` /
    ``document_title``, except that a Markdown file's leading YAML front matter is dropped and its
    string ``title`` wins (``split_front_matter``). The folder walked is ``root``'s real path.

    ``source_uri`` and ``Rejected.path`` are the path relative to ``root`` in POSIX form, under
    ``at`` when given (``root``'s own path relative to its KB's root folder, see
    ``kbwiki.source_root``; for a single file, its whole path there); without ``at``, relative to
    ``root`` (the file name when ``root`` is a file).

    Never raises for one file: it yields ``Rejected(path, reason)`` instead, or ``Skipped`` for a
    file left out on purpose, and goes on:

    - a path that is not valid UTF-8 ("file name is not valid UTF-8; rename it", or "folder name ...");
    - a symbolic link (to a file or a folder) that leads outside ``root``'s real path ("symbolic
      link to ..., outside the folder; skipped"); a link loop, or one to nothing ("symbolic link
      loop (it leads back to itself); skipped", "symbolic link to X, which does not exist; skipped");
    - ``Skipped``: a link to a file the walk reads anyway ("same file as <its path> (a symbolic link
      to it)"), and a link to a folder inside ``root``, which is never followed ("symbolic link to
      folder X, inside the folder; not followed"; "symbolic link to X, a folder that holds it (a
      loop); not followed");
    - "not a regular file" (a FIFO, socket or device), "too large: ..." (over ``max_file_mb`` MiB, :func:`too_large`),
      "unreadable (<reason>)" (any other ``OSError``; "unreadable folder (<reason>)" for a folder
      that cannot be listed, with nothing under it read), "binary", or text that is neither UTF-8
      nor UTF-16 with a BOM (``decode_strict``'s reason).
    """
    root = Path(root)
    try:
        base = os.path.realpath(root, strict=True)
    except OSError as exc:
        uri = at if at is not None else root.name
        yield Rejected(printable(uri), _broken_link(str(root), exc) if root.is_symlink() else _os_reason(exc))
        return
    if not os.path.isdir(base):
        uri = at if at is not None else root.name
        bad_name = _bad_name(uri)
        yield Rejected(printable(uri), bad_name) if bad_name else _read_file(base, uri, max_file_mb)
        return
    at = at or ""
    for rel, entry in _walk(base):
        uri = _join(at, rel)
        if isinstance(entry, OSError):
            yield Rejected(printable(uri) or ".", f"unreadable folder ({_os_reason(entry)})")
            continue
        try:
            is_link = entry.is_symlink()
        except OSError:
            is_link = False
        if not is_link and not _is_document_name(entry.name):
            continue
        if bad_name := _bad_name(uri):
            yield Rejected(printable(uri), bad_name)
            continue
        result = _link_entry(entry, rel, base, at, max_file_mb) if is_link else _read_file(entry.path, uri, max_file_mb)
        if result is not None:
            yield result
