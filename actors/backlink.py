"""``wiki_backlink``: relink the pages that mention a title or alias a batch added or removed
(``stages.backlink``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.backlink import backlink_step
from stages.deps import get_deps


@actor(max_retries=5, time_limit=300_000, throws=BAD_MESSAGE)
def wiki_backlink(**kwargs) -> None:
    """Trigger: queue the pages mentioning the keys of the next backlink ops for cross-linking."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    backlink_step(args.tenant_id, args.knowledge_base_id, d)
