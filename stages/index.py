"""The index page: per-type counts, the most-cited entities and concepts and the first 200
summaries A-Z, whatever the KB size. Each list is ordered by the pages alone (never by when they
were written), so the same documents give the same index in any order and batching.

That the index is behind is durable: a reduce batch that changed pages queues a ``rebuild`` op on
the KB's ``wiki:index`` lane in the transaction that writes them (``request_index``), and a
rebuild deletes the ops it has read in the transaction that saves the page. So "every lane of the
KB is empty" means the index shows every batch (``kbwiki ingest --wait`` waits for that), and a
lost trigger only delays the rebuild until the sweeper sees the row.
"""

from __future__ import annotations

import time

import structlog
from psycopg import Connection

from repos.db import advisory_xact_lock
from repos.index_intros import IndexIntro
from repos.pending_ops import TaskPendingOpsRepository
from stages import llm_gate
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from wiki.errors import LLMError, error_text
from wiki.extract.llm.ratelimit import sharing
from wiki.lanes import INDEX, OP_REBUILD, SCOPE_KB, Actor
from wiki.models import ITEM_TYPES, KnowledgeBase, Page, PageType
from wiki.render import render_index_page
from wiki.revisions import Writer, written_by
from wiki.slugs import INDEX_SLUG

log = structlog.get_logger(__name__)

RECENT_SUMMARIES = 200  # the model's index intro is written from this many recent summaries
LISTED_SUMMARIES = 200  # summaries the index lists, A-Z; the others are counted
MOST_CITED = 20  # entity pages and concept pages each: a reader's way into the KB's main subjects


def request_index(kb: KnowledgeBase, conn: Connection, *, ops: TaskPendingOpsRepository) -> None:
    """Queue a rebuild of the KB's index in the caller's transaction (the one that changed pages)."""
    ops.enqueue(tenant_id=kb.tenant_id, task_type=INDEX, scope=SCOPE_KB, scope_id=kb.id, op=OP_REBUILD, conn=conn)


def rebuild_index(tenant_id: int, knowledge_base_id: str, deps: Deps) -> Page | None:
    """Rewrite the KB's index page from four bounded queries (counts, most-cited entities and
    concepts, the first summaries A-Z), each an index walk that stops at its limit, and delete the
    ``wiki:index`` ops queued before it read them. With the LLM extractor the page opens with the
    model's introduction (:func:`index_intro`), written before the rebuild's transaction.

    Rebuilds of one KB take turns (a transaction-scoped advisory lock), and the ops are read after
    the lock is taken and before the pages are, so a deleted op's batch is always in the page
    saved. Returns None, writing nothing, when the KB is gone (before or while it is rebuilt).
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return None
    intro = index_intro(kb, deps)
    with deps.pool.connection() as conn:
        advisory_xact_lock(conn, f"{INDEX}:{kb.id}")
        seen = [op.id for op in deps.ops.peek(INDEX, SCOPE_KB, kb.id, limit=1000)]
        counts = deps.pages.counts_by_type(kb.id)
        listed = deps.pages.first_by_title(kb.id, PageType.summary, LISTED_SUMMARIES)
        cited = {page_type: deps.pages.most_cited(kb.id, page_type, MOST_CITED) for page_type in ITEM_TYPES}
        page = Page(
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            slug=INDEX_SLUG,
            title=f"{kb.name} index",
            page_type=PageType.index,
            content=render_index_page(kb.name, counts, listed, cited, intro),
            summary=f"Index of {kb.name}",
        )
        if not deps.kbs.hold_active(kb.id, conn):  # deleted meanwhile: never recreate its index page
            return None
        saved = deps.pages.save(page, conn=conn, written_by=written_by(Writer.index))
        deps.ops.delete_by_ids(seen, conn=conn)
    return saved


def index_intro(kb: KnowledgeBase, deps: Deps) -> str:
    """The introduction of the KB's index page: "" with the offline extractor; else the stored one,
    written again by the model (one call, ``wiki.extract.llm.intro``) when the recent summaries it
    came from have changed enough (``intro.stale``) and the KB's model work is not paused. A failed
    call keeps the stored intro and is logged (``index.intro_failed``): the index never waits on
    the model. The call's tokens count in the KB's usage (and budget)."""
    if not llm_gate.is_llm(deps.extractor):
        return ""
    from wiki.extract.llm.client import ModeRejected
    from wiki.extract.llm.intro import stale, write_intro

    extractor = llm_gate.extractor_for(deps.extractor, kb.id, kbs=deps.kbs)
    if not extractor.config.index_intro:
        return ""
    stored = deps.index_intros.get(kb.id)
    kept = stored.intro if stored else ""
    # the slugs decide whether to write; the pages themselves are read only to write (the rebuild
    # reads its own, under its lock)
    slugs = deps.pages.recent_slugs(kb.id, PageType.summary, RECENT_SUMMARIES)
    if not stale(stored.slugs if stored else None, slugs) or llm_gate.paused(extractor, kb.id, deps):
        return kept
    recent = deps.pages.recent(kb.id, PageType.summary, RECENT_SUMMARIES)
    slugs = [p.slug for p in recent]
    model = extractor.config.model
    try:
        with sharing(kb.id):
            text, answer = write_intro(
                extractor.client, kb.name, recent, deadline=time.monotonic() + extractor.config.document_budget_s
            )
    except (LLMError, ModeRejected) as exc:
        log.warning("index.intro_failed", knowledge_base_id=kb.id, model=model, error=error_text(exc))
        return kept
    if deps.llm_usage is not None:
        deps.llm_usage.add(
            kb.id,
            model,
            calls=1,
            prompt_tokens=answer.prompt_tokens,
            completion_tokens=answer.completion_tokens,
            estimated_tokens=answer.estimated_tokens,
        )
    log.info(
        "index.intro_written",
        knowledge_base_id=kb.id,
        model=model,
        summaries=len(recent),
        chars=len(text),
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens,
    )
    if not text:
        return kept
    deps.index_intros.put(kb.id, IndexIntro(model=model, slugs=slugs, intro=text))
    return text


def index_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> Page | None:
    """What ``wiki_rebuild_index`` does with a trigger: clear it, rebuild (:func:`rebuild_index`), and
    trigger again while index ops queued meanwhile are left."""
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    triggers.clear(Actor.index)
    page = rebuild_index(tenant_id, knowledge_base_id, deps)
    log.info("index.rebuilt", knowledge_base_id=knowledge_base_id, version=page.version if page else None)
    if page is not None and deps.ops.pending_count(INDEX, SCOPE_KB, knowledge_base_id):
        triggers.send(Actor.index)
    return page
