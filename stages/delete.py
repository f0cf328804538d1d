"""Stages of deleting documents and knowledge bases, and what every handler does when its KB is gone.

A document delete is one transaction: the document goes to ``deleting``, its pending ingest ops
leave every lane (scoped by its dedup key), the Redis tombstone is set, and one ``retract`` op
enters the ingest lane; the pump moves it straight to reduce, which removes the document's
facts, citations and doc-only pages. A KB delete removes every lane row and page of the KB at
once; handlers that later find the KB gone drain its lanes and succeed (no retries, no dead
letters).
"""

from __future__ import annotations

from dataclasses import dataclass

import redis as redis_lib
import structlog
from psycopg_pool import ConnectionPool

from repos.coordination import TOMBSTONE_TTL_S, tombstone_key
from repos.knowledge import KnowledgeBaseRepository, KnowledgeRepository
from repos.mentions import MentionRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from stages.triggers import send_trigger
from wiki.errors import UnknownKnowledgeBase
from wiki.lanes import INGEST, OP_INGEST, OP_RETRACT, REDUCE, SCOPE_KB
from wiki.models import KnowledgeBase
from wiki.settings import Settings

log = structlog.get_logger(__name__)

#: Lanes that can hold a document's ingest op (the finalize lane holds slugs, keyed by nothing).
DOCUMENT_LANES = (INGEST, REDUCE)


@dataclass(frozen=True)
class DeleteResult:
    """Outcome of one document delete: ``deleting`` (retract queued), ``already_deleted`` or ``unknown``."""

    knowledge_id: str
    status: str


@dataclass(frozen=True)
class KbDeleteResult:
    """Outcome of a KB delete: whether it was live, and the rows removed."""

    deleted: bool
    ops: int = 0
    pages: int = 0
    documents: int = 0


def delete_document(
    tenant_id: int,
    knowledge_base_id: str,
    knowledge_id: str,
    *,
    pool: ConnectionPool,
    kbs: KnowledgeBaseRepository,
    docs: KnowledgeRepository,
    ops: TaskPendingOpsRepository,
    redis: redis_lib.Redis,
    settings: Settings,
) -> DeleteResult:
    """Delete one document of a live KB; the retract then runs in the KB's next reduce batch.

    One transaction: status ``deleting``, its ingest ops removed from the ingest and reduce
    lanes, the tombstone ``<prefix>:deleted:<kb>:<knowledge id>`` set (``TOMBSTONE_TTL_S``, 1 h:
    longer than any op waits in a healthy pipeline; the durable status covers the rest), one
    ``retract`` op enqueued; then the pump is triggered. Idempotent: a document already deleting
    or deleted gives ``already_deleted`` and queues nothing. Raises
    ``repos.knowledge.UnknownKnowledgeBase`` for an unknown, deleted or foreign KB, and
    ``redis.RedisError`` (nothing changed) when the tombstone cannot be set.
    """
    kb = kbs.get_active(tenant_id, knowledge_base_id)
    key = tombstone_key(settings.key_prefix, kb.id, knowledge_id)
    tombstoned = False
    try:
        with pool.connection() as conn:
            doc = docs.mark_deleting(kb.id, knowledge_id, conn=conn)
            if doc is None:
                known = docs.find(kb.id, knowledge_id)
                return DeleteResult(
                    knowledge_id, "already_deleted" if known and known.id == knowledge_id else "unknown"
                )
            for lane in DOCUMENT_LANES:
                ops.delete_by_dedup_key(lane, SCOPE_KB, kb.id, doc.id, op=OP_INGEST, conn=conn)
            op = ops.enqueue_if_kb_active(
                tenant_id=kb.tenant_id,
                task_type=INGEST,
                scope=SCOPE_KB,
                scope_id=kb.id,
                op=OP_RETRACT,
                dedup_key=doc.id,
                payload={"knowledge_id": doc.id},
                conn=conn,
            )
            if op is None:  # the KB was deleted meanwhile (rolled back): its deletion removes the pages
                raise UnknownKnowledgeBase(f"knowledge base {kb.id!r} was deleted")
            # last, so a Redis failure rolls the transaction back and nothing is half deleted
            redis.set(key, "1", ex=TOMBSTONE_TTL_S)
            tombstoned = True
    except BaseException:
        if tombstoned:  # the commit failed after the tombstone was set: a live document keeps no tombstone
            try:
                redis.delete(key)
            except redis_lib.RedisError:
                log.warning("document.tombstone_left", knowledge_id=knowledge_id)
        raise
    send_trigger("wiki_ingest", redis=redis, settings=settings, tenant_id=kb.tenant_id, knowledge_base_id=kb.id)
    return DeleteResult(knowledge_id, "deleting")


def delete_knowledge_base(
    tenant_id: int,
    knowledge_base_id: str,
    *,
    pool: ConnectionPool,
    kbs: KnowledgeBaseRepository,
    docs: KnowledgeRepository,
    ops: TaskPendingOpsRepository,
    pages: WikiPageRepository,
    mentions: MentionRepository,
) -> KbDeleteResult:
    """Delete a KB in one transaction: mark it deleted, remove every lane row, page and link of it,
    and mark its documents deleted. ``deleted=False`` when it was not a live KB of the tenant.

    The KB row update waits for writers holding it FOR SHARE (op enqueues, index rebuilds,
    reduce settles), so their rows are removed here or refused afterwards. Work already in
    flight finds the KB gone (``active_kb_or_drain``) and drops what it left behind.
    """
    with pool.connection() as conn:
        kb = kbs.mark_deleted(tenant_id, knowledge_base_id, conn=conn)
        if kb is None:
            return KbDeleteResult(False)
        n_ops = ops.delete_by_scope(SCOPE_KB, kb.id, conn=conn)
        n_pages = pages.delete_kb(kb.id, conn=conn)
        mentions.delete_kb(kb.id, conn=conn)
        n_docs = docs.mark_kb_deleted(kb.id, conn=conn)
    return KbDeleteResult(True, n_ops, n_pages, n_docs)


def active_kb_or_drain(
    tenant_id: int, knowledge_base_id: str, *, kbs: KnowledgeBaseRepository, ops: TaskPendingOpsRepository
) -> KnowledgeBase | None:
    """The live KB for a handler, or None when the handler has nothing to do.

    A deleted or unknown KB: every lane row left for it (ops that raced the deletion) is deleted
    and None returned, so the handler succeeds instead of retrying into a dead letter. A live KB
    of another tenant: None, and its lanes are left alone (the message is wrong, not the work).
    """
    try:
        return kbs.get_active(tenant_id, knowledge_base_id)
    except UnknownKnowledgeBase:
        kb = kbs.get(knowledge_base_id)
        if kb is not None and kb.deleted_at is None:
            log.warning("kb.tenant_mismatch", knowledge_base_id=knowledge_base_id, tenant_id=tenant_id)
            return None
        drained = ops.delete_by_scope(SCOPE_KB, knowledge_base_id)
        log.info("kb.gone", knowledge_base_id=knowledge_base_id, drained=drained)
        return None
