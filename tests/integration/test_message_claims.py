"""A claim names its message; a worker's heartbeat gives back its claims whose message the Redis
broker no longer holds (``stages.message_claims``), and keeps those of messages queued or in flight.

Seen in fault runs: after Redis was away for 180 s, claims whose map messages were never sent (or
were lost) held every map slot of a KB while their worker kept beating; after the database disk
filled, a failed reduce batch could not release its 11 claims and they waited the stale-claim time
(300 s). Here claims only go stale after an hour, so only the message check can free them.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import replace

import dramatiq
import pytest
from dramatiq.brokers.redis import RedisBroker

from repos.broker_messages import present, tag, tag_of
from stages.claims import released_on_failure
from stages.deps import build_deps
from stages.ingest import pump_ingest_lane
from stages.message_claims import OrphanedClaims
from tests.conftest import REDIS_URL
from tests.support.broker import drain
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import INGEST, SCOPE_KB

HOUR = 3600
GRACE_S = 3.0


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture()
def deps(settings, clean_db):
    return build_deps(settings.model_copy(update={"stale_claim_s": HOUR}), pool=clean_db, extractor=OfflineExtractor())


@pytest.fixture()
def own_broker(settings, redis_client):
    """A RedisBroker on the test's own namespace (its keys are the test's, deleted afterwards)."""
    broker = RedisBroker(url=REDIS_URL, namespace=settings.redis_namespace)
    broker.declare_queue("wiki_map")
    return broker


def _lane(deps, n: int):
    kb = deps.kbs.get_or_create(1, f"msg-{uuid.uuid4().hex[:6]}")
    for i in range(n):
        deps.ops.enqueue(
            tenant_id=1, task_type=INGEST, scope=SCOPE_KB, scope_id=kb.id, op="ingest", dedup_key=f"doc-{i}"
        )
    return kb


def _claim(deps, kb, owner: str, msg: str | None):
    return deps.ops.claim(INGEST, SCOPE_KB, kb.id, 1, HOUR, owner=owner, msg=msg)[0]


def _message(broker) -> dramatiq.Message:
    message = dramatiq.Message(queue_name="wiki_map", actor_name="wiki_map", args=(), kwargs={}, options={})
    return broker.enqueue(message)


def test_claims_of_messages_gone_from_redis_come_back_and_the_others_stay(deps, own_broker):
    kb = _lane(deps, 6)
    deps.workers.beat("w1")
    queued = _message(own_broker)
    fetched, acked = _message(own_broker), _message(own_broker)
    consumer = own_broker.consume("wiki_map", prefetch=3, timeout=100)
    got = [next(consumer) for _ in range(3)]  # queued is fetched too, then put back below
    by_id = {m.options["redis_message_id"]: m for m in got}
    consumer.ack(by_id[acked.options["redis_message_id"]])
    consumer.requeue([by_id[queued.options["redis_message_id"]]])

    waits = _claim(deps, kb, "w1", tag_of(queued))  # its message waits in the queue
    running = _claim(deps, kb, "w1", tag_of(fetched))  # its message is fetched, being processed
    done = _claim(deps, kb, "w1", tag_of(acked))  # its message was acked: the claim outlived it
    unsent = _claim(deps, kb, "w1", tag("wiki_map", "never-sent"))  # the send failed
    untagged = _claim(deps, kb, "w1", None)  # made outside a message: goes stale by age only
    others = _claim(deps, kb, "w2", tag("wiki_map", "never-sent"))  # w2's own heartbeat checks it
    settings = deps.settings
    assert present(deps.redis, settings.redis_namespace, [tag_of(queued), tag_of(fetched), tag_of(acked)]) == {
        tag_of(queued),
        tag_of(fetched),
    }

    clock = Clock()
    orphans = OrphanedClaims(grace_s=GRACE_S, clock=clock)
    assert orphans.check("w1", deps) == 0  # seen missing once: within the grace
    clock.now = GRACE_S
    assert orphans.check("w1", deps) == 2
    claimed = {op.id: op.claimed_by for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id)}
    assert claimed == {
        waits.id: "w1",
        running.id: "w1",
        done.id: None,
        unsent.id: None,
        untagged.id: "w1",
        others.id: "w2",
    }
    clock.now = 10 * GRACE_S
    assert orphans.check("w1", deps) == 0  # messages still held keep their claims


def test_a_message_found_again_starts_its_grace_over(deps, own_broker):
    kb = _lane(deps, 1)
    deps.workers.beat("w1")
    message = _message(own_broker)
    _claim(deps, kb, "w1", tag_of(message))
    data = f"{deps.settings.redis_namespace}:wiki_map.msgs"
    rid = message.options["redis_message_id"]
    clock = Clock()
    orphans = OrphanedClaims(grace_s=GRACE_S, clock=clock)
    encoded = deps.redis.hget(data, rid)
    deps.redis.hdel(data, rid)  # missing at one check (a moment's view)...
    assert orphans.check("w1", deps) == 0
    deps.redis.hset(data, rid, encoded)  # ...there again at the next
    clock.now = GRACE_S
    assert orphans.check("w1", deps) == 0
    deps.redis.hdel(data, rid)
    clock.now = 2 * GRACE_S
    assert orphans.check("w1", deps) == 0  # missing again: a new grace
    assert deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, HOUR) == 1
    clock.now = 3 * GRACE_S
    assert orphans.check("w1", deps) == 1


def test_a_pump_ties_each_claim_to_the_map_message_it_sent(deps, broker):
    """The pump's claims wait on the wiki_map messages it sent: kept while they are queued, given
    back once they are consumed without the claims being handled (acked, lost)."""
    session = deps.settings.model_copy(update={"redis_namespace": os.environ["KBWIKI_REDIS_NAMESPACE"]})
    deps = build_deps(session, pool=deps.pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"pump-{uuid.uuid4().hex[:6]}")
    for i in range(2):
        doc, _ = deps.docs.upsert(kb, title=f"Widgets {i}", source_uri=f"w{i}.md", content="Widgets. " * 40 + str(i))
        deps.ops.enqueue(tenant_id=1, task_type=INGEST, scope=SCOPE_KB, scope_id=kb.id, op="ingest", dedup_key=doc.id)
    drain(broker, "wiki_map")
    assert pump_ingest_lane(1, kb.id, replace(deps, worker_id="w1")) == 2
    claims = deps.ops.peek(INGEST, SCOPE_KB, kb.id)
    assert all(op.claimed_by == "w1" and op.claimed_msg.startswith("wiki_map/") for op in claims)
    clock = Clock()
    orphans = OrphanedClaims(grace_s=GRACE_S, clock=clock)
    orphans.check("w1", deps)
    clock.now = GRACE_S
    assert orphans.check("w1", deps) == 0  # the map messages wait in their queue

    sent = drain(broker, "wiki_map")  # consumed and acked, the claims untouched: lost maps
    assert {tag_of(m) for m in sent} == {op.claimed_msg for op in claims}
    assert orphans.check("w1", deps) == 0
    clock.now = 2 * GRACE_S
    assert orphans.check("w1", deps) == 2
    assert deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, HOUR) == 0


class _DatabaseAway:
    """The repository as a worker sees it while PostgreSQL is down: every release fails."""

    def __init__(self, ops) -> None:
        self.ops = ops

    def release(self, *args, **kwargs):
        raise ConnectionError("PostgreSQL is away")


def test_claims_a_failed_batch_could_not_release_come_back_once_its_message_is_gone(deps, own_broker):
    kb = _lane(deps, 3)
    deps.workers.beat("w1")
    message = _message(own_broker)
    consumer = own_broker.consume("wiki_map", prefetch=1, timeout=100)
    running = next(consumer)
    claimed = deps.ops.claim(INGEST, SCOPE_KB, kb.id, 3, HOUR, owner="w1", msg=tag_of(running))
    with (
        pytest.raises(RuntimeError),
        released_on_failure(claimed, replace(deps, ops=_DatabaseAway(deps.ops), worker_id="w1")),
    ):
        raise RuntimeError("the batch failed")
    clock = Clock()
    orphans = OrphanedClaims(grace_s=GRACE_S, clock=clock)
    clock.now = GRACE_S
    assert orphans.check("w1", deps) == 0  # the message is still being processed
    consumer.ack(running)  # Dramatiq acks (or retries as a new enqueue) the failed message
    orphans.check("w1", deps)
    clock.now = 2 * GRACE_S
    assert orphans.check("w1", deps) == len(claimed) == 3
    assert message.message_id == running.message_id
