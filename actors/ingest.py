"""Entering work: the producer API (``submit_document``, ``wiki_submit``) and the ingest pump.

The pump (``wiki_ingest``) claims at most ``ingest_map_parallel`` ops of a KB's ingest lane at a
time and sends one ``wiki_map`` message per document, so one huge KB cannot starve the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs, SubmitArgs
from actors.claims import claim_lane
from actors.delete import active_kb_or_drain
from actors.deps import Deps, get_deps
from actors.lanes import INGEST, OP_INGEST, OP_RETRACT, REDUCE, SCOPE_KB
from actors.retry_policy import data_retries
from actors.triggers import clear_trigger, send_trigger
from repos.db import advisory_xact_lock
from repos.knowledge import UnknownKnowledgeBase
from wiki.settings import get_settings
from wiki.text import clean_text, cut, prose_size

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SubmitResult:
    """What happened to a submitted document: ``queued`` (reason set when it was cut), ``unchanged``
    or ``skipped`` (with reason)."""

    knowledge_id: str | None
    status: str
    reason: str = ""


def submit_document(
    deps: Deps, *, tenant_id: int, knowledge_base_id: str, title: str, content: str, source_uri: str = ""
) -> SubmitResult:
    """Store one document and enqueue its ingest op in one transaction, then trigger the pump.

    The content is cleaned (NUL bytes and other control characters removed), cut to
    ``max_document_chars`` with a warning, and skipped with a reason when shorter than
    ``min_document_chars`` (a CJK character counting 3, ``wiki.text.prose_size``). Unchanged content (same hash and title) enqueues nothing, unless
    the document was written by another extractor (or version) than the current one.
    Raises ``repos.knowledge.UnknownKnowledgeBase`` for an unknown, deleted or foreign KB.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    title = " ".join(clean_text(title).split())[:500] or "untitled"
    content = clean_text(content)
    content, was_cut = cut(content, deps.settings.max_document_chars)
    if was_cut:
        log.warning("document.cut", title=title, source_uri=source_uri, max_chars=deps.settings.max_document_chars)
    if prose_size(content) < deps.settings.min_document_chars:
        return SubmitResult(None, "skipped", f"empty or near-empty ({len(content.strip())} characters)")
    with deps.pool.connection() as conn:
        doc, changed = deps.docs.upsert(kb, title=title, source_uri=source_uri, content=content, conn=conn)
        if not changed:
            if not _needs_new_extraction(deps, kb.id, doc):
                return SubmitResult(doc.id, "unchanged")
            deps.docs.set_status([doc.id], "pending", conn=conn)
        op = deps.ops.enqueue_if_kb_active(
            tenant_id=tenant_id,
            task_type=INGEST,
            scope=SCOPE_KB,
            scope_id=kb.id,
            op=OP_INGEST,
            dedup_key=doc.id,
            payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
            conn=conn,
        )
        if op is None:
            conn.rollback()
            return SubmitResult(None, "skipped", "knowledge base was deleted")
    send_trigger(deps, "wiki_ingest", tenant_id=tenant_id, knowledge_base_id=kb.id)
    # said in the result too: a command logs to a file, and the user should see a cut document
    return SubmitResult(doc.id, "queued", f"cut to {deps.settings.max_document_chars} characters" if was_cut else "")


def _needs_new_extraction(deps: Deps, kb_id: str, doc) -> bool:
    """True for a written (``done``) document whose extraction is not the current extractor's: a KB
    built by an older extractor version is rebuilt when its documents are submitted again, instead
    of keeping the old pages because the content did not change (one primary-key probe)."""
    if doc.status != "done":
        return False
    return deps.extractions.get(kb_id, doc.id, doc.content_hash, deps.extractor.name) is None


def pump_ingest_lane(deps: Deps, tenant_id: int, knowledge_base_id: str) -> int:
    """Claim up to the KB's free map slots and send ``wiki_map`` for each claimed document.

    The last op of a document wins: a retract goes straight to the reduce lane (it needs no
    extraction); older ops of the same document are dropped. Returns the number of map messages sent.
    A KB that is gone has its lanes drained and sends nothing.
    """
    kb = active_kb_or_drain(deps, tenant_id, knowledge_base_id)
    if kb is None:
        return 0
    parallel = deps.tunables(kb).map_parallel
    with deps.pool.connection() as conn:
        advisory_xact_lock(conn, f"{INGEST}:{kb.id}")  # pumps of one KB take turns: slots stay honest
        busy = deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, deps.settings.stale_claim_s)
        claimed = claim_lane(deps, INGEST, kb.id, max(0, parallel - busy), conn=conn)
        last_by_key: dict[str, object] = {}
        for op in claimed:
            last_by_key[op.dedup_key or str(op.id)] = op
        superseded = [op.id for op in claimed if last_by_key[op.dedup_key or str(op.id)] is not op]
        deps.ops.delete_by_ids(superseded, conn=conn)
        retracts = [op for op in last_by_key.values() if op.op == OP_RETRACT]
        deps.ops.move([op.id for op in retracts], REDUCE, conn=conn)
        maps = [op for op in last_by_key.values() if op.op == OP_INGEST]
    wiki_map = dramatiq.get_broker().get_actor("wiki_map")
    for op in maps:
        wiki_map.send(tenant_id=tenant_id, knowledge_base_id=kb.id, knowledge_id=op.dedup_key, op_id=op.id)
    if retracts:
        send_trigger(deps, "wiki_reduce", tenant_id=tenant_id, knowledge_base_id=kb.id)
    return len(maps)


@dramatiq.actor(queue_name="wiki", max_retries=3, time_limit=60_000, throws=BAD_MESSAGE)
def wiki_ingest(**kwargs) -> None:
    """Trigger: fill the KB's free map slots from its ingest lane."""
    args = KbArgs.model_validate(kwargs)
    deps = get_deps()
    clear_trigger(deps, "wiki_ingest", args.knowledge_base_id)
    sent = pump_ingest_lane(deps, args.tenant_id, args.knowledge_base_id)
    log.info("ingest.pumped", knowledge_base_id=args.knowledge_base_id, sent=sent)


@dramatiq.actor(
    queue_name="wiki", time_limit=60_000, throws=(*BAD_MESSAGE, UnknownKnowledgeBase), **data_retries(get_settings())
)
def wiki_submit(**kwargs) -> None:
    """Producer entry point: ``wiki_submit.send(tenant_id=, knowledge_base_id=, title=, content=, source_uri=)``.

    The message is the document: it retries for at least ``KBWIKI_DATA_RETRY_S`` (24 h) through
    outages (``actors.retry_policy``). A document for an unknown, deleted or foreign KB is refused
    at once (``throws``: no retries; the dead-letter middleware keeps the message).
    """
    args = SubmitArgs.model_validate(kwargs)
    result = submit_document(get_deps(), **args.model_dump())
    log.info("document.submitted", knowledge_id=result.knowledge_id, status=result.status, reason=result.reason)
