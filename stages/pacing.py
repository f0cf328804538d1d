"""When cross-linking waits: while documents of a KB are still coming in, relinking a page after
every batch is mostly wasted, because a later batch's names send it back to be relinked anyway.

Cross-link and back-link runs of a KB wait while its ingest or reduce lane has rows, up to
``DEFER_S`` after the oldest op of their own lane was queued; then the back-link run merges what
waited on the finalize lane with the pages mentioning the new names, so each page is relinked once
per round. On the demo, relinking after every batch and again for back-links cost 10,311 page
relinks (6,400 without back-links); one round at the end costs about one per page (3,932).
"""

from __future__ import annotations

from datetime import UTC, datetime

from repos.pending_ops import TaskPendingOpsRepository
from wiki.lanes import INGEST, REDUCE, SCOPE_KB

#: Seconds a run waits for the KB's ingest and reduce lanes to empty before it goes ahead anyway:
#: a KB that never stops receiving documents still gets linked every few minutes, in rounds
#: large enough that a long ingest (linux-doc's is about 7 minutes) pays for one or two.
DEFER_S = 300.0


def ingest_running(kb_id: str, lane: str, *, ops: TaskPendingOpsRepository, now: datetime | None = None) -> bool:
    """Whether a run of ``lane`` should wait: the KB's ingest or reduce lane has rows, and the
    oldest op of ``lane`` was queued less than ``DEFER_S`` ago (False when ``lane`` is empty)."""
    oldest = ops.peek(lane, SCOPE_KB, kb_id, 1)
    if not oldest:
        return False
    if ((now or datetime.now(UTC)) - oldest[0].enqueued_at).total_seconds() >= DEFER_S:
        return False
    return bool(ops.pending_count(INGEST, SCOPE_KB, kb_id) or ops.pending_count(REDUCE, SCOPE_KB, kb_id))
