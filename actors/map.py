"""Map: one document -> a validated extraction in ``wiki_extractions``, op moved to the reduce lane.

Runs on any worker, one message per document. Unchanged content hits the extraction cache and
costs no extractor call. A failing document is counted against its in-batch retry budget; past
``wiki_max_fail_retries`` it becomes a ``wiki:ingest`` dead letter and the others go on.
"""

from __future__ import annotations

from datetime import datetime, timezone

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, MapArgs
from actors.claims import release_after_failure
from actors.coordination import tombstone_key
from actors.deps import Deps, get_deps
from actors.lanes import INGEST, REDUCE
from actors.triggers import send_trigger
from wiki.errors import error_text, fail_budget_spent
from wiki.extract import ExtractionError

log = structlog.get_logger(__name__)


def map_document(deps: Deps, tenant_id: int, knowledge_base_id: str, knowledge_id: str, op_id: int) -> str:
    """Extract one document for the op ``op_id``; returns the outcome.

    Outcomes: ``mapped``, ``cached`` (no extractor call), ``gone`` (op already handled),
    ``skipped`` (the extractor found nothing to write: status and reason on the document),
    ``gone`` also when the op was handled by another worker while this one mapped it (the
    document's status is then left as that handler set it),
    ``deleted`` (document deleted or tombstoned: the op is dropped), ``retry`` (failure counted,
    op released) and ``dead`` (budget exhausted, dead-lettered).
    """
    op = deps.ops.get(op_id)
    if op is None or op.task_type != INGEST:
        return "gone"
    if deps.worker_id:
        # The pump that claimed the op may run in another worker: the claim follows the message to
        # the worker mapping it, so a kill -9 of this worker frees it at its next missed heartbeat.
        deps.ops.adopt([op_id], deps.worker_id)
    doc = deps.docs.get(knowledge_id)
    tombstoned = deps.redis.exists(tombstone_key(deps.settings.key_prefix, knowledge_base_id, knowledge_id))
    if doc is None or doc.status in ("deleting", "deleted") or tombstoned:
        deps.ops.delete_by_ids([op_id])
        return "deleted"
    name = deps.extractor.name
    outcome = "cached"
    try:
        extraction = deps.extractions.get(knowledge_base_id, doc.id, doc.content_hash, name)
        if extraction is None:
            extraction = deps.extractor.extract(doc.title, doc.content)
            outcome = "mapped"
    except ExtractionError as exc:  # the document itself is unusable: retrying cannot help
        with deps.pool.connection() as conn:
            if not deps.ops.delete_by_ids([op_id], conn=conn):
                return "gone"  # handled meanwhile: its outcome, not this one, is the document's status
            deps.docs.set_status([doc.id], "skipped", f"no wiki content: {exc}", conn=conn)
        return "skipped"
    except Exception as exc:
        return _count_failure(deps, op, exc)
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
            return "gone"
        deps.docs.set_status([doc.id], "mapped", conn=conn)
    return outcome


def _count_failure(deps: Deps, op, exc: Exception) -> str:
    error = error_text(exc)
    fails = deps.ops.incr_fail_count(op.id)
    if fails is None:
        return "gone"
    if fail_budget_spent(fails, deps.settings.wiki_max_fail_retries):
        with deps.pool.connection() as conn:
            op = op.model_copy(update={"fail_count": fails})
            deps.dead_letters.move_op_to_dead_letters(op, task_type=INGEST, error=error, conn=conn)
            deps.docs.set_status([op.dedup_key], "failed", f"extraction failed {fails} times: {exc!r}", conn=conn)
        log.error("document.dead_lettered", knowledge_id=op.dedup_key, fail_count=fails, error=repr(exc))
        return "dead"
    delay = release_after_failure(deps, op, fails)
    log.warning(
        "document.map_failed", knowledge_id=op.dedup_key, fail_count=fails, error=repr(exc), retry_in_s=round(delay, 1)
    )
    return "retry"


@dramatiq.actor(queue_name="wiki_map", max_retries=3, time_limit=300_000, throws=BAD_MESSAGE)
def wiki_map(**kwargs) -> None:
    """Map one document, then keep the pipeline moving: refill map slots, trigger the reduce."""
    args = MapArgs.model_validate(kwargs)
    deps = get_deps()
    outcome = map_document(deps, args.tenant_id, args.knowledge_base_id, args.knowledge_id, args.op_id)
    log.info("document.mapped", knowledge_id=args.knowledge_id, outcome=outcome)
    kb = {"tenant_id": args.tenant_id, "knowledge_base_id": args.knowledge_base_id}
    send_trigger(deps, "wiki_ingest", debounce=False, **kb)
    if outcome == "retry":  # the pump skips the op until its backoff ends: come back then
        op = deps.ops.get(args.op_id)
        if op is not None and op.not_before is not None:
            wait_s = (op.not_before - datetime.now(timezone.utc)).total_seconds()
            send_trigger(deps, "wiki_ingest", debounce=False, delay_s=max(wait_s, 0.0) + 0.05, **kb)
    if outcome in ("mapped", "cached"):
        send_trigger(deps, "wiki_reduce", **kb)
