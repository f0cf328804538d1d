"""Where a Dramatiq message is, read from the Redis broker's own keys (``dramatiq/brokers/redis/dispatch.lua``).

A message is named by a tag ``"<queue>/<redis message id>"``: the queue it was enqueued on (a delay
queue ends in ``.DQ``) and the id the broker gave that enqueue (``options["redis_message_id"]``, new
on every enqueue, retries included). The broker keeps the message's data in the hash
``<namespace>:<queue>.msgs`` from its enqueue until its ack or nack, whether it waits in the queue's
list, sits in a worker's ack set (fetched, being processed) or in a dead worker's ack set (moved
back to the queue by the broker's maintenance). A tag whose hash entry is gone names a message that
will never run again: acked, dead-lettered, or never enqueued (its send failed).
"""

from __future__ import annotations

from collections.abc import Iterable

import redis as redis_lib

#: Separates the queue from the Redis message id in a tag (never part of a queue name kbwiki declares).
SEP = "/"


def tag(queue_name: str, redis_message_id: str) -> str:
    """The tag of one enqueue of a message: ``"<queue>/<redis message id>"``."""
    return f"{queue_name}{SEP}{redis_message_id}"


def tag_of(message: object) -> str | None:
    """The tag of a Dramatiq message (or message proxy) the Redis broker enqueued; None for a
    message it did not (no ``redis_message_id``: built but never sent, or another broker's)."""
    rid = getattr(message, "options", {}).get("redis_message_id")
    return tag(message.queue_name, rid) if rid else None


def present(client: redis_lib.Redis, namespace: str, tags: Iterable[str]) -> set[str]:
    """The ``tags`` whose message the broker (key namespace ``namespace``) still holds: queued,
    delayed or fetched and not yet acked. One pipelined round trip of HEXISTS. A malformed tag is
    never present. Raises ``redis.RedisError`` when Redis does not answer."""
    tags = sorted(set(tags))
    if not tags:
        return set()
    pipe = client.pipeline(transaction=False)
    asked = []
    for t in tags:
        queue, sep, rid = t.rpartition(SEP)
        if not (queue and sep and rid):
            continue
        pipe.hexists(f"{namespace}:{queue}.msgs", rid)
        asked.append(t)
    return {t for t, found in zip(asked, pipe.execute(), strict=True) if found}
