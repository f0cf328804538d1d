"""Page revisions: who wrote a version, the sources of an earlier version, and a diff. No I/O.

A page row's current version is in ``wiki_pages``; the versions it replaced are rows of
``wiki_page_revisions`` (``repos.revisions``), the newest ``Settings.page_revisions_keep`` of
them. A revision keeps the whole content, but of the page's source refs only how many there were
and the refs that differ from the next version, both ways (a hub page cites thousands of
documents: keeping every ref of every version would make a revision grow with the KB). The
sources of an earlier version are the current ones with the changes of every newer revision
undone, newest first (:func:`sources_at`).

Who wrote a version is a label (``wiki_pages.written_by``, kept with the revision): a
:class:`Writer` kind, with the reduce batch's fencing token, the document or the version reverted
to after a colon.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import NamedTuple

from pydantic import BaseModel

from wiki.models import SourceRef


class Writer(StrEnum):
    """What wrote a page version (the part of a ``written_by`` label before the colon)."""

    #: a reduce batch (ingest or delete) where several of its documents changed the page: ``batch:<token>``
    batch = "batch"
    #: a reduce batch where one document changed the page: ``document:<knowledge id>``
    document = "document"
    crosslink = "crosslink"  # cross-link and back-link runs: links added or repaired
    lead = "lead"  # a model-written lead
    index = "index"  # the index page's rebuild
    lint = "lint"  # kbwiki lint --fix
    revert = "revert"  # kbwiki revert or the web view's revert: ``revert:<version>``


#: Writers whose version is the pipeline's own reading of the documents: a revert they overwrite
#: is gone (the ``overwritten_revert`` lint check).
INGEST_WRITERS = (Writer.batch, Writer.document)

#: Source refs one revision keeps of its difference from the next version, both ways together.
#: An ingest changes at most a batch's documents (``ingest_batch_size``, 50) per write; a write
#: changing more (a revert across many batches, lint mending thousands of stale refs) keeps none,
#: and the sources of that version and older ones are unknown. 1,000 refs are about 100 KB.
MAX_REF_CHANGES = 1000

#: Lines of each side a diff compares: difflib's matching is quadratic in the worst case, and a
#: summary page holds its document's body (up to ``max_document_chars``).
MAX_DIFF_LINES = 5000


def written_by(kind: Writer, ref: str | int | None = None) -> str:
    """The label of a writer: ``"crosslink"``, ``"batch:41"``, ``"document:<id>"``, ``"revert:3"``."""
    return kind.value if ref is None else f"{kind.value}:{ref}"


def writer_kind(label: str) -> Writer | None:
    """The :class:`Writer` of a ``written_by`` label; None for "" (unknown) or a label of no kind."""
    try:
        return Writer(label.split(":", 1)[0])
    except ValueError:
        return None


class RevisionInfo(BaseModel):
    """One line of a page's history (no content): its version, when and by whom it was written,
    its content's size in bytes (UTF-8) and how many sources it cited; ``current`` for the page's
    live version."""

    version: int
    written_at: datetime | None
    written_by: str
    size: int
    sources: int
    current: bool = False


class RefChanges(BaseModel):
    """A kept version's source-ref changes to the next version: ``refs_only_here`` the (position,
    ref) of refs it had that the next lacks, ``refs_only_next`` the refs the next has that it
    lacked; both None when the write changed more than ``MAX_REF_CHANGES``."""

    version: int
    refs_only_here: list[tuple[int, SourceRef]] | None = None
    refs_only_next: list[SourceRef] | None = None


class Revision(RevisionInfo, RefChanges):
    """One kept version with its content and its source-ref changes to the next version."""

    content: str


def _key(ref: SourceRef) -> tuple[str, str]:
    return ref.knowledge_id, ref.title


def sources_at(current: Sequence[SourceRef], newer_first: Sequence[RefChanges], version: int) -> list[SourceRef] | None:
    """The source refs of ``version``: ``current`` (the live version's) with the changes of each
    revision from the newest down to ``version`` undone. ``newer_first``: the page's revisions,
    newest first, at least every one at or above ``version``. Returns None when one of them did
    not keep its changes (more than ``MAX_REF_CHANGES``) or ``version`` is not among them.

    Which refs a version had is exact; their order is the newer version's, with the refs only the
    older one had put back at their positions.
    """
    refs = list(current)
    for rev in newer_first:
        if rev.version < version:
            break
        if rev.refs_only_here is None or rev.refs_only_next is None:
            return None
        gone = {_key(r) for r in rev.refs_only_next}
        refs = [r for r in refs if _key(r) not in gone]
        for position, ref in sorted(rev.refs_only_here, key=lambda pr: pr[0]):
            refs.insert(min(position, len(refs)), ref)
        if rev.version == version:
            return refs
    return None


def versions_citing(
    current: Sequence[SourceRef], newer_first: Sequence[RefChanges], knowledge_ids: set[str]
) -> list[int]:
    """The versions among ``newer_first`` (a page's revisions, newest first, every one kept) whose
    sources cite one of ``knowledge_ids``, given the live version's ``current`` refs; a version
    whose sources are unknown (a write on the way did not keep its changes) counts as citing."""
    cited: set[str] | None = {r.knowledge_id for r in current} & knowledge_ids
    found = []
    for rev in newer_first:
        if cited is None or rev.refs_only_here is None or rev.refs_only_next is None:
            cited = None  # unknown from here down
        else:
            gained = {r.knowledge_id for r in rev.refs_only_next}
            had = {r.knowledge_id for _, r in rev.refs_only_here}
            cited = (cited - gained) | (had & knowledge_ids)
        if cited is None or cited:
            found.append(rev.version)
    return found


class DiffLine(NamedTuple):
    """One line of a diff: ``kind`` is ``"hunk"`` (an ``@@ -a,b +c,d @@`` header), ``"removed"``,
    ``"added"`` or ``"context"``; ``text`` the line without its marker."""

    kind: str
    text: str


_KINDS = {"@": "hunk", "-": "removed", "+": "added", " ": "context"}


def diff_lines(old: str, new: str, context: int = 3) -> tuple[list[DiffLine], bool]:
    """The unified diff (``difflib``) of two contents, line by line, with ``context`` lines around
    each change; and whether either side was cut to its first ``MAX_DIFF_LINES`` lines."""
    a, b = old.splitlines(), new.splitlines()
    cut = len(a) > MAX_DIFF_LINES or len(b) > MAX_DIFF_LINES
    lines = difflib.unified_diff(a[:MAX_DIFF_LINES], b[:MAX_DIFF_LINES], lineterm="", n=context)
    out = []
    for i, line in enumerate(lines):
        if i < 2:  # the "---" and "+++" file headers
            continue
        out.append(DiffLine(_KINDS.get(line[:1], "context"), line if line.startswith("@@") else line[1:]))
    return out, cut


def sources_diff(old: Sequence[SourceRef], new: Sequence[SourceRef]) -> tuple[list[SourceRef], list[SourceRef]]:
    """(refs only ``old`` has, refs only ``new`` has), each in its own order."""
    old_keys, new_keys = {_key(r) for r in old}, {_key(r) for r in new}
    return [r for r in old if _key(r) not in new_keys], [r for r in new if _key(r) not in old_keys]
