"""``wiki_crosslink``: cross-link and repair dead links in the pages a batch touched (``stages.crosslink``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from actors.deps import get_deps, run_stage
from stages.crosslink import crosslink_step


@actor(max_retries=5, time_limit=600_000, throws=BAD_MESSAGE)
def wiki_crosslink(**kwargs) -> None:
    """Trigger: cross-link one chunk of the KB's touched pages (fanning out to more runs)."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    run_stage(crosslink_step, d, args.tenant_id, args.knowledge_base_id)
