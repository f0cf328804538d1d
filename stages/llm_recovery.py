"""After a model outage: the documents it dead-lettered are sent again by the system.

A document whose op ran out of tries because the model endpoint did not answer (``LLMUnavailable``:
connection refused, 5xx, timeouts, 429 through every transport retry) says nothing about the
document; once the endpoint answers again it would pass. Such a dead letter used to wait for a
manual ``kbwiki dead-letters requeue``. Now:

- when the map stage writes one, :func:`note_outage` marks the KB as in an outage: a Redis key
  ``<prefix>:llm-outage:<kb>`` holding the outage's id, set once (``SET NX``), kept
  ``OUTAGE_KEPT_S`` at most;
- when a document of the KB is then mapped by a model call (the endpoint answers again),
  :func:`requeue_after_outage` requeues at most ``REQUEUE_MAX`` of those letters, oldest first,
  one pass per KB at a time (a ``PASS_LOCK_S`` lock). Each requeued op carries the outage's id
  (``auto_requeued``), so a document that fails again in the same outage is not sent a second
  time; a pass that found fewer than ``REQUEUE_MAX`` ends the outage (the key is deleted), and the
  next mapped document sends the next ones otherwise.

Only letters of ``wiki:ingest`` ops whose error starts ``LLMUnavailable:`` are requeued: a refused
configuration pauses the KB instead (``stages.llm_gate``), and an invalid answer or a content
filter's refusal would fail again. Redis unreachable: nothing is requeued (logged), a manual
requeue still works. The one Redis read per mapped document is the cost outside an outage.
"""

from __future__ import annotations

import uuid

import redis as redis_lib
import structlog

from repos.coordination import mark_once, marker, unmark
from stages.deps import Deps
from stages.requeue import requeue_dead_letter
from wiki.errors import DeadLetterNotFound, LLMUnavailable, RequeueRefused
from wiki.lanes import INGEST, SCOPE_KB
from wiki.settings import Settings

log = structlog.get_logger(__name__)

#: Dead letters one pass requeues at most: an outage of a large KB must not send thousands of
#: documents back at an endpoint that has just come back.
REQUEUE_MAX = 20
#: How long an outage's mark is kept without a recovery (a KB that never maps again forgets it).
OUTAGE_KEPT_S = 7 * 86_400
#: How long one KB's requeue pass may hold its lock (a pass takes a transaction per letter).
PASS_LOCK_S = 30
#: The error class that marks a transient model failure in ``last_error`` (``wiki.errors.error_text``).
TRANSIENT_HEAD = f"{LLMUnavailable.__name__}:"


def _key(settings: Settings, kb_id: str) -> str:
    return f"{settings.key_prefix}:llm-outage:{kb_id}"


def is_transient(exc: BaseException) -> bool:
    """Whether a failure is the endpoint's, not the document's: ``LLMUnavailable``."""
    return isinstance(exc, LLMUnavailable)


def note_outage(kb_id: str, *, redis: redis_lib.Redis, settings: Settings) -> None:
    """Mark the KB as in a model outage (a document was dead-lettered for one); never raises."""
    try:
        mark_once(redis, _key(settings, kb_id), OUTAGE_KEPT_S * 1000, value=uuid.uuid4().hex)
    except redis_lib.RedisError as exc:
        log.warning("llm.outage_not_noted", knowledge_base_id=kb_id, error=repr(exc))


def requeue_after_outage(tenant_id: int, kb_id: str, deps: Deps) -> int:
    """After a document of the KB was mapped by a model call: when the KB is in an outage, requeue
    up to ``REQUEUE_MAX`` of its dead letters for transient model errors (module docstring);
    returns how many. Never raises for Redis; database errors propagate."""
    key = _key(deps.settings, kb_id)
    try:
        outage_id = marker(deps.redis, key)
        if outage_id is None or not mark_once(deps.redis, f"{key}:pass", PASS_LOCK_S * 1000):
            return 0
    except redis_lib.RedisError as exc:
        log.warning("llm.outage_unknown", knowledge_base_id=kb_id, error=repr(exc))
        return 0
    try:
        letters = deps.dead_letters.of_error(tenant_id, INGEST, SCOPE_KB, kb_id, TRANSIENT_HEAD, outage_id, REQUEUE_MAX)
        requeued = 0
        for letter in letters:
            try:
                requeue_dead_letter(letter.id, deps, tenant_id=tenant_id, mark={"auto_requeued": outage_id})
                requeued += 1
            except (DeadLetterNotFound, RequeueRefused):  # requeued by hand meanwhile, or its KB is gone
                continue
        if len(letters) < REQUEUE_MAX:
            unmark(deps.redis, key)  # every letter of the outage is back: the next one is a new outage
        log.info("llm.outage_requeued", knowledge_base_id=kb_id, outage=outage_id, requeued=requeued)
        return requeued
    finally:
        try:
            unmark(deps.redis, f"{key}:pass")
        except redis_lib.RedisError:
            pass  # the lock expires after PASS_LOCK_S
