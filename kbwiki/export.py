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


def export_vault(pages: WikiPageRepository, kb_id: str, out_dir: Path) -> int:
    """Write every live page of the KB under ``out_dir`` (emptied first); returns the page count."""
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    count = 0
    for page in pages.iter_pages(kb_id):
        path = page_path(out_dir, page)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_file(page), encoding="utf-8")
        count += 1
    return count
