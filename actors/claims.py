"""Claims are given back when the work on them fails, so a crash-free failure never waits for
the stale-claim timeout (a PoolTimeout in reduce once left a batch's rows stuck for 5 minutes)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import structlog

from actors.deps import Deps
from repos.task_queue import PendingOp

log = structlog.get_logger(__name__)


@contextlib.contextmanager
def released_on_failure(deps: Deps, claimed: Sequence[PendingOp]) -> Iterator[None]:
    """Run the block; if it raises, release the claimed ops (best effort) and re-raise.

    Ops the block already deleted or moved are unaffected (release only clears claimed_at of
    rows that still exist).
    """
    try:
        yield
    except BaseException:
        try:
            deps.ops.release([op.id for op in claimed])
        except Exception as exc:  # the sweeper reclaims them after the stale threshold anyway
            log.warning("claims.release_failed", error=repr(exc), ops=len(claimed))
        raise
