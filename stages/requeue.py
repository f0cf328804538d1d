"""Requeue: give a dead letter another go, then remove it.

Two kinds of dead letters exist (``repos.dead_letters.TaskDeadLetterRepository``):

- ``wiki:ingest`` rows are document ops that used up their in-batch retry budget in map or
  reduce; their payload is the whole op. Requeue puts the op back in the ingest lane of its KB
  (a fresh row, so ``fail_count`` starts at 0), marks the document ``pending`` again and removes
  the dead letter, all in one transaction, then triggers the KB's pump.
- every other row is a Dramatiq message the dead-letter middleware recorded; its payload is
  ``Message.asdict()``. Requeue re-sends it through the broker with a fresh retry budget and
  removes the row only after the send succeeded.

Dead letters the middleware could not write (PostgreSQL down) wait in the Redis spool
(``repos.dead_letter_spool``); ``unspool`` moves them into the table, on every worker each
``sweep_interval_s`` and at the start of every ``kbwiki dead-letters`` command.
"""

from __future__ import annotations

from typing import Any

import dramatiq
import redis as redis_lib
import structlog
from dramatiq.errors import ActorNotFound

from repos.dead_letter_spool import DeadLetterSpool
from repos.dead_letters import DeadLetter, TaskDeadLetterRepository
from stages.deps import Deps
from stages.triggers import get_actor
from wiki.errors import DeadLetterNotFound, RequeueRefused
from wiki.lanes import INGEST, OP_INGEST, OP_RETRACT, SCOPE_KB, Actor
from wiki.models import DocStatus
from wiki.settings import Settings

log = structlog.get_logger(__name__)

#: Message options written by the broker and by Dramatiq's middleware while a message is
#: delivered and retried. A re-sent message drops them: ``retries`` restarts the retry budget,
#: the others describe the failed delivery, not the message.
DELIVERY_OPTIONS = frozenset({"retries", "traceback", "requeue_timestamp", "eta", "redis_message_id"})

#: Outcomes of ``requeue_dead_letter``.
REINSERTED = "reinserted"
RESENT = "resent"


def unspool(
    *, redis: redis_lib.Redis, settings: Settings, dead_letters: TaskDeadLetterRepository, tenant_id: int | None = None
) -> int:
    """Move the dead letters of ``tenant_id`` (None: every tenant's) waiting in the Redis spool into
    ``task_dead_letters``; returns how many.

    Raises the database's error (the rest stay spooled) while PostgreSQL is still unreachable.
    """
    moved = DeadLetterSpool(redis, settings.key_prefix).drain_into(dead_letters, tenant_id=tenant_id)
    if moved:
        log.info("dead_letter.unspooled", dead_letters=moved)
    return moved


def requeue_dead_letter(
    dead_letter_id: int,
    deps: Deps,
    *,
    tenant_id: int | None,
    mark: dict[str, Any] | None = None,
) -> str:
    """Requeue one dead letter and delete it; returns ``"reinserted"`` (wiki op) or ``"resent"`` (message).
    ``mark``: fields added to a wiki op's payload (``stages.llm_recovery`` marks what it requeued).

    ``tenant_id`` confines it to that tenant's dead letters (None: any tenant's). Raises
    ``DeadLetterNotFound`` when the row is gone or another tenant's (also when a concurrent
    requeue of the same row won) and ``RequeueRefused`` when its KB is deleted or foreign, its payload is not an op or
    a message, or its actor is not declared on the broker. Broker and database errors propagate;
    in every failure the dead letter is kept.
    """
    row = deps.dead_letters.get(dead_letter_id, tenant_id=tenant_id)
    if row is None:
        raise DeadLetterNotFound(f"no dead letter {dead_letter_id}")
    if row.task_type == INGEST:
        return _reinsert_wiki_op(row, deps, mark=mark)
    return _resend_message(row, dead_letters=deps.dead_letters)


def _reinsert_wiki_op(
    row: DeadLetter,
    deps: Deps,
    *,
    mark: dict[str, Any] | None = None,
) -> str:
    op = row.payload
    knowledge_id = str(op.get("dedup_key") or row.related_id)
    kind = op.get("op")
    if row.scope != SCOPE_KB or not row.scope_id or not knowledge_id or kind not in (OP_INGEST, OP_RETRACT):
        raise RequeueRefused(f"dead letter {row.id} is not a wiki document op (scope {row.scope!r}, op {kind!r})")
    payload = {**(op.get("payload") if isinstance(op.get("payload"), dict) else {}), **(mark or {})}
    with deps.pool.connection() as conn:
        # Delete first: the row lock makes a concurrent requeue of the same letter wait, then find nothing.
        if not deps.dead_letters.delete(row.id, tenant_id=row.tenant_id, conn=conn):
            raise DeadLetterNotFound(f"no dead letter {row.id}")
        new = deps.ops.enqueue_if_kb_active(
            tenant_id=row.tenant_id,
            task_type=INGEST,
            scope=SCOPE_KB,
            scope_id=row.scope_id,
            op=kind,
            dedup_key=knowledge_id,
            payload=payload,
            conn=conn,
        )
        if new is None:
            conn.rollback()
            raise RequeueRefused(f"knowledge base {row.scope_id} of tenant {row.tenant_id} is unknown or deleted")
        if kind == OP_INGEST:
            deps.docs.set_status([knowledge_id], DocStatus.pending, conn=conn)
    deps.triggers(row.tenant_id, row.scope_id).send(Actor.ingest)
    log.info(
        "dead_letter.requeued",
        dead_letter_id=row.id,
        task_type=row.task_type,
        knowledge_base_id=row.scope_id,
        knowledge_id=knowledge_id,
        op_id=new.id,
    )
    return REINSERTED


def _resend_message(row: DeadLetter, *, dead_letters: TaskDeadLetterRepository) -> str:
    stored = row.payload
    actor_name = stored.get("actor_name")
    if not isinstance(actor_name, str) or not actor_name:
        raise RequeueRefused(f"dead letter {row.id} holds no Dramatiq message (no actor_name)")
    try:
        actor = get_actor(actor_name)
    except ActorNotFound:
        raise RequeueRefused(f"actor {actor_name!r} of dead letter {row.id} is not declared") from None
    options: dict[str, Any] = {k: v for k, v in (stored.get("options") or {}).items() if k not in DELIVERY_OPTIONS}
    # A new message (fresh id and timestamp, so an age limit counts from now) with the same call.
    message = dramatiq.Message(
        queue_name=actor.queue_name,
        actor_name=actor_name,
        args=tuple(stored.get("args") or ()),
        kwargs=dict(stored.get("kwargs") or {}),
        options=options,
    )
    actor.broker.enqueue(message)
    # Only after the send: a failed send keeps the row. Losing a race here at worst sends twice,
    # which idempotent actors absorb.
    dead_letters.delete(row.id, tenant_id=row.tenant_id)
    log.info(
        "dead_letter.requeued",
        dead_letter_id=row.id,
        task_type=row.task_type,
        actor=actor_name,
        message_id=message.message_id,
    )
    return RESENT
