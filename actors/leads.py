"""``wiki_write_leads``: a model writes the leads of pages a batch changed (``stages.leads``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.leads import leads_step


@actor(max_retries=5, time_limit=600_000, throws=BAD_MESSAGE)
def wiki_write_leads(**kwargs) -> None:
    """Trigger: write the leads of one op of the KB's lead lane (fanning out to more runs)."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    leads_step(args.tenant_id, args.knowledge_base_id, d)
