"""Export a KB's wiki as an Obsidian-compatible vault: one Markdown file per page.

Layout: ``<out>/<page_type>/<slug>.md`` (the index page at ``<out>/index.md``), YAML front matter
with title, type, aliases and sources. Links stay ``[[slug|display]]``: slugs are unique in a KB,
so Obsidian resolves them by file name. Pages are read with a keyset cursor, 200 at a time.

The ``.kbwiki-vault`` marker (JSON: ``kb``, ``kb_id``, ``files``, ``sha256``) records which KB the
folder holds, the vault-relative paths the export wrote and the SHA-256 of each file's bytes; a
re-export replaces or removes only those files, and none at all while one of them was edited since
(``edited_files``) unless forced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import yaml

from repos.mentions import MentionRepository
from repos.pages import WikiPageRepository
from wiki.dedup import name_key
from wiki.errors import ExportEdited, ExportRefused
from wiki.links import PAGE_FOLDERS
from wiki.models import ITEM_TYPES, Page, PageType
from wiki.plural import counted
from wiki.render import link


def page_path(out_dir: Path, page: Page) -> Path:
    """Where a page's file goes inside the vault."""
    if page.page_type == "index":
        return out_dir / f"{page.slug}.md"
    return out_dir / page.page_type / f"{page.slug}.md"


#: Documents an entity or concept file lists under "Mentioned in"; the rest are counted.
MENTIONED_SHOWN = 50


def mentioned_in_section(count: int, shown: list[tuple[str, str, str]]) -> str:
    """The "Mentioned in" section of an entity or concept file: how many documents name the page
    and links to the first ``MENTIONED_SHOWN`` of them (those that say most of it first)."""
    if not count:
        return ""
    noun = "document mentions" if count == 1 else "documents mention"
    lines = ["## Mentioned in", "", f"{count} {noun} it.", ""]
    lines += [f"- {link(slug, title)}" for slug, title, _ in shown[:MENTIONED_SHOWN]]
    if count > len(shown[:MENTIONED_SHOWN]):
        lines.append(f"- and {count - len(shown[:MENTIONED_SHOWN])} more")
    return "\n".join(lines) + "\n"


def render_file(page: Page, mentioned: str = "") -> str:
    """Front matter + content of one page file, and its ``mentioned_in_section``.

    Only what the documents decide goes in, so the same documents export the same files: not the
    page's ``version``, which counts its writes (how many depends on batching and timing; the
    database keeps it, with the versions themselves, for history and revert)."""
    meta = {
        "title": page.title,
        "type": page.page_type,
        "slug": page.slug,
        "aliases": page.aliases,
        "sources": [ref.title for ref in page.source_refs],
    }
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()
    body = page.content + (f"\n{mentioned}" if mentioned else "")
    return f"---\n{front}\n---\n\n# {page.title}\n\n{body}"


MARKER = ".kbwiki-vault"
MARKER_NOTE = (
    "Written by `kbwiki export`. It replaces or removes only the files listed here, and none while"
    " one of them differs from its sha256 here (you edited it) unless --force; other files are kept."
)


@dataclass
class EarlierExport:
    """What the ``.kbwiki-vault`` marker says about the export already in a folder."""

    kb_name: str | None  # None: an older marker, which named no KB
    kb_id: str | None
    files: set[str] = field(default_factory=set)  # vault-relative POSIX paths that export wrote
    # SHA-256 (hex) of the bytes written to each of ``files``; a marker from before hashes has none
    sha256: dict[str, str] = field(default_factory=dict)
    # the marker's mtime (ns): a JSON marker is written after every file its export wrote, so a
    # file of ``files`` without a hash modified later was edited. None: a plain-text marker
    # (written before its files) or no marker
    marked_ns: int | None = None


def _own_path(rel: object) -> bool:
    """A marker entry kbwiki may remove: a relative ``.md`` path inside the vault (never the marker)."""
    if not isinstance(rel, str) or not rel.endswith(".md") or "\\" in rel:
        return False
    path = PurePosixPath(rel)
    return not path.is_absolute() and ".." not in path.parts and len(path.parts) <= 2


def read_marker(out_dir: Path) -> EarlierExport | None:
    """The earlier export in ``out_dir``, or None when the folder has no marker.

    An older (plain-text) marker listed no files: its export is taken to be what this layout can
    have written, the page-type folders' ``.md`` files and the root ``index.md``.
    """
    marker = out_dir / MARKER
    if not marker.is_file():
        return None
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and isinstance(data.get("files"), list):
        kb_name, kb_id = data.get("kb"), data.get("kb_id")
        files = {rel for rel in data["files"] if _own_path(rel)}
        hashes = data.get("sha256") if isinstance(data.get("sha256"), dict) else {}
        return EarlierExport(
            kb_name=kb_name if isinstance(kb_name, str) else None,
            kb_id=str(kb_id) if kb_id is not None else None,
            files=files,
            sha256={rel: h for rel, h in hashes.items() if rel in files and isinstance(h, str)},
            marked_ns=marker.stat().st_mtime_ns,
        )
    files = {f"{folder}/{p.name}" for folder in PAGE_FOLDERS for p in (out_dir / folder).glob("*.md") if p.is_file()}
    if (out_dir / "index.md").is_file():
        files.add("index.md")
    return EarlierExport(kb_name=None, kb_id=None, files=files)


def write_marker(
    out_dir: Path, kb_id: str | None, kb_name: str | None, files: set[str], sha256: dict[str, str] | None = None
) -> None:
    """Record the export in ``out_dir``: the KB, the files it wrote (vault-relative POSIX paths) and
    the SHA-256 (hex) of each file's bytes where known (``sha256``: path -> hash). Written last, after
    every file, through a temporary file (``read_marker`` relies on both)."""
    hashes = sha256 or {}
    data = {
        "note": MARKER_NOTE,
        "kb": kb_name,
        "kb_id": kb_id,
        "files": sorted(files),
        "sha256": {rel: hashes[rel] for rel in sorted(files) if rel in hashes},
    }
    tmp = out_dir / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out_dir / MARKER)


def _label(name: str | None, kb_id: str | None) -> str:
    return repr(name) if name else f"id {kb_id}"


def prepare_out_dir(
    out_dir: Path, kb_id: str | None = None, kb_name: str | None = None, replace: bool = False
) -> EarlierExport:
    """Check ``out_dir`` can take this KB's export; returns what the marker says of the earlier
    export there (no files for a new or empty folder).

    A new or empty folder is created/used (and marked). A folder holding an earlier export of the
    same KB is fine; one holding another KB's export raises ``ExportRefused`` unless ``replace``.
    Any other non-empty folder raises ``ExportRefused`` (seen: an export into "." wiped the user's
    files), and so does a folder that cannot be created. Nothing is deleted here.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportRefused(f"{out_dir} is a file, not a folder")
    if out_dir.exists() and any(out_dir.iterdir()):
        earlier = read_marker(out_dir)
        if earlier is None:
            raise ExportRefused(
                f"{out_dir} is not empty and holds no earlier kbwiki export: choose a new or empty folder"
            )
        if earlier.kb_id is not None and kb_id is not None and earlier.kb_id != str(kb_id) and not replace:
            old, new = _label(earlier.kb_name, earlier.kb_id), _label(kb_name, kb_id)
            if old == new:
                old, new = f"{old} (id {earlier.kb_id})", f"{new} (id {kb_id})"
            raise ExportRefused(
                f"{out_dir} holds the export of knowledge base {old}, not {new}: choose another folder, "
                f"or pass --replace to replace that export's files (files you added are kept)"
            )
        return earlier
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent is a file, read-only, or cannot exist ("/proc/x")
        raise ExportRefused(f"cannot create the folder {out_dir}: {exc.strerror or exc}") from None
    write_marker(out_dir, str(kb_id) if kb_id is not None else None, kb_name, set())
    return EarlierExport(kb_name=kb_name, kb_id=str(kb_id) if kb_id is not None else None)


def file_sha256(path: Path) -> str:
    """The SHA-256 (hex) of the file's bytes, read in chunks (one file in memory at a time, a chunk of it)."""
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


#: Edited files an ``ExportEdited`` message names; the rest are counted.
EDITED_SHOWN = 5


@dataclass
class EditedFiles:
    """Files of the earlier export changed since it wrote them: how many, and the first few by path."""

    count: int = 0
    first: list[str] = field(default_factory=list)  # at most EDITED_SHOWN, in path order


def _edited(path: Path, recorded: str | None, marked_ns: int | None) -> bool:
    """Whether the file an export wrote at ``path`` was changed since (see ``edited_files``)."""
    if not (path.exists() or path.is_symlink()):
        return False  # deleted: the export writes it again (or not, for a page gone), nothing is lost
    if path.is_symlink() or not path.is_file():
        return True  # the export wrote a plain file there; writing would follow the link
    if recorded is not None:
        return file_sha256(path) != recorded
    # written before hashes: changed after that export's marker means edited; a plain-text
    # marker gives no time to compare with, so the file is the export's (overwritten once)
    return marked_ns is not None and path.lstat().st_mtime_ns > marked_ns


def edited_files(out_dir: Path, earlier: EarlierExport) -> EditedFiles:
    """The files of ``earlier`` (an export in ``out_dir``) edited since it wrote them.

    A file with a recorded hash is edited when its bytes hash differently; one the marker lists
    without a hash (an export made before hashes) when it was modified after the marker was
    written; a symlink or folder where the export wrote a file is edited; a missing file is not.
    Hashes one file at a time, so memory stays at the marker's path list whatever the vault's size.
    """
    found = EditedFiles()
    for rel in sorted(earlier.files):
        if _edited(out_dir / rel, earlier.sha256.get(rel), earlier.marked_ns):
            found.count += 1
            if len(found.first) < EDITED_SHOWN:
                found.first.append(rel)
    return found


def edited_message(out_dir: Path, edited: EditedFiles) -> str:
    """The one line an export refused for ``edited`` files prints: which, how many, and ``--force``."""
    more = f" and {edited.count - len(edited.first)} more" if edited.count > len(edited.first) else ""
    them = "it" if edited.count == 1 else "them"
    return (
        f"{counted(edited.count, 'file')} of the earlier export in {out_dir} changed since it wrote {them}"
        f" ({', '.join(edited.first)}{more}); nothing was written: keep your edits elsewhere, or pass"
        f" --force to overwrite {them} (and remove those of pages gone from the KB)"
    )


def linked_folder(out_dir: Path) -> Path | None:
    """The first page folder of ``out_dir`` (``summary``, ``entity``...) that is a symbolic link, or
    None. The export writes and removes only inside ``out_dir``: through a linked page folder
    (``summary`` -> the KB's source folder) it would write pages among, or delete files of,
    another folder."""
    return next((out_dir / t for t in PageType if t != PageType.index and (out_dir / t).is_symlink()), None)


def _remove(out_dir: Path, files: set[str]) -> None:
    """Delete these export-written files, and page folders they leave empty."""
    for rel in sorted(files):
        path = out_dir / rel
        if path.is_file() or path.is_symlink():
            path.unlink()
        if path.parent != out_dir:
            with contextlib.suppress(OSError):
                path.parent.rmdir()  # only when empty


def export_vault(
    pages: WikiPageRepository,
    kb_id: str,
    out_dir: Path,
    kb_name: str | None = None,
    replace: bool = False,
    mentions: MentionRepository | None = None,
    force: bool = False,
) -> int:
    """Write every live page of the KB under ``out_dir``; returns the page count. With
    ``mentions``, an entity or concept file ends with the documents that name it
    (``mentioned_in_section``), read a window of pages at a time.

    Files the earlier export wrote (listed in the marker) are overwritten or, for pages gone from
    the KB, removed; no other file is touched. Raises ``ExportRefused`` (see ``prepare_out_dir``),
    also when a page's file would overwrite a file kbwiki did not write, and before writing
    anything when a page folder is a symbolic link (``linked_folder``); its ``ExportEdited``
    before writing anything when a file of the earlier export was edited since (``edited_files``)
    and not ``force``. The marker then lists each file written with its SHA-256.
    """
    earlier = prepare_out_dir(out_dir, kb_id, kb_name, replace)
    if linked := linked_folder(out_dir):  # before anything is written or removed, even with force
        raise ExportRefused(f"{linked} is a link to another folder: the export writes only inside {out_dir}")
    if not force and (edited := edited_files(out_dir, earlier)).count:
        raise ExportEdited(edited_message(out_dir, edited))
    written: dict[str, str] = {}  # path -> SHA-256 of the bytes written
    done = False
    window: list[Page] = []

    def flush() -> None:
        keys = {p.slug: name_key(p.title) for p in window if p.page_type in ITEM_TYPES}
        found = mentions.mentioned_in_many(kb_id, keys.values(), MENTIONED_SHOWN) if mentions and keys else {}
        for page in window:
            listed = found.get(keys.get(page.slug, ""))
            _write_page(out_dir, page, mentioned_in_section(*listed) if listed else "", earlier.files, written)
        window.clear()

    try:
        for page in pages.iter_pages(kb_id):
            window.append(page)
            if len(window) == EXPORT_WINDOW:
                flush()
        flush()
        _remove(out_dir, earlier.files - written.keys())
        done = True
    finally:
        if done or written:  # the marker lists every file this and the earlier export left
            left = {rel for rel in earlier.files - written.keys() if (out_dir / rel).exists()}
            hashes = {rel: earlier.sha256[rel] for rel in left if rel in earlier.sha256} | written
            write_marker(out_dir, str(kb_id), kb_name, left | written.keys(), hashes)
    return len(written)


#: Pages written per read of their "Mentioned in" lists.
EXPORT_WINDOW = 200


def _write_page(out_dir: Path, page: Page, mentioned: str, earlier: set[str], written: dict[str, str]) -> None:
    rel = page_path(Path(), page).as_posix()
    path = out_dir / rel
    if rel not in earlier and rel not in written and (path.exists() or path.is_symlink()):
        raise ExportRefused(
            f"{path} was not written by kbwiki export and would be overwritten: move it away and export again"
        )
    if path.is_dir() and not path.is_symlink():
        raise ExportRefused(f"{path} is a folder where the page's file goes: move it away and export again")
    if path.is_symlink():  # put there since the earlier export (forced): replace the link, not its target
        path.unlink()
    data = render_file(page, mentioned).encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    written[rel] = hashlib.sha256(data).hexdigest()
