"""Two reduce batches of one KB forced to overlap: the Redis lock is removed mid-batch, as a
FLUSHALL or a TTL passing during a pause would, and a second batch starts while the first runs.

Seen in a fault run: the second batch took the lock 67 ms before the first finished, and each of
the 10 pages both documents shared cited only one of them (the later commit overwrote the source
refs of a page both created). PostgreSQL now fences the writes: the overtaken batch writes
nothing, its document is reduced by the next batch, and every shared page cites both.
"""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.e2e.conftest import wait_until
from tests.support.lanes import mapped_document
from wiki.lanes import REDUCE, SCOPE_KB
from wiki.models import ExtractedItem, Extraction

pytestmark = pytest.mark.e2e

SHARED = ["Apache", "Kafka", "Postgres", "Linux", "Python", "Django", "Nginx", "Docker", "Ansible", "Grafana"]


def _mapped(deps, kb, title: str) -> str:
    """A document whose extraction names every SHARED thing, queued on the reduce lane."""
    items = [
        ExtractedItem(name=n, kind="entity", description=f"{n} in {title}.", evidence=[f"{n} in {title}."])
        for n in SHARED
    ]
    return mapped_document(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title}.", items=items))


def _waiting_on_locks(pool) -> int:
    """Sessions of the test database waiting for a lock."""
    with pool.connection() as conn:
        return conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()["n"]


def _batch(kb, errors: list) -> threading.Thread:
    from actors.reduce import wiki_reduce

    def run():
        try:
            wiki_reduce.fn(tenant_id=kb.tenant_id, knowledge_base_id=kb.id)
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_overlapping_batches_keep_the_sources_of_both(deps, actors_broker):
    from repos.coordination import active_key

    kb = deps.kbs.get_or_create(1, f"fence-{uuid.uuid4().hex[:6]}")
    lock_key = active_key(deps.settings.key_prefix, kb.id)
    first = _mapped(deps, kb, "First")
    errors: list = []
    # Hold the KB row: a batch stops at the start of its write transaction (which reads it FOR SHARE)
    # after it has claimed and planned, so the two batches are forced to overlap there (NO KEY:
    # storing a document of the KB, a foreign-key check, goes on).
    with deps.pool.connection() as holder:
        holder.execute("SELECT 1 FROM knowledge_bases WHERE id = %s FOR NO KEY UPDATE", (kb.id,))
        batch_a = _batch(kb, errors)
        wait_until(lambda: _waiting_on_locks(deps.pool) >= 1, 30, "batch A planned and waiting to write")
        assert deps.redis.get(lock_key) is not None  # A holds the Redis lock...
        deps.redis.delete(lock_key)  # ...and loses it mid-batch
        second = _mapped(deps, kb, "Second")
        batch_b = _batch(kb, errors)
        wait_until(lambda: _waiting_on_locks(deps.pool) >= 2, 30, "batch B planned and waiting to write")
        holder.rollback()  # both write at once now
    batch_a.join(60)
    batch_b.join(60)
    assert not errors and not batch_a.is_alive() and not batch_b.is_alive()

    # B (the later batch) wrote; A, overtaken, wrote nothing and left its document for the next batch
    assert deps.docs.get(second).status == "done"
    assert deps.docs.get(first).status != "done"
    assert [op.dedup_key for op in deps.ops.peek(REDUCE, SCOPE_KB, kb.id)] == [first]
    assert deps.ops.claimed_count(REDUCE, SCOPE_KB, kb.id, 3600) == 0  # released, not left to go stale

    from actors.reduce import wiki_reduce

    wiki_reduce.fn(tenant_id=kb.tenant_id, knowledge_base_id=kb.id)
    assert deps.docs.get(first).status == "done"
    pages = [p for p in deps.pages.iter_pages(kb.id) if p.page_type == "entity"]
    assert len(pages) == len(SHARED)
    for page in pages:
        assert {r.knowledge_id for r in page.source_refs} == {first, second}, page.slug
        assert set(page.facts) == {first, second}, page.slug


def test_a_batch_that_lost_its_lock_writes_nothing(deps, actors_broker):
    from repos.coordination import ActiveBatchLock, active_key
    from stages.reduce import run_reduce_batch
    from wiki.errors import LockLost

    kb = deps.kbs.get_or_create(1, f"lost-{uuid.uuid4().hex[:6]}")
    kid = _mapped(deps, kb, "Lonely")
    lock = ActiveBatchLock(deps.redis, active_key(deps.settings.key_prefix, kb.id), ttl_s=3)
    assert lock.acquire()
    try:
        deps.redis.delete(lock.key)  # a FLUSHALL
        wait_until(lambda: lock.lost, 10, "the renewer to notice the lock is gone")
        with pytest.raises(LockLost):
            run_reduce_batch(kb.tenant_id, kb.id, deps, lock=lock)
    finally:
        lock.release()
    assert deps.pages.counts_by_type(kb.id) == {}
    assert deps.docs.get(kid).status != "done"
    assert deps.ops.claimed_count(REDUCE, SCOPE_KB, kb.id, 3600) == 0
