"""Cross-link and dead-link repair, scoped to the slugs a batch touched.

Drains the KB's finalize lane. For each touched page: links to pages that no longer exist are
repaired with the slug fuzzy resolve (else become plain text), and the first mention of another
page's title is linked. Reads only the touched pages' content; other pages are seen through
narrow (slug, title, aliases) rows found by indexed lookups of the phrases the page contains.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.claims import released_on_failure
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.lanes import FINALIZE, SCOPE_KB
from actors.triggers import clear_trigger, send_trigger
from wiki.links import candidate_phrases, fuzzy_resolve, linkify, parse_links, rewrite_links
from wiki.lint import mention_targets

log = structlog.get_logger(__name__)

FINALIZE_OPS_PER_RUN = 20
SIMILAR_K = 5


@dataclass
class CrosslinkResult:
    """Pages looked at, pages rewritten, links added and dead links repaired or stripped."""

    pages: int = 0
    rewritten: int = 0
    linked: int = 0
    repaired: int = 0
    remaining: int = 0
    claimed: int = 0


def run_crosslink(deps: Deps, tenant_id: int, knowledge_base_id: str) -> CrosslinkResult | None:
    """Cross-link the pages named by up to ``FINALIZE_OPS_PER_RUN`` finalize ops, then delete them.

    Returns None when the KB is gone (its lanes drained).
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return None
    claimed = deps.ops.claim(FINALIZE, SCOPE_KB, kb.id, FINALIZE_OPS_PER_RUN, deps.settings.stale_claim_s)
    slugs = sorted({s for op in claimed for s in op.payload.get("slugs", [])})
    result = CrosslinkResult(pages=len(slugs), claimed=len(claimed))
    with released_on_failure(deps, claimed), ThreadPoolExecutor(max_workers=deps.tunables(kb).reduce_parallel) as pool:
        for linked, repaired in pool.map(lambda s: link_page(deps, kb.id, s), slugs):
            result.linked += linked
            result.repaired += repaired
            result.rewritten += bool(linked or repaired)
        deps.ops.delete_by_ids([op.id for op in claimed])
    result.remaining = deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id)
    return result


def link_page(deps: Deps, kb_id: str, slug: str) -> tuple[int, int]:
    """Repair dead links and add cross-links in one page, under its row lock.

    Returns (links added, dead links repaired or stripped). A page that needs neither is not written.
    """
    with deps.pool.connection() as conn:
        page = deps.pages.get(kb_id, slug, conn=conn, for_update=True)
        if page is None:
            return 0, 0
        content = page.content
        targets = {link.slug for link in parse_links(content)}
        live = deps.pages.existing_slugs(kb_id, targets)
        repaired = 0
        if targets - live:
            def resolve(target: str, display: str | None) -> str | None:
                if target in live:
                    return target
                query = display or target.replace("-", " ")
                return fuzzy_resolve(target, display, deps.pages.similar_titles(kb_id, query, k=SIMILAR_K))

            content, repaired = rewrite_links(content, resolve)
        mentioned = deps.pages.titles_matching(kb_id, candidate_phrases(content))
        # lint's order (titles before aliases, then slug), so both pick the same page for a shared name
        content, added = linkify(content, mention_targets(mentioned, slug), self_slug=slug)
        if content == page.content:
            return 0, 0
        deps.pages.save(page.model_copy(update={"content": content}), conn=conn)
    return len(added), repaired


@dramatiq.actor(queue_name="wiki", max_retries=5, time_limit=600_000, throws=BAD_MESSAGE)
def wiki_crosslink(**kwargs) -> None:
    """Trigger: cross-link the KB's touched pages, then rebuild its index."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_crosslink", args.knowledge_base_id)
    result = run_crosslink(deps, args.tenant_id, args.knowledge_base_id)
    if result is None:
        return
    log.info("crosslink.done", knowledge_base_id=args.knowledge_base_id, pages=result.pages,
             rewritten=result.rewritten, linked=result.linked, repaired=result.repaired)
    if not result.claimed:
        return  # rows left are claimed by a run in progress (or abandoned: the sweeper reclaims them)
    kb = {"tenant_id": args.tenant_id, "knowledge_base_id": args.knowledge_base_id}
    if result.remaining:
        send_trigger(deps, "wiki_crosslink", debounce=False, **kb)
    send_trigger(deps, "wiki_rebuild_index", **kb)
