"""The index page: per-type counts, the most-cited entities and concepts and the 200 most recent
summaries, whatever the KB size.

That the index is behind is durable: a reduce batch that changed pages queues a ``rebuild`` op on
the KB's ``wiki:index`` lane in the transaction that writes them (``request_index``), and a
rebuild deletes the ops it has read in the transaction that saves the page. So "every lane of the
KB is empty" means the index shows every batch (``kbwiki ingest --wait`` waits for that), and a
lost trigger only delays the rebuild until the sweeper sees the row.
"""

from __future__ import annotations

import dramatiq
import structlog
from psycopg import Connection

from actors.args import BAD_MESSAGE, KbArgs
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.lanes import INDEX, OP_REBUILD, SCOPE_KB
from actors.triggers import clear_trigger, send_trigger
from repos.db import advisory_xact_lock
from wiki.models import KnowledgeBase, Page
from wiki.render import render_index_page
from wiki.slugs import INDEX_SLUG

log = structlog.get_logger(__name__)

RECENT_SUMMARIES = 200
MOST_CITED = 20  # entity pages and concept pages each: a reader's way into the KB's main subjects


def request_index(deps: Deps, kb: KnowledgeBase, conn: Connection) -> None:
    """Queue a rebuild of the KB's index in the caller's transaction (the one that changed pages)."""
    deps.ops.enqueue(tenant_id=kb.tenant_id, task_type=INDEX, scope=SCOPE_KB, scope_id=kb.id, op=OP_REBUILD, conn=conn)


def rebuild_index(deps: Deps, tenant_id: int, knowledge_base_id: str) -> Page | None:
    """Rewrite the KB's index page from four bounded queries (counts, most-cited entities and
    concepts, recent summaries), each an index walk that stops at its limit, and delete the
    ``wiki:index`` ops queued before it read them.

    Rebuilds of one KB take turns (a transaction-scoped advisory lock), and the ops are read after
    the lock is taken and before the pages are, so a deleted op's batch is always in the page
    saved. Returns None, writing nothing, when the KB is gone (before or while it is rebuilt).
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return None
    with deps.pool.connection() as conn:
        advisory_xact_lock(conn, f"{INDEX}:{kb.id}")
        seen = [op.id for op in deps.ops.peek(INDEX, SCOPE_KB, kb.id, limit=1000)]
        counts = deps.pages.counts_by_type(kb.id)
        recent = deps.pages.recent(kb.id, "summary", RECENT_SUMMARIES)
        cited = {page_type: deps.pages.most_cited(kb.id, page_type, MOST_CITED) for page_type in ("entity", "concept")}
        page = Page(
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            slug=INDEX_SLUG,
            title=f"{kb.name} index",
            page_type="index",
            content=render_index_page(kb.name, counts, recent, cited),
            summary=f"Index of {kb.name}",
        )
        if not deps.kbs.hold_active(kb.id, conn):  # deleted meanwhile: never recreate its index page
            return None
        saved = deps.pages.save(page, conn=conn)
        deps.ops.delete_by_ids(seen, conn=conn)
    return saved


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=120_000, throws=BAD_MESSAGE)
def wiki_rebuild_index(**kwargs) -> None:
    """Trigger: rebuild the KB's index page."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_rebuild_index", args.knowledge_base_id)
    page = rebuild_index(deps, args.tenant_id, args.knowledge_base_id)
    log.info("index.rebuilt", knowledge_base_id=args.knowledge_base_id, version=page.version if page else None)
    if page is not None and deps.ops.pending_count(INDEX, SCOPE_KB, args.knowledge_base_id):
        send_trigger(deps, "wiki_rebuild_index", tenant_id=args.tenant_id, knowledge_base_id=args.knowledge_base_id)
