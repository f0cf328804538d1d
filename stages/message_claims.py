"""Claims tied to messages: a worker gives back its claims whose message is gone from Redis
(``actors.liveness.Liveness.beat`` runs :meth:`OrphanedClaims.check` on every heartbeat).

A claim records the message it is for (``task_pending_ops.claimed_msg``, a tag of
``repos.broker_messages``): the message that claimed it, or the message a pump sent for it
(``stages.ingest``), or the message that adopted it (``stages.map``). While that message is queued,
delayed or being processed, the Redis broker holds its data; once it is acked or dead-lettered, its
claims should be gone too (its handler deletes, moves or releases them). A claim that outlives its
message is orphaned: the send failed (Redis away), or the handler's release failed (PostgreSQL away,
``stages.claims.released_on_failure``), or the message was lost. Only ``stale_claim_s`` (300 s) freed
those before, while their worker, alive, kept heartbeating; now the worker itself gives them back
within about ``GRACE_S`` + two heartbeats once it can read Redis and PostgreSQL again.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import structlog

from repos.broker_messages import present
from stages.deps import Deps
from stages.recovery import sweep

log = structlog.get_logger(__name__)

#: Seconds a claim's message must be seen missing (on two checks at least this far apart) before
#: the claim is given back. Nothing legitimate makes a claimed message vanish for a moment (the data
#: stays in Redis until the ack, which follows the handler's own release), so this only has to
#: outlast one heartbeat: with the default 2 s beat a claim comes back 3-6 s after its message.
GRACE_S = 3.0


class OrphanedClaims:
    """Gives back the claims one worker holds whose message the broker no longer holds.

    Keeps, between checks, the tags seen missing and since when (monotonic seconds); a tag found
    again (or whose claims went) is forgotten. ``clock`` is injectable for tests.
    """

    def __init__(self, grace_s: float = GRACE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.grace_s = grace_s
        self._clock = clock
        self._missing_since: dict[str, float] = {}

    def check(
        self,
        worker_id: str,
        deps: Deps,
    ) -> int:
        """Release the claims of ``worker_id`` whose message has been missing from Redis (namespace
        ``settings.redis_namespace``) for ``grace_s``, and re-trigger the lanes when any came back;
        returns the claims released. Raises what PostgreSQL or Redis raise (nothing is released
        then; the next beat tries again)."""
        tags = deps.ops.message_tags(worker_id)
        missing = tags - present(deps.redis, deps.settings.redis_namespace, tags)
        now = self._clock()
        self._missing_since = {t: self._missing_since.get(t, now) for t in missing}
        due = sorted(t for t, since in self._missing_since.items() if now - since >= self.grace_s)
        if not due:
            return 0
        released = deps.ops.release_messages(worker_id, due)
        for t in due:
            del self._missing_since[t]
        if released:
            triggers = sweep(deps, debounce=False)
            log.warning("claims.orphaned_released", claims=released, messages=len(due), triggers=triggers)
        return released
