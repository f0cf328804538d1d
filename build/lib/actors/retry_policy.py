"""Retry options of the actors whose messages carry data: they must outlast an outage of hours.

A trigger (``wiki_ingest``, ``wiki_reduce``, ...) carries no work: if it fails for good, the
sweeper sends another for every lane with rows. A ``wiki_submit`` message is the document itself,
and ``wiki_retract`` / ``wiki_delete_kb`` are a producer's delete: until they have been applied,
they exist nowhere else. They retry with Dramatiq's exponential backoff (``Retries``: ``min_backoff
* 2**retries`` with jitter, capped at ``max_backoff``, where the jitter puts a capped wait
between 50 % and 100 % of the cap) for at least ``settings.data_retry_s``; a message that still
fails goes to the dead letters (the Redis spool when PostgreSQL is what is down).

With the defaults (1 s, 5 min cap, 24 h) that is 583 retries: 8 doubling ones (4 min), then one
every 2.5 to 5 minutes; the last one comes 24 to 48 hours after the first failure (35-37 h in
1,000 draws of Dramatiq's ``compute_backoff``). No age limit
applies (Dramatiq's ``AgeLimit`` has none by default), and a message waiting for its next try sits
in the queue's delay queue in Redis (``<namespace>:<queue>.DQ``), which has no TTL.
"""

from __future__ import annotations

from wiki.settings import Settings


def guaranteed_wait_ms(retries: int, min_backoff_ms: int, max_backoff_ms: int) -> int:
    """The least total backoff Dramatiq's ``Retries`` waits over ``retries`` retries (ms).

    Retry n waits ``min_backoff * 2**n * u`` (u in [1, 2]); a wait over the cap becomes
    ``cap * u'`` (u' in [0.5, 1]); so retry n waits at least ``min(min_backoff * 2**n, cap / 2)``.
    """
    half_cap = max_backoff_ms / 2
    return int(sum(min(min_backoff_ms * 2 ** min(n, 32), half_cap) for n in range(retries)))


def data_retries(settings: Settings) -> dict[str, int]:
    """``max_retries``, ``min_backoff`` and ``max_backoff`` (ms) for a data-carrying actor: the
    fewest retries whose guaranteed wait (``guaranteed_wait_ms``) spans ``data_retry_s``."""
    low, cap = (
        settings.data_retry_min_backoff_ms,
        max(settings.data_retry_max_backoff_ms, settings.data_retry_min_backoff_ms),
    )
    target = settings.data_retry_s * 1000
    retries = 0
    while guaranteed_wait_ms(retries, low, cap) < target:
        retries += 1
    return {"max_retries": retries, "min_backoff": low, "max_backoff": cap}
