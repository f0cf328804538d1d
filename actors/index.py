"""The index page: per-type counts, the most-cited entities and concepts and the 200 most recent
summaries, whatever the KB size."""

from __future__ import annotations

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.triggers import clear_trigger
from wiki.models import Page
from wiki.render import render_index_page
from wiki.slugs import INDEX_SLUG

log = structlog.get_logger(__name__)

RECENT_SUMMARIES = 200
MOST_CITED = 20  # entity pages and concept pages each: a reader's way into the KB's main subjects


def rebuild_index(deps: Deps, tenant_id: int, knowledge_base_id: str) -> Page | None:
    """Rewrite the KB's index page from four bounded queries (counts, most-cited entities and
    concepts, recent summaries), each an index walk that stops at its limit.

    Returns None, writing nothing, when the KB is gone (before or while it is rebuilt).
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return None
    counts = deps.pages.counts_by_type(kb.id)
    recent = deps.pages.recent(kb.id, "summary", RECENT_SUMMARIES)
    cited = {page_type: deps.pages.most_cited(kb.id, page_type, MOST_CITED) for page_type in ("entity", "concept")}
    page = Page(tenant_id=kb.tenant_id, knowledge_base_id=kb.id, slug=INDEX_SLUG, title=f"{kb.name} index",
                page_type="index", content=render_index_page(kb.name, counts, recent, cited),
                summary=f"Index of {kb.name}")
    with deps.pool.connection() as conn:
        if not deps.kbs.hold_active(kb.id, conn):  # deleted meanwhile: never recreate its index page
            return None
        return deps.pages.save(page, conn=conn)


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=120_000, throws=BAD_MESSAGE)
def wiki_rebuild_index(**kwargs) -> None:
    """Trigger: rebuild the KB's index page."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_rebuild_index", args.knowledge_base_id)
    page = rebuild_index(deps, args.tenant_id, args.knowledge_base_id)
    log.info("index.rebuilt", knowledge_base_id=args.knowledge_base_id, version=page.version if page else None)
