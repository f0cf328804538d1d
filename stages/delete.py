"""Stages of deleting documents and knowledge bases, and what every handler does when its KB is gone.

Documents are deleted in batches, one transaction each (``delete_documents``): the documents go
to ``deleting``, their pending ingest ops leave every lane (scoped by their dedup keys), one
``retract`` op each enters the reduce lane and the Redis tombstones are set; reduce then removes
their facts, citations and doc-only pages, ``ingest_batch_size`` documents a batch, each batch
triggering the next. A KB delete removes every lane row and page of the KB at once; handlers that
later find the KB gone drain its lanes and succeed (no retries, no dead letters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis as redis_lib
import structlog

from repos.coordination import set_tombstones, unmark
from repos.knowledge import KnowledgeBaseRepository
from repos.pending_ops import TaskPendingOpsRepository
from stages.deps import Deps
from wiki.errors import UnknownKnowledgeBase
from wiki.lanes import INGEST, OP_INGEST, OP_RETRACT, REDUCE, SCOPE_KB, Actor
from wiki.models import KnowledgeBase

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


#: Documents a delete marks in one transaction (``kbwiki delete`` sends its documents in batches of
#: this many): a batch is a handful of statements whatever its size, while its row locks and the
#: work a Ctrl-C may cut short stay bounded. 1,000 documents are 5 transactions.
DELETE_BATCH = 200


def delete_document(tenant_id: int, knowledge_base_id: str, knowledge_id: str, deps: Deps) -> DeleteResult:
    """Delete one document of a live KB: :func:`delete_documents` of one id."""
    [result] = delete_documents(tenant_id, knowledge_base_id, [knowledge_id], deps)
    return result


def delete_documents(
    tenant_id: int,
    knowledge_base_id: str,
    knowledge_ids: Sequence[str],
    deps: Deps,
    *,
    on_commit: Callable[[list[DeleteResult]], None] | None = None,
) -> list[DeleteResult]:
    """Delete documents of a live KB in one transaction; their retracts run in the KB's next reduce
    batches. Returns one result per id, in the order given (``deleting``, ``already_deleted`` or
    ``unknown``).

    The transaction, a few statements whatever the number of ids: the documents go to ``deleting``,
    their ingest ops leave the ingest and reduce lanes, one ``retract`` op each enters the reduce
    lane (a retract needs no map, and a deleted document's id never gets another op, so nothing
    can overtake it there), and last the tombstones ``<prefix>:deleted:<kb>:<knowledge id>`` are
    set (``TOMBSTONE_TTL_S``, 1 h: longer than any op waits in a healthy pipeline; the durable
    status covers the rest). ``on_commit`` is called with the results right after the commit,
    before the reduce is triggered (``kbwiki delete`` prints them there). Idempotent: a document
    already deleting or deleted gives ``already_deleted`` and queues nothing. Keep a call to
    ``DELETE_BATCH`` ids. Raises ``repos.knowledge.UnknownKnowledgeBase`` for an unknown, deleted
    or foreign KB, and ``redis.RedisError`` (nothing changed) when the tombstones cannot be set.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    keys: list[str] = []
    try:
        with deps.pool.connection() as conn:
            marked = {doc.id for doc in deps.docs.mark_deleting_many(kb.id, knowledge_ids, conn=conn)}
            if marked:
                deps.ops.delete_by_dedup_keys(DOCUMENT_LANES, SCOPE_KB, kb.id, sorted(marked), OP_INGEST, conn=conn)
                queued = deps.ops.enqueue_keys_if_kb_active(
                    tenant_id=kb.tenant_id,
                    task_type=REDUCE,
                    scope_id=kb.id,
                    op=OP_RETRACT,
                    keys=sorted(marked),
                    payload_key="knowledge_id",
                    conn=conn,
                )
                if queued is None:  # the KB was deleted meanwhile (rolled back): its deletion removes the pages
                    raise UnknownKnowledgeBase(f"knowledge base {kb.id!r} was deleted")
                # last, so a Redis failure rolls the transaction back and nothing is half deleted
                keys = set_tombstones(deps.redis, deps.settings.key_prefix, kb.id, sorted(marked))
            rest = [kid for kid in knowledge_ids if kid not in marked]
            known = {d.id for d in deps.docs.get_many(rest).values() if d.knowledge_base_id == kb.id}
    except BaseException:
        if keys:  # the commit failed after the tombstones were set: a live document keeps none
            try:
                unmark(deps.redis, *keys)
            except redis_lib.RedisError:
                log.warning("document.tombstones_left", documents=len(keys))
        raise
    results, seen = [], set()
    for kid in knowledge_ids:  # an id given twice is deleted once: its second result is already_deleted
        fresh = kid in marked and kid not in seen
        seen.add(kid)
        status = "deleting" if fresh else "already_deleted" if kid in known | marked else "unknown"
        results.append(DeleteResult(kid, status))
    if on_commit is not None:
        on_commit(results)
    if marked:
        deps.triggers(kb.tenant_id, kb.id).send(Actor.reduce)
    return results


def delete_knowledge_base(tenant_id: int, knowledge_base_id: str, deps: Deps) -> KbDeleteResult:
    """Delete a KB in one transaction: mark it deleted, remove every lane row, page and link of it,
    mark its documents deleted and resolve its open dead letters (``kb_deleted``).
    ``deleted=False`` when it was not a live KB of the tenant.

    The KB row update waits for writers holding it FOR SHARE (op enqueues, index rebuilds,
    reduce settles), so their rows are removed here or refused afterwards. Work already in
    flight finds the KB gone (``active_kb_or_drain``) and drops what it left behind.
    """
    with deps.pool.connection() as conn:
        kb = deps.kbs.mark_deleted(tenant_id, knowledge_base_id, conn=conn)
        if kb is None:
            return KbDeleteResult(False)
        n_ops = deps.ops.delete_by_scope(SCOPE_KB, kb.id, conn=conn)
        n_pages = deps.pages.delete_kb(kb.id, conn=conn)
        deps.mentions.delete_kb(kb.id, conn=conn)
        n_docs = deps.docs.mark_kb_deleted(kb.id, conn=conn)
        deps.dead_letters.resolve_kb(kb.id, conn=conn)
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
