"""Entering work: ``wiki_submit`` (the producer API: one document) and ``wiki_ingest`` (the pump
that sends one ``wiki_map`` per document, at most ``ingest_map_parallel`` of a KB at a time).
The stages are in ``stages.ingest``."""

from __future__ import annotations

import structlog

from actors.args import BAD_MESSAGE, KbArgs, SubmitArgs
from actors.declare import actor
from stages.deps import get_deps
from stages.ingest import ingest_step, submit_document
from wiki.errors import UnknownKnowledgeBase

log = structlog.get_logger(__name__)


@actor(max_retries=3, time_limit=60_000, throws=BAD_MESSAGE)
def wiki_ingest(**kwargs) -> None:
    """Trigger: fill the KB's free map slots from its ingest lane."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    ingest_step(args.tenant_id, args.knowledge_base_id, d)


@actor(time_limit=60_000, throws=(*BAD_MESSAGE, UnknownKnowledgeBase), carries_data=True)
def wiki_submit(**kwargs) -> None:
    """Producer entry point: ``wiki_submit.send(tenant_id=, knowledge_base_id=, title=, content=, source_uri=)``.

    The message is the document: it retries for at least ``KBWIKI_DATA_RETRY_S`` (24 h) through
    outages (``actors.retry_policy``). A document for an unknown, deleted or foreign KB is refused
    at once (``throws``: no retries; the dead-letter middleware keeps the message).
    """
    args = SubmitArgs.model_validate(kwargs)
    d = get_deps()
    result = submit_document(d, **args.model_dump())
    log.info("document.submitted", knowledge_id=result.knowledge_id, status=result.status, reason=result.reason)
