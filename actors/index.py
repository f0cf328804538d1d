"""``wiki_rebuild_index``: rewrite a KB's index page (``stages.index``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.index import index_step


@actor(max_retries=5, time_limit=120_000, throws=BAD_MESSAGE)
def wiki_rebuild_index(**kwargs) -> None:
    """Trigger: rebuild the KB's index page."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    index_step(args.tenant_id, args.knowledge_base_id, d)
