"""``wiki_map``: one document -> a validated extraction, its op moved to the reduce lane
(``stages.map``). Runs on any worker, one message per document, on a queue of its own."""

from __future__ import annotations

from actors.args import BAD_MESSAGE, MapArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.map import map_step
from wiki.lanes import Actor
from wiki.llm_config import MAP_TIME_LIMIT_S


@actor(queue_name=Actor.map, max_retries=3, time_limit=MAP_TIME_LIMIT_S * 1000, throws=BAD_MESSAGE)
def wiki_map(**kwargs) -> None:
    """Map one document, then keep the pipeline moving: refill map slots, trigger the reduce."""
    args = MapArgs.model_validate(kwargs)
    d = get_deps()
    map_step(args.tenant_id, args.knowledge_base_id, args.knowledge_id, args.op_id, d)
