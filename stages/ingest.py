"""Entering work: storing a submitted document (``submit_document``) and the ingest pump.

The pump (``wiki_ingest``) claims at most ``ingest_map_parallel`` ops of a KB's ingest lane at a
time and sends one ``wiki_map`` message per document, so one huge KB cannot starve the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import structlog

from repos.broker_messages import tag_of
from repos.db import advisory_xact_lock
from repos.extractions import ExtractionRepository
from repos.knowledge import REDO_STATUSES
from stages.claims import claim_lane, current_message_tag
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from stages.triggers import send
from wiki.lanes import INGEST, OP_INGEST, OP_RETRACT, REDUCE, SCOPE_KB, Actor
from wiki.models import MAX_TITLE_CHARS, DocStatus, Document
from wiki.plural import counted
from wiki.settings import Settings, kb_tunables
from wiki.text import clean_text, cut, prose_size

log = structlog.get_logger(__name__)


class SubmitStatus(StrEnum):
    """What happened to a submitted document (``kbwiki ingest`` counts its documents by these)."""

    queued = "queued"  # stored and queued for map (its reason says where it was cut, if it was)
    unchanged = "unchanged"  # the KB holds this content from this source already: nothing queued
    skipped = "skipped"  # not stored: too short, or the KB is deleted (the reason says which)


@dataclass(frozen=True)
class SubmitResult:
    """What happened to a submitted document: its status and, for ``skipped`` and a cut
    ``queued`` document, the reason."""

    knowledge_id: str | None
    status: SubmitStatus
    reason: str = ""


def submit_document(
    deps: Deps,
    *,
    tenant_id: int,
    knowledge_base_id: str,
    title: str,
    content: str,
    source_uri: str = "",
) -> SubmitResult:
    """Store one document and enqueue its ingest op in one transaction, then trigger the pump.

    The content is cleaned (NUL bytes and other control characters removed), cut to
    ``max_document_chars`` with a warning, and skipped with a reason when shorter than
    ``min_document_chars`` (a CJK character counting 3, ``wiki.text.prose_size``): see
    ``prepare_document``. The rest is ``store_document``'s.
    Raises ``repos.knowledge.UnknownKnowledgeBase`` for an unknown, deleted or foreign KB.
    """
    return store_document(
        deps,
        tenant_id=tenant_id,
        knowledge_base_id=knowledge_base_id,
        prepared=prepare_document(title, content, deps.settings),
        source_uri=source_uri,
    )


def store_document(
    deps: Deps,
    *,
    tenant_id: int,
    knowledge_base_id: str,
    prepared: tuple[str, str, bool, str],
    source_uri: str = "",
) -> SubmitResult:
    """``submit_document`` for a document ``prepare_document`` already prepared (``prepared`` is
    its ``(title, content, was_cut, skip_reason)``; ``kbwiki ingest`` prepares each file once for
    its bulk unchanged check). Unchanged content (same hash and title) enqueues nothing, unless
    the document was written by another extractor (or version) than ``deps.extractor``.
    Raises ``repos.knowledge.UnknownKnowledgeBase`` for an unknown, deleted or foreign KB.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    title, content, was_cut, skip = prepared
    if was_cut:
        log.warning("document.cut", title=title, source_uri=source_uri, max_chars=deps.settings.max_document_chars)
    if skip:
        return SubmitResult(None, SubmitStatus.skipped, skip)
    with deps.pool.connection() as conn:
        doc, changed = deps.docs.upsert(kb, title=title, source_uri=source_uri, content=content, conn=conn)
        if not changed:
            if not _needs_new_extraction(deps.extractions, deps.extractor.name, kb.id, doc):
                return SubmitResult(doc.id, SubmitStatus.unchanged)
            deps.docs.set_status([doc.id], DocStatus.pending, conn=conn)
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
            return SubmitResult(None, SubmitStatus.skipped, "knowledge base was deleted")
    deps.triggers(tenant_id, kb.id).send(Actor.ingest)
    # said in the result too: a command logs to a file, and the user should see a cut document
    cut_to = f"cut to {deps.settings.max_document_chars} characters (KBWIKI_MAX_DOCUMENT_CHARS)"
    return SubmitResult(doc.id, SubmitStatus.queued, cut_to if was_cut else "")


def unchanged_sources(kb_id: str, prepared: dict[str, tuple[str, str]], deps: Deps) -> set[str]:
    """The source_uris of ``prepared`` ({source_uri: (title, content hash)}, as ``prepare_document``
    and ``content_hash`` make them) that ``submit_document`` would report unchanged: a live document
    with that title and hash, not in ``REDO_STATUSES``, whose extraction by ``deps.extractor`` is
    cached when it is written. Two statements for the lot, no lock and no content read: a re-ingest
    of an unchanged folder costs a file read and a hash per document (issue 24)."""
    live = deps.docs.live_versions(kb_id, list(prepared))
    same = {uri: v for uri, v in live.items() if (v[1], v[2]) == prepared[uri] and v[3] not in REDO_STATUSES}
    written = {v[0]: (v[2], deps.extractor.name) for v in same.values() if v[3] == DocStatus.done}
    cached = deps.extractions.held(kb_id, written)
    return {uri for uri, v in same.items() if v[3] != DocStatus.done or v[0] in cached}


def prepare_document(title: str, content: str, settings: Settings) -> tuple[str, str, bool, str]:
    """``(title, content, was_cut, skip_reason)`` as ``submit_document`` stores them: both cleaned
    (NUL bytes and other control characters removed), the content cut to ``max_document_chars``;
    ``skip_reason`` is non-empty when the content is shorter than ``min_document_chars`` (a CJK
    character counting 3, ``wiki.text.prose_size``). Also what ``kbwiki ingest --estimate`` reads."""
    title = " ".join(clean_text(title).split())[:MAX_TITLE_CHARS] or "untitled"
    content, was_cut = cut(clean_text(content), settings.max_document_chars)
    if prose_size(content) < settings.min_document_chars:
        size = counted(len(content.strip()), "character")
        return (
            title,
            content,
            was_cut,
            f"empty or near-empty ({size}; KBWIKI_MIN_DOCUMENT_CHARS is {settings.min_document_chars})",
        )
    return title, content, was_cut, ""


def _needs_new_extraction(extractions: ExtractionRepository, extractor_name: str, kb_id: str, doc: Document) -> bool:
    """True for a written (``done``) document whose extraction is not the current extractor's: a KB
    built by an older extractor version is rebuilt when its documents are submitted again, instead
    of keeping the old pages because the content did not change (one primary-key probe)."""
    if doc.status != DocStatus.done:
        return False
    return extractions.get(kb_id, doc.id, doc.content_hash, extractor_name) is None


def pump_ingest_lane(tenant_id: int, knowledge_base_id: str, deps: Deps) -> int:
    """Claim up to the KB's free map slots and send ``wiki_map`` for each claimed document.

    The last op of a document wins: a retract goes straight to the reduce lane (it needs no
    extraction, so a claim full of them pumps again at once); older ops of the same document are
    dropped. Returns the number of map messages sent.
    A KB that is gone has its lanes drained and sends nothing.
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return 0
    parallel = kb_tunables(deps.settings, kb).map_parallel
    with deps.pool.connection() as conn:
        advisory_xact_lock(conn, f"{INGEST}:{kb.id}")  # pumps of one KB take turns: slots stay honest
        busy = deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, deps.settings.stale_claim_s)
        slots = max(0, parallel - busy)
        claimed = claim_lane(INGEST, kb.id, slots, deps, conn=conn)
        last_by_key: dict[str, object] = {}
        for op in claimed:
            last_by_key[op.dedup_key or str(op.id)] = op
        superseded = [op.id for op in claimed if last_by_key[op.dedup_key or str(op.id)] is not op]
        deps.ops.delete_by_ids(superseded, conn=conn)
        retracts = [op for op in last_by_key.values() if op.op == OP_RETRACT]
        deps.ops.move([op.id for op in retracts], REDUCE, conn=conn)
        maps = [op for op in last_by_key.values() if op.op == OP_INGEST]
    sent: dict[int, str] = {}
    try:
        for op in maps:
            kwargs = {"tenant_id": tenant_id, "knowledge_base_id": kb.id, "knowledge_id": op.dedup_key, "op_id": op.id}
            message = send(Actor.map, **kwargs)
            sent[op.id] = tag_of(message) or ""
    finally:
        # Each claim now waits on its map message, not on this one: a claim whose send failed
        # (Redis away) stays tied to this message and comes back once it is acked (stages.message_claims).
        deps.ops.hand_on({i: t for i, t in sent.items() if t}, from_msg=current_message_tag())
    if retracts:
        triggers = deps.triggers(tenant_id, kb.id)
        triggers.send(Actor.reduce)
        if len(last_by_key) >= slots:
            # a retract holds no map slot: the slots it was claimed in are free again at once, and no
            # map will finish to pump the lane again (deleting 1,000 documents moved 6 retracts a
            # recovery sweep, every 30 s)
            triggers.send(Actor.ingest, debounce=False)
    return len(maps)


def ingest_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> int:
    """What ``wiki_ingest`` does with a trigger: clear it, then fill the KB's free map slots
    (:func:`pump_ingest_lane`); returns the map messages sent."""
    deps.triggers(tenant_id, knowledge_base_id).clear(Actor.ingest)
    sent = pump_ingest_lane(tenant_id, knowledge_base_id, deps)
    log.info("ingest.pumped", knowledge_base_id=knowledge_base_id, sent=sent)
    return sent
