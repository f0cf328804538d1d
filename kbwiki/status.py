"""The numbers an operator looks at first: pages, links, orphans, lanes, dead letters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wiki.models import KnowledgeBase

if TYPE_CHECKING:  # importing actors builds the broker: only once the servers are known
    from actors.deps import Deps


def kb_status(deps: Deps, kb: KnowledgeBase) -> dict:
    """A JSON-ready report of one KB: pages by type, link stats, documents by status, lane rows, dead letters."""
    from actors.lanes import SCOPE_KB

    return {
        "knowledge_base": {"name": kb.name, "id": kb.id, "tenant_id": kb.tenant_id},
        "pages": deps.pages.counts_by_type(kb.id),
        "links": deps.pages.link_stats(kb.id),
        "documents": deps.docs.count_by_status(kb.id),
        "lanes": deps.ops.counts_by_lane(SCOPE_KB, kb.id),
        "dead_letters": deps.dead_letters.count(scope=SCOPE_KB, scope_id=kb.id),
    }
