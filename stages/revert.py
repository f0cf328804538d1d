"""Revert: write a kept earlier version of a page as its new version (``kbwiki revert``, the web
view's revert button).

The earlier version's content and source refs (``wiki.revisions.sources_at``) are written through
``WikiPageRepository.save_many``, the pipeline's own page write, so the page's out-links and
title keys follow the content, the version it replaces is kept in the history like any other, and
the new version says ``revert:<version>``. Everything else (title, aliases, facts, lead) stays the
page's current one: the next reduce batch that changes the page renders it again from its facts
and so overwrites the revert, which lint then reports (``overwritten_revert``).

It takes the locks every page writer takes, in their order (``WikiPageRepository.lock_link_graph``'s
docstring): the KB row FOR SHARE (a KB delete waits for it, and a deleted KB is refused), the
link-graph lock shared (it writes a page and moves or deletes none), then the page's row FOR
UPDATE, so a reduce batch, a cross-link run or a lint fix writing the page at the same moment
either committed before (the revert replaces its version) or waits and writes after it. The
reverted page is queued for cross-linking: its old links may point at pages gone since.

A revert is refused, writing nothing, when the version is the current one or is not kept, when
its content and sources are the current ones, when its sources were not kept, and when it cites a
document deleted since (reverting would bring the deleted document's text back).
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg_pool import ConnectionPool

from repos.knowledge import KnowledgeBaseRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from repos.revisions import PageRevisionRepository
from stages.crosslink import enqueue_touched
from stages.deps import Deps
from wiki.errors import KnowledgeBaseDeleted, RevertRefused, UnknownPage
from wiki.lanes import Actor
from wiki.models import SourceRef
from wiki.plural import counted
from wiki.revisions import MAX_REF_CHANGES, Writer, sources_at, written_by

#: Documents a refusal names (of those deleted since the version): the rest are counted.
NAMED_DOCUMENTS = 3


@dataclass(frozen=True)
class Reverted:
    """A revert done: the page, the version it went back to and the page's version now."""

    slug: str
    version: int
    new_version: int


def write_revert(
    tenant_id: int,
    knowledge_base_id: str,
    slug: str,
    version: int,
    *,
    pool: ConnectionPool,
    kbs: KnowledgeBaseRepository,
    pages: WikiPageRepository,
    revisions: PageRevisionRepository,
    ops: TaskPendingOpsRepository,
) -> Reverted:
    """Write version ``version`` of the tenant's live page ``slug`` as its new version, in one
    transaction (see the module docstring), and queue the page for cross-linking (a worker's
    sweeper finds the op; :func:`revert_page` also triggers it). The web view calls this: it holds
    no broker.

    Raises ``UnknownKnowledgeBase`` (the tenant has no such live KB), ``KnowledgeBaseDeleted``
    (deleted meanwhile), ``UnknownPage`` (no live page ``slug``, or no kept version ``version``)
    and ``RevertRefused`` (see the module docstring); nothing is written then.
    """
    kb = kbs.get_active(tenant_id, knowledge_base_id)
    with pool.connection() as conn:
        if not kbs.hold_active(kb.id, conn):
            raise KnowledgeBaseDeleted(f"knowledge base {kb.name!r} was deleted")
        pages.lock_link_graph(kb.id, conn, shared=True)  # writes one page, moves and deletes none
        page = pages.get(kb.id, slug, conn=conn, for_update=True)
        if page is None or page.tenant_id != tenant_id or page.id is None:
            raise UnknownPage(f"no live page {slug!r} in knowledge base {kb.name!r}")
        if version == page.version:
            raise RevertRefused(f"version {version} is the current version of {slug!r}: nothing to revert")
        newer = (
            revisions.since(tenant_id, kb.id, page.id, version, conn=conn, content_of=[version])
            if 0 < version < page.version
            else []
        )
        target = next((rev for rev in newer if rev.version == version), None)
        if target is None:
            kept = [
                f"{page.version} (current)",
                *(str(r.version) for r in revisions.since(tenant_id, kb.id, page.id, 1, conn, content_of=[])),
            ]
            raise UnknownPage(f"page {slug!r} has no kept version {version}; its kept versions are {', '.join(kept)}")
        refs = sources_at(page.source_refs, newer, version)
        if refs is None:
            raise RevertRefused(
                f"the sources of version {version} of {slug!r} were not kept (a later write changed more than"
                f" {MAX_REF_CHANGES:,} of them): it cannot be reverted to"
            )
        cited = [r.knowledge_id for r in refs]
        gone = revisions.documents_gone(kb.id, cited, conn=conn)
        if gone:
            raise RevertRefused(
                f"version {version} of {slug!r} cites {counted(len(gone), 'document')} deleted since"
                f" ({_titles(refs, gone)}): reverting would bring their text back; nothing was changed"
            )
        # A document changed (re-ingested) since the version was written may no longer hold what it
        # quotes: a redacted sentence would come back, attributed to the new text.
        changed = revisions.documents_changed_since(kb.id, cited, target.written_at, conn=conn)
        if changed:
            raise RevertRefused(
                f"version {version} of {slug!r} quotes {counted(len(changed), 'document')} changed since it was"
                f" written ({_titles(refs, changed)}): reverting could bring back text they no longer hold;"
                " nothing was changed"
            )
        if target.content == page.content and refs == page.source_refs:
            raise RevertRefused(
                f"page {slug!r} already has the content and sources of version {version}: nothing to revert"
            )
        reverted = page.model_copy(update={"content": target.content, "source_refs": refs})
        new_version = pages.save_many([reverted], conn=conn, written_by=written_by(Writer.revert, version))[slug]
        enqueue_touched(kb, [slug], ops=ops, conn=conn)
    return Reverted(slug, version, new_version)


def revert_page(tenant_id: int, knowledge_base_id: str, slug: str, version: int, deps: Deps) -> Reverted:
    """:func:`write_revert` with ``deps``'s repositories, then cross-linking triggered at once
    (``kbwiki revert``). Raises what ``write_revert`` raises."""
    done = write_revert(
        tenant_id,
        knowledge_base_id,
        slug,
        version,
        pool=deps.pool,
        kbs=deps.kbs,
        pages=deps.pages,
        revisions=deps.revisions,
        ops=deps.ops,
    )
    deps.triggers(tenant_id, knowledge_base_id).send(Actor.crosslink)
    return done


def _titles(refs: list[SourceRef], ids: set[str]) -> str:
    """The titles of the first ``NAMED_DOCUMENTS`` of ``refs`` among ``ids``: "'A', 'B' and 3 more"."""
    titles = [r.title for r in refs if r.knowledge_id in ids]
    more = f" and {len(titles) - NAMED_DOCUMENTS} more" if len(titles) > NAMED_DOCUMENTS else ""
    return ", ".join(repr(t) for t in titles[:NAMED_DOCUMENTS]) + more
