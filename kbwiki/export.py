"""Export a KB's wiki as an Obsidian-compatible vault: one Markdown file per page.

Layout: ``<out>/<page_type>/<slug>.md`` (the index page at ``<out>/index.md``), YAML front matter
with title, type, aliases and sources. Links stay ``[[slug|display]]``: slugs are unique in a KB,
so Obsidian resolves them by file name. Pages are read with a keyset cursor, 200 at a time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from repos.pages import WikiPageRepository
from wiki.models import Page


def page_path(out_dir: Path, page: Page) -> Path:
    """Where a page's file goes inside the vault."""
    if page.page_type == "index":
        return out_dir / f"{page.slug}.md"
    return out_dir / page.page_type / f"{page.slug}.md"


def render_file(page: Page) -> str:
    """Front matter + content of one page file."""
    meta = {
        "title": page.title,
        "type": page.page_type,
        "slug": page.slug,
        "aliases": page.aliases,
        "sources": [ref.title for ref in page.source_refs],
        "version": page.version,
    }
    front = yaml.safe_dump(meta, allow_unicode=True, sort_keys=False).strip()
    return f"---\n{front}\n---\n\n# {page.title}\n\n{page.content}"


MARKER = ".kbwiki-vault"
PAGE_FOLDERS = ("summary", "entity", "concept")


class ExportRefused(RuntimeError):
    """The output folder holds files kbwiki did not write; nothing was changed."""


def prepare_out_dir(out_dir: Path) -> None:
    """Make ``out_dir`` ready for a fresh export without ever deleting files kbwiki did not write.

    A new or empty folder is used as is. A folder holding a previous export (it has the
    ``.kbwiki-vault`` marker) loses only the previous export's page folders and index. Any other
    non-empty folder raises ``ExportRefused`` (seen: an export into "." wiped the user's files).
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportRefused(f"{out_dir} is a file, not a folder")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not (out_dir / MARKER).exists():
            raise ExportRefused(f"{out_dir} is not empty and holds no earlier kbwiki export: choose a new or empty folder")
        for name in PAGE_FOLDERS:
            shutil.rmtree(out_dir / name, ignore_errors=True)
        for index in out_dir.glob("*.md"):
            index.unlink()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("This folder is written by `kbwiki export`; its page files are replaced on export.\n")


def export_vault(pages: WikiPageRepository, kb_id: str, out_dir: Path) -> int:
    """Write every live page of the KB under ``out_dir``; returns the page count.

    Raises ``ExportRefused`` when ``out_dir`` holds files of someone else (see ``prepare_out_dir``).
    """
    prepare_out_dir(out_dir)
    count = 0
    for page in pages.iter_pages(kb_id):
        path = page_path(out_dir, page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_file(page), encoding="utf-8")
        count += 1
    return count
