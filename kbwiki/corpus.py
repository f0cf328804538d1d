"""Document sources for ingest and demos: the Python standard library's docstrings and folders.

Both readers are generators in a deterministic (sorted) order, so a run over the same input
submits the same documents in the same order; memory stays bounded by one document.
"""

from __future__ import annotations

import ast
import os
import sysconfig
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from wiki.text import BadDocument, document_text, document_title

#: Folder and module names never read from the standard library: tests, demos with side
#: effects on import, private helpers and platform build folders.
STDLIB_SKIP = frozenset({
    "test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__", "__main__",
    "this", "antigravity", "lib-dynload",
})
#: Modules whose docstrings add up to fewer characters are skipped (too thin for a page).
MIN_STDLIB_DOC_CHARS = 200
#: Extensions ``iter_folder_docs`` reads (lower case).
FOLDER_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt", ".html", ".htm"})
#: Files larger than this are rejected unread; the ingest cuts documents far below it anyway.
MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class CorpusDoc:
    """One document to ingest: its title, where it came from, and its clean text."""

    title: str
    source_uri: str
    text: str


@dataclass(frozen=True)
class Rejected:
    """A file that cannot become a document. ``path`` is relative to the folder read (POSIX form);
    ``reason`` is a short code ("binary", "unsupported type", "too large", "unreadable")."""

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
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
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
    """Document files under ``root`` sorted by relative POSIX path (a few MB for 40,000 files)."""
    if root.is_file():
        return [root]
    found: list[Path] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(
            Path(folder) / name
            for name in files
            if not name.startswith(".") and Path(name).suffix.lower() in FOLDER_EXTENSIONS
        )
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def iter_folder_docs(root: Path) -> Iterator[CorpusDoc | Rejected]:
    """Every document file under ``root`` (a folder, read recursively, or a single file).

    Reads ``.md .markdown .rst .txt .html .htm`` files (any case) sorted by relative path, skipping
    hidden files and folders; text and title come from ``wiki.text.document_text`` /
    ``document_title``. A file that cannot be used yields ``Rejected(path, reason)`` instead of
    raising: the ``BadDocument`` reason ("binary", ...), "too large" (over ``MAX_FILE_BYTES``)
    or "unreadable" (an ``OSError``). ``source_uri`` and ``Rejected.path`` are the path relative
    to ``root`` in POSIX form (the file name when ``root`` is a file).
    """
    root = Path(root)
    for path in _folder_files(root):
        rel = path.name if root.is_file() else path.relative_to(root).as_posix()
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                yield Rejected(rel, "too large")
                continue
            data = path.read_bytes()
        except OSError:
            yield Rejected(rel, "unreadable")
            continue
        try:
            text = document_text(path.name, data)
        except BadDocument as exc:
            yield Rejected(rel, exc.reason)
            continue
        yield CorpusDoc(title=document_title(path.name, text), source_uri=rel, text=text)
