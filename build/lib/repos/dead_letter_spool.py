"""Dead letters that could not be written to PostgreSQL, kept in Redis until it answers again.

The dead-letter middleware writes a ``task_dead_letters`` row for every message Dramatiq fails for
good. When that insert fails (PostgreSQL down: the very outage that made a ``wiki_submit`` use up
its retries), the row it would have written is put here instead: one field of the Redis hash
``<key_prefix>:dead-letters:spool`` per message, keyed by message id, holding the row as JSON.
Workers move the spool into the table every ``sweep_interval_s`` once PostgreSQL answers
(``drain_into``), and so does every ``kbwiki dead-letters`` command before it reads, so an
operator lists and requeues spooled letters like any other.

What is kept where: the spool has no TTL (Dramatiq's own dead set, ``<namespace>:<queue>.XQ``,
drops messages after 7 days); it lives in Redis only while PostgreSQL is unreachable, so only a
Redis flush during such an outage loses it, as it loses the messages still retrying in
Dramatiq's delay queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import redis

from repos.dead_letters import TaskDeadLetterRepository
from wiki.errors import RedisUnreachable

#: The fields of one spooled dead letter: ``TaskDeadLetterRepository.insert``'s keywords.
FIELDS = (
    "task_type",
    "tenant_id",
    "scope",
    "scope_id",
    "related_id",
    "payload",
    "last_error",
    "fail_count",
    "failed_at",
)


@contextmanager
def _reached() -> Iterator[None]:
    """Redis's connection failures as ``RedisUnreachable`` (the driver's error as ``__cause__``)."""
    try:
        yield
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        raise RedisUnreachable(f"Redis: {exc}") from exc


def spool_key(key_prefix: str) -> str:
    return f"{key_prefix}:dead-letters:spool"


class DeadLetterSpool:
    """The Redis hash of dead letters waiting for PostgreSQL.

    Parameters: ``client`` a Redis client; ``key_prefix`` kbwiki's own key prefix
    (``settings.key_prefix``). Methods raise ``wiki.errors.RedisUnreachable`` when Redis does not
    answer (``drain_into`` also what the dead-letter repository raises).
    """

    def __init__(self, client: redis.Redis, key_prefix: str) -> None:
        self.client = client
        self.key = spool_key(key_prefix)

    def put(self, message_id: str, letter: dict[str, Any]) -> None:
        """Keep one dead letter (``FIELDS`` as keywords; ``failed_at`` defaults to now) under its
        message id; a second put of the same message replaces the first."""
        row = {k: letter[k] for k in FIELDS if k in letter}
        row.setdefault("failed_at", datetime.now(UTC).isoformat())
        with _reached():
            self.client.hset(self.key, message_id, json.dumps(row, default=repr))

    def letters(self) -> dict[str, dict[str, Any]]:
        """Every spooled dead letter by message id (bounded by what failed during one outage)."""
        with _reached():
            raw = self.client.hgetall(self.key)
        return {k.decode(): json.loads(v) for k, v in raw.items()}

    def count(self, *, tenant_id: int | None, scope_id: str | None = None) -> int:
        """Spooled dead letters of ``tenant_id`` (None: every tenant), of one scope id when given."""
        return sum(
            1
            for row in self.letters().values()
            if (tenant_id is None or row.get("tenant_id") == tenant_id)
            and (scope_id is None or row.get("scope_id") == scope_id)
        )

    def drain_into(self, dead_letters: TaskDeadLetterRepository, *, tenant_id: int | None) -> int:
        """Write every spooled letter of ``tenant_id`` (None: every tenant's) to ``task_dead_letters``
        and drop it from the spool; returns how many moved. Stops at the first database error
        (raised; the rest stay spooled).

        A letter is removed only after its row is committed, so a crash in between can leave it
        twice in the table (requeueing both sends the message twice, which idempotent actors absorb),
        never lose it.
        """
        moved = 0
        for message_id, row in self.letters().items():
            if tenant_id is not None and row.get("tenant_id") != tenant_id:
                continue
            failed_at = row.get("failed_at")
            dead_letters.insert(**{**row, "failed_at": datetime.fromisoformat(failed_at) if failed_at else None})
            with _reached():
                self.client.hdel(self.key, message_id)
            moved += 1
        return moved
