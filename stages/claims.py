"""Claiming a lane's rows for this worker, and giving them back: at once when the work on them
fails (a PoolTimeout in reduce once left a batch's rows stuck for 5 minutes), after a backoff
when one document failed and will be tried again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import structlog
from dramatiq.common import compute_backoff
from dramatiq.middleware import CurrentMessage
from psycopg import Connection

from repos.broker_messages import tag_of
from repos.pending_ops import PendingOp, TaskPendingOpsRepository
from stages.deps import Deps
from wiki.errors import fail_budget_spent
from wiki.lanes import SCOPE_KB
from wiki.settings import Settings

log = structlog.get_logger(__name__)


def claim_lane(
    task_type: str,
    kb_id: str,
    limit: int,
    deps: Deps,
    *,
    conn: Connection | None = None,
) -> list[PendingOp]:
    """Claim up to ``limit`` dedup keys of the KB's lane ``task_type`` for this worker
    (``TaskPendingOpsRepository.claim`` with the worker id as owner, the running message as the
    claim's message (:func:`current_message_tag`) and ``stale_claim_s``)."""
    return deps.ops.claim(
        task_type,
        SCOPE_KB,
        kb_id,
        limit,
        deps.settings.stale_claim_s,
        conn=conn,
        owner=deps.worker_id,
        msg=current_message_tag(),
    )


def current_message_tag() -> str | None:
    """The tag (``repos.broker_messages.tag``) of the message this worker thread is processing, from
    Dramatiq's ``CurrentMessage`` middleware; None outside an actor (commands, tests calling stages)."""
    message = CurrentMessage.get_current_message()
    return tag_of(message) if message is not None else None


def room_for_another_run(
    task_type: str,
    kb_id: str,
    *,
    runs: int,
    per_run: int = 1,
    ops: TaskPendingOpsRepository,
    settings: Settings,
) -> bool:
    """Whether a run that just claimed should send one more: the KB's lane ``task_type`` has unclaimed
    rows and fewer than ``runs`` runs hold fresh claims, a run claiming up to ``per_run`` rows (the
    claimed rows are counted, so ``per_run`` turns them into runs)."""
    in_flight = ops.claimed_count(task_type, SCOPE_KB, kb_id, settings.stale_claim_s)
    return ops.pending_count(task_type, SCOPE_KB, kb_id) > in_flight and -(-in_flight // per_run) < runs


def backoff_s(settings: Settings, fails: int) -> float:
    """Seconds a document op waits after its ``fails``-th failure before it is claimed again.

    Dramatiq's own retry schedule (``dramatiq.common.compute_backoff``, the one its Retries
    middleware uses for messages): ``document_retry_backoff_ms * 2**(fails-1)`` times a jitter in [1, 2),
    capped at ``document_retry_backoff_max_ms`` (then 50-100 % of it). With the defaults (1 s, 60 s) the
    five retries wait 1-2, 2-4, 4-8, 8-16 and 16-32 s. Jitter spreads the retries of documents
    that failed together (one outage) so they do not all come back at once.
    """
    if settings.document_retry_backoff_ms <= 0:
        return 0.0
    _, ms = compute_backoff(
        max(fails - 1, 0), factor=settings.document_retry_backoff_ms, max_backoff=settings.document_retry_backoff_max_ms
    )
    return ms / 1000


@dataclass(frozen=True)
class Failure:
    """One failure counted on an op: its new ``fails``, whether its fail budget is now ``spent``
    (the caller dead-letters or drops it: it is still claimed) and otherwise the backoff ``delay_s``
    it was released with."""

    fails: int
    spent: bool
    delay_s: float = 0.0


def count_failure(
    op: PendingOp,
    deps: Deps,
    *,
    conn: Connection | None = None,
    payload_patch: dict | None = None,
    for_good: bool = False,
) -> Failure | None:
    """Count one failure on ``op`` (merging ``payload_patch`` into its payload): past
    ``wiki_max_fail_retries`` (or ``for_good``) the budget is spent and the op is left to the
    caller; else its claim is given back with its backoff (:func:`backoff_s`). None when the op
    is gone (handled meanwhile)."""
    fails = deps.ops.incr_fail_count(op.id, conn=conn, payload_patch=payload_patch)
    if fails is None:
        return None
    if for_good or fail_budget_spent(fails, deps.settings.wiki_max_fail_retries):
        return Failure(fails, spent=True)
    delay = backoff_s(deps.settings, fails)
    deps.ops.release([op.id], conn=conn, by=deps.worker_id, not_before_s=delay)
    return Failure(fails, spent=False, delay_s=delay)


@contextlib.contextmanager
def released_on_failure(claimed: Sequence[PendingOp], deps: Deps) -> Iterator[None]:
    """Run the block; if it raises, release the claimed ops (best effort) and re-raise.

    Ops the block already deleted or moved are unaffected (release only clears claimed_at of
    rows that still exist), nor are rows another worker claimed since (a claim taken back from
    this worker while it was cut off from PostgreSQL).
    """
    try:
        yield
    except BaseException:
        try:
            deps.ops.release([op.id for op in claimed], by=deps.worker_id)
        except Exception as exc:  # the heartbeat reaper or the sweeper reclaims them anyway
            log.warning("claims.release_failed", error=repr(exc), ops=len(claimed))
        raise
