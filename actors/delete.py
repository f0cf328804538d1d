"""Producer entry points that remove work: ``wiki_retract`` (one document), ``wiki_delete_kb``
(a whole KB). Their messages are the delete itself: they retry through outages
(``carries_data``, ``actors.retry_policy``). The stages are in ``stages.delete``."""

from __future__ import annotations

import structlog

from actors.args import BAD_MESSAGE, KbArgs, RetractArgs
from actors.declare import actor
from stages.delete import delete_document, delete_knowledge_base
from stages.deps import get_deps
from wiki.errors import UnknownKnowledgeBase

log = structlog.get_logger(__name__)


@actor(time_limit=60_000, throws=BAD_MESSAGE, carries_data=True)
def wiki_retract(**kwargs) -> None:
    """Producer entry point: ``wiki_retract.send(tenant_id=, knowledge_base_id=, knowledge_id=)``.

    A KB that is gone has nothing left to retract: logged, not retried.
    """
    args = RetractArgs.model_validate(kwargs)
    d = get_deps()
    try:
        result = delete_document(args.tenant_id, args.knowledge_base_id, args.knowledge_id, d)
    except UnknownKnowledgeBase as exc:
        log.warning("document.retract_refused", knowledge_id=args.knowledge_id, reason=str(exc))
        return
    log.info("document.retracted", knowledge_id=args.knowledge_id, status=result.status)


@actor(time_limit=120_000, throws=BAD_MESSAGE, carries_data=True)
def wiki_delete_kb(**kwargs) -> None:
    """Producer entry point: ``wiki_delete_kb.send(tenant_id=, knowledge_base_id=)``."""
    args = KbArgs.model_validate(kwargs)
    d = get_deps()
    result = delete_knowledge_base(args.tenant_id, args.knowledge_base_id, d)
    log.info(
        "kb.deleted",
        knowledge_base_id=args.knowledge_base_id,
        deleted=result.deleted,
        ops=result.ops,
        pages=result.pages,
        documents=result.documents,
    )
