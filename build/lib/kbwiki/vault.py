"""Checking an exported vault: every ``[[target]]`` link must name a file in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wiki.markdown import wiki_link_matches


@dataclass(frozen=True)
class VaultCheck:
    """Files, links and links that resolve to no file (by relative path or file name)."""

    files: int
    links: int
    dead: int


def check_vault(root: Path) -> VaultCheck:
    """Count files, links and dead links in a vault, the way Obsidian resolves ``[[name]]``: a link
    is ``wiki.markdown``'s (one inside code is no link), to a file by relative path or name."""
    files = list(root.rglob("*.md"))
    names = {f.stem for f in files} | {str(f.relative_to(root))[:-3] for f in files}
    links = dead = 0
    for f in files:
        for m in wiki_link_matches(f.read_text(encoding="utf-8")):
            target = m.group(1).strip()
            if target:  # "[[#heading]]" links within its own file
                links += 1
                dead += target not in names
    return VaultCheck(len(files), links, dead)
