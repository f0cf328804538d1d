"""A live worker whose consumers send no command (prefetch used up, every thread waiting) keeps
its Dramatiq heartbeat from the liveness thread, so another process's maintenance does not take it
for dead and requeue the messages it is still working on (they ran twice: duplicate dead letters)."""

from __future__ import annotations

import time
import uuid

import redis
from dramatiq.brokers.redis import RedisBroker

from actors.liveness import broker_heartbeat
from tests.conftest import REDIS_URL

QUEUE = "wiki"
TIMEOUT_MS = 10_000


def _broker(namespace: str) -> RedisBroker:
    # every command runs maintenance, as kbwiki's broker does (actors.broker.REQUEUE_MAINTENANCE_CHANCE)
    broker = RedisBroker(url=REDIS_URL, namespace=namespace, heartbeat_timeout=TIMEOUT_MS, maintenance_chance=1_000_000)
    broker.declare_queue(QUEUE)
    return broker


def _fetch_one(broker: RedisBroker) -> str:
    """Fetch one message as a consumer does (into this broker's ack set); returns its Redis id."""
    [data] = broker.do_fetch(QUEUE, 1)
    from dramatiq.message import Message

    return Message.decode(data).options["redis_message_id"]


def _enqueue(broker: RedisBroker, n: int) -> None:
    from dramatiq.message import Message

    broker.enqueue(Message(queue_name=QUEUE, actor_name="wiki_submit", args=(), kwargs={"n": n}, options={}))


def test_a_busy_workers_heartbeat_keeps_its_messages_from_being_requeued():
    namespace = f"kbwiki-test-hb-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL)
    busy, other = _broker(namespace), _broker(namespace)
    queue_key, heartbeats = f"{namespace}:{QUEUE}", f"{namespace}:__heartbeats__"
    try:
        # control: a worker silent for longer than the timeout has its fetched message requeued
        _enqueue(other, 1)
        first = _fetch_one(busy)
        client.zadd(heartbeats, {busy.broker_id: int(time.time() * 1000) - 2 * TIMEOUT_MS})
        _enqueue(other, 2)  # the maintenance of this command sees the busy worker as dead
        assert first.encode() in client.lrange(queue_key, 0, -1)

        # the liveness thread's beat keeps a worker that sends no command alive
        client.delete(queue_key)
        _enqueue(other, 3)
        second = _fetch_one(busy)
        client.zadd(heartbeats, {busy.broker_id: int(time.time() * 1000) - 2 * TIMEOUT_MS})
        broker_heartbeat(busy)
        _enqueue(other, 4)
        assert second.encode() not in client.lrange(queue_key, 0, -1)
        assert second.encode() in client.smembers(f"{namespace}:__acks__.{busy.broker_id}.{QUEUE}")
    finally:
        for key in client.scan_iter(f"{namespace}*"):
            client.delete(key)
        busy.close()
        other.close()
