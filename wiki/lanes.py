"""Names of the durable lanes (``task_pending_ops.task_type``) the wiki pipeline moves ops through,
and of the actors that work them."""

from enum import StrEnum

#: The ``scope`` of every lane of a knowledge base (``scope_id`` is the KB id).
SCOPE_KB = "knowledge_base"

INGEST = "wiki:ingest"  # ops from producers: ingest | retract, dedup_key = knowledge id
REDUCE = "wiki:reduce"  # mapped ops waiting for a KB batch
FINALIZE = "wiki:finalize"  # slugs a batch touched, waiting for cross-link and dead-link repair
BACKLINK = "wiki:backlink"  # title keys a batch added or removed: the pages mentioning them are relinked
INDEX = "wiki:index"  # "the index page is behind": one op per batch that changed pages
LEAD = "wiki:lead"  # slugs whose lead a model is to write from their first contributions (model KBs only)
WIKI_LANES = (INGEST, REDUCE, FINALIZE, BACKLINK, INDEX, LEAD)

OP_INGEST = "ingest"
OP_RETRACT = "retract"
OP_TOUCH = "touch"
OP_ROUND = "round"  # finalize: pages a back-link round queued, cross-linked at once (stages.pacing)
OP_KEYS = "keys"
OP_REBUILD = "rebuild"


class Actor(StrEnum):
    """The actors' names (``actors/``: each is its function's name, the name Dramatiq sends and
    looks up). A str enum: a member is that string."""

    ingest = "wiki_ingest"  # pumps the ingest lane: a map message per document
    map = "wiki_map"
    reduce = "wiki_reduce"
    crosslink = "wiki_crosslink"  # the finalize lane
    backlink = "wiki_backlink"
    index = "wiki_rebuild_index"
    leads = "wiki_write_leads"
    submit = "wiki_submit"
    retract = "wiki_retract"
    delete_kb = "wiki_delete_kb"
    lint = "wiki_lint"
