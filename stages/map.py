"""Map: one document -> a validated extraction in ``wiki_extractions``, op moved to the reduce lane.

Runs on any worker, one message per document. Unchanged content hits the extraction cache and
costs no extractor call. A failing document is counted against its in-batch retry budget; past
``wiki_max_fail_retries`` it becomes a ``wiki:ingest`` dead letter and the others go on. A
deterministic failure spends the budget at once: a content filter's refusal (``for_good``), or a
model answer invalid for the same reason as the try before (``LLMOutputInvalid.signature``, kept
in the op's payload): asking again would pay for the same answer up to 5 more times.
"""

from __future__ import annotations

from datetime import UTC, datetime

import structlog

from repos.coordination import tombstoned
from repos.pending_ops import PendingOp
from stages import llm_gate, llm_recovery
from stages.claims import count_failure, current_message_tag
from stages.deps import Deps
from stages.ingest import pump_ingest_lane
from wiki.errors import ExtractionError, LLMConfigError, error_text
from wiki.lanes import INGEST, REDUCE, Actor
from wiki.models import RETRACTED, DocStatus, MapOutcome
from wiki.plural import counted

log = structlog.get_logger(__name__)

#: The op payload's key for the signature of its last invalid answer (``LLMOutputInvalid.signature``).
_LAST_INVALID = "last_invalid_answer"
#: Said first by the dead letter and the document's status when an answer failed the same way twice.
REPEATED = "the same invalid answer twice, not asked again"


def map_document(tenant_id: int, knowledge_base_id: str, knowledge_id: str, op_id: int, deps: Deps) -> MapOutcome:
    """Extract one document for the op ``op_id``; returns the outcome.

    Outcomes: ``mapped``, ``cached`` (no extractor call), ``gone`` (op already handled),
    ``skipped`` (the extractor found nothing to write: status and reason on the document),
    ``gone`` also when the op was handled by another worker while this one mapped it (the
    document's status is then left as that handler set it),
    ``deleted`` (document deleted or tombstoned: the op is dropped), ``retry`` (failure counted,
    op released), ``dead`` (budget exhausted, or a failure marked ``for_good``: dead-lettered) and
    ``paused`` (the KB's model endpoint refused its configuration, its account is out of credit or
    its token budget is spent: op released uncounted, see ``stages.llm_gate``).
    """
    op = deps.ops.get(op_id)
    # An op id names another document's op when ids were reused (a restored or truncated table): a
    # stale message must neither map nor delete it.
    if op is None or op.task_type != INGEST or op.dedup_key != knowledge_id:
        return MapOutcome.gone
    if deps.worker_id:
        # The pump that claimed the op may run in another worker: the claim follows the message to
        # the worker mapping it, so a kill -9 of this worker frees it at its next missed heartbeat.
        deps.ops.adopt([op_id], deps.worker_id, msg=current_message_tag())
    doc = deps.docs.get(knowledge_id)
    gone = tombstoned(deps.redis, deps.settings.key_prefix, knowledge_base_id, [knowledge_id])
    if doc is None or doc.status in RETRACTED or gone:
        deps.ops.delete_by_ids([op_id])
        return MapOutcome.deleted
    extractor = llm_gate.extractor_for(deps.extractor, knowledge_base_id, kbs=deps.kbs)
    outcome = MapOutcome.cached
    try:
        found = llm_gate.cached(extractor, knowledge_base_id, doc, deps)
        if found is None:
            if llm_gate.paused(extractor, knowledge_base_id, deps, probe_s=deps.settings.llm_pause_s):
                return llm_gate.pause(op, deps)
            found = llm_gate.extract(extractor, knowledge_base_id, doc, deps)
            outcome = MapOutcome.mapped
        extraction, name = found
    except LLMConfigError as exc:  # the endpoint refused the configuration: no document can pass
        llm_gate.record_config_error(extractor, knowledge_base_id, exc, llm_errors=deps.llm_errors)
        return llm_gate.pause(op, deps)
    except ExtractionError as exc:  # the document itself is unusable: retrying cannot help
        with deps.pool.connection() as conn:
            if not deps.ops.delete_by_ids([op_id], conn=conn):
                return MapOutcome.gone  # handled meanwhile: its outcome, not this one, is the document's status
            deps.docs.set_status([doc.id], DocStatus.skipped, f"no wiki content: {exc}", conn=conn)
        return MapOutcome.skipped
    except Exception as exc:
        return _count_failure(op, exc, deps)
    with deps.pool.connection() as conn:
        deps.extractions.put(knowledge_base_id, doc.id, doc.content_hash, name, extraction, conn=conn)
        # Only an op still waiting for its map moves on: when another worker mapped it already (its
        # claim was taken back) and reduce may have finished it, the document keeps its status.
        if not deps.ops.move(
            [op_id],
            REDUCE,
            payload_patch={"content_hash": doc.content_hash, "extractor": name},
            conn=conn,
            from_task_type=INGEST,
        ):
            return MapOutcome.gone
        deps.docs.set_status([doc.id], DocStatus.mapped, conn=conn)
    return outcome


def _count_failure(op: PendingOp, exc: Exception, deps: Deps) -> MapOutcome:
    error = error_text(exc)
    # The invalid answer's signature is kept on the op: the next failure compares with it.
    signature = getattr(exc, "signature", None)
    repeated = signature is not None and op.payload.get(_LAST_INVALID) == signature
    # A failure retrying cannot help (a content filter's refusal, an answer invalid the same way
    # twice: the model is deterministic enough) spends the whole budget at once.
    failure = count_failure(
        op, deps, payload_patch={_LAST_INVALID: signature}, for_good=getattr(exc, "for_good", False) or repeated
    )
    if failure is None:
        return MapOutcome.gone
    fails = failure.fails
    if failure.spent:
        reason = f"extraction failed {counted(fails, 'time')}: {exc!r}"
        if repeated:
            kind, _, message = error.partition(": ")
            error = f"{kind}: {REPEATED}: {message}"
            reason = f"{REPEATED}: {str(exc).splitlines()[0]}"
        with deps.pool.connection() as conn:
            op = op.model_copy(update={"fail_count": fails})
            deps.dead_letters.move_op_to_dead_letters(op, task_type=INGEST, error=error, conn=conn)
            deps.docs.set_status([op.dedup_key], DocStatus.failed, reason, conn=conn)
        log.error(
            "document.dead_lettered", knowledge_id=op.dedup_key, fail_count=fails, repeated=repeated, error=repr(exc)
        )
        if llm_recovery.is_transient(exc):  # the endpoint's failure: requeued when it answers again
            llm_recovery.note_outage(op.scope_id, redis=deps.redis, settings=deps.settings)
        return MapOutcome.dead
    log.warning(
        "document.map_failed",
        knowledge_id=op.dedup_key,
        fail_count=fails,
        error=repr(exc),
        retry_in_s=round(failure.delay_s, 1),
    )
    return MapOutcome.retry


def refill_slots(tenant_id: int, knowledge_base_id: str, deps: Deps) -> int:
    """Fill the KB's free map slots from this thread (``stages.ingest.pump_ingest_lane``); returns
    the map messages sent.

    Not through a ``wiki_ingest`` message: that hop waited for a worker thread and for the default
    queue's consumer, which sleeps up to the worker timeout (1 s) when its queue was idle, and at a
    model latency of 200 ms a slot spent about as long waiting for its next document as on the
    document (bench/llm_pipeline.py, docs/decisions.md). When the pump fails (PostgreSQL went
    away), the trigger is sent instead so that its actor retries.
    """
    try:
        return pump_ingest_lane(tenant_id, knowledge_base_id, deps)
    except Exception as exc:
        log.warning("ingest.refill_failed", knowledge_base_id=knowledge_base_id, error=repr(exc))
        deps.triggers(tenant_id, knowledge_base_id).send(Actor.ingest, debounce=False)
        return 0


def map_step(tenant_id: int, knowledge_base_id: str, knowledge_id: str, op_id: int, deps: Deps) -> MapOutcome:
    """What ``wiki_map`` does with a message: map the document (:func:`map_document`), then keep the
    pipeline moving (refill map slots, come back after a failed op's backoff, trigger the reduce);
    returns the outcome."""
    outcome = map_document(tenant_id, knowledge_base_id, knowledge_id, op_id, deps)
    log.info("document.mapped", knowledge_id=knowledge_id, outcome=outcome)
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    refill_slots(tenant_id, knowledge_base_id, deps)
    if outcome in (MapOutcome.retry, MapOutcome.paused):  # the pump skips the op until its backoff ends: come back then
        op = deps.ops.get(op_id)
        if op is not None and op.not_before is not None:
            wait_s = (op.not_before - datetime.now(UTC)).total_seconds()
            triggers.send(Actor.ingest, debounce=False, delay_s=max(wait_s, 0.0) + 0.05)
    if outcome in (MapOutcome.mapped, MapOutcome.cached):
        triggers.send(Actor.reduce)
    if outcome == MapOutcome.mapped and llm_gate.is_llm(
        deps.extractor
    ):  # the model answers: an outage's letters go back
        llm_recovery.requeue_after_outage(tenant_id, knowledge_base_id, deps)
    return outcome
