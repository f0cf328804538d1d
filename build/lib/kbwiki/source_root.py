"""Where a KB's source URIs start: its root folder, and the path of what is ingested under it.

A KB's documents are named by their path relative to one folder, its root (``knowledge_bases.
source_root``): the real path of the folder its first ``kbwiki ingest`` read (of the folder holding
the file, when that ingest read one file). Ingesting any folder or file under the root names each
file as ingesting the root would, so a subfolder's files keep their documents; real paths
(``os.path.realpath``) are compared, so ``..``, a trailing slash or a symbolically linked folder
name make no difference. What is not under the root is refused (``OutsideRoot``) unless the
command is told the KB's folder moved (``--set-root``). See docs/decisions.md, "One file, one
document".
"""

from __future__ import annotations

import os
from pathlib import Path

from kbwiki.corpus import path_within
from wiki.errors import BadInput, OutsideRoot


def _shown(path: str | Path) -> str:
    """``path`` printable: bytes that are not UTF-8 written as ``\\xe9``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def real_path(path: Path) -> str:
    """The real path of ``path`` (symbolic links, ``..`` and trailing slashes resolved). Raises
    ``BadInput`` when it cannot be resolved (gone, a link loop) or is not valid UTF-8 (it could not
    be stored as a KB's root, a text column)."""
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        raise BadInput(f"cannot read {_shown(path)}: {exc.strerror or exc}") from None
    try:
        real.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"the path {_shown(real)} is not valid UTF-8; rename the folder that is not") from None
    return real


def new_root(path: Path) -> str:
    """The root a KB gets when ``path`` is the first thing it ingests: ``path``'s real path, or that
    of the folder holding it when it is a file. Raises ``BadInput`` as ``real_path``."""
    real = real_path(path)
    return real if os.path.isdir(real) else os.path.dirname(real)


def path_under_root(path: Path, root: str, kb_name: str) -> str:
    """``path``'s real path relative to the KB's root folder ``root`` in POSIX form ("" for the root
    itself; a file's whole relative path for a file): the ``at`` of ``kbwiki.corpus.iter_folder_docs``.

    Raises ``OutsideRoot`` (one line naming the root and the ways on) when ``path`` is not ``root``
    or under it, and ``BadInput`` as ``real_path``."""
    at = path_within(real_path(path), root)
    if at is None:
        raise OutsideRoot(
            f"{_shown(path)} is outside {_shown(root)}, the root folder of knowledge base {kb_name!r} (its"
            " documents are named by their path under it): ingest that folder or one under it, use another"
            " --kb, or add --set-root if the KB's folder moved here"
        )
    return at
