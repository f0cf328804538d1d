"""``wiki_crosslink``: cross-link and repair dead links in the pages a batch touched (``stages.crosslink``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.crosslink import crosslink_step
from stages.deps import get_deps


@actor(max_retries=5, time_limit=600_000, throws=BAD_MESSAGE)
def wiki_crosslink(**kwargs) -> None:
    """Trigger: cross-link one chunk of the KB's touched pages (fanning out to more runs)."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    crosslink_step(args.tenant_id, args.knowledge_base_id, d)
