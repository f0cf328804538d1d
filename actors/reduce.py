"""``wiki_reduce``: one batch of mapped documents of a KB -> summary, entity and concept pages,
one batch per KB at a time (``stages.reduce``)."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.reduce import reduce_step


@actor(max_retries=5, time_limit=900_000, throws=BAD_MESSAGE)
def wiki_reduce(**kwargs) -> None:
    """Trigger: reduce one batch of the KB under its active-batch lock; follow up at once if rows remain."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    reduce_step(args.tenant_id, args.knowledge_base_id, d)
