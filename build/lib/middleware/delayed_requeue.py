"""Put back on their delay queue the delayed messages a worker's consumer dropped on a Redis
connection error (Dramatiq 2.2's ``ConsumerThread.run``), in a daemon thread beside the worker's.

Why they strand: a delay queue's consumer (``<queue>.DQ``) fetches a delayed message as soon as it
is sent (the Lua ``fetch`` moves its id into the worker's ack set ``<ns>:__acks__.<broker id>.<queue>.DQ``)
and keeps it in memory until its eta, when it enqueues a copy on the real queue and acks the
original. On a connection error the consumer thread replaces that in-memory queue with an empty one
(``self.delay_queue = PriorityQueue()``), without requeueing what it held. The ids stay in the ack
set of a worker that is alive and keeps heartbeating, so the broker's maintenance (which requeues
only dead workers' ack sets) never gives them back: a debounced trigger, a backoff trigger or a
retry lost until the process restarts (reproduced: 6 of 6 delayed messages after 8 s without Redis).
Messages of the ordinary queues are not affected: they sit in the shared work queue, which survives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import dramatiq
import structlog
from dramatiq.common import q_name
from dramatiq.message import Message

log = structlog.get_logger(__name__)

#: Seconds a fetched delayed message must be missing from its consumer's memory (on two passes at
#: least this far apart) before it is requeued: a message between its fetch and the consumer's
#: delay queue, or between its eta and its ack, is out of memory for milliseconds.
GRACE_S = 3.0


class DelayedRequeue(dramatiq.Middleware):
    """Every ``interval_s`` seconds, requeue this worker's fetched delayed messages that none of its
    delay-queue consumers holds any more (seen so on two passes ``grace_s`` apart).

    Requeued with the broker's own ``requeue`` command (what a clean shutdown does): off this
    worker's ack set and back onto the delay queue, whose consumer fetches and delays it again.
    Redis errors are logged as ``delayed_requeue.failed`` once per outage; the next pass runs anyway.
    """

    def __init__(
        self, interval_s: float, grace_s: float = GRACE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.interval_s = interval_s
        self.grace_s = grace_s
        self._clock = clock
        self._missing_since: dict[tuple[str, str], float] = {}
        self._worker: dramatiq.Worker | None = None
        self._broker: dramatiq.Broker | None = None
        self._stop = threading.Event()
        self._failing = False

    def before_worker_boot(self, broker, worker) -> None:
        self._broker, self._worker = broker, worker

    def after_worker_boot(self, broker, worker) -> None:
        self._stop.clear()
        threading.Thread(target=self._run, name="kbwiki-delayed-requeue", daemon=True).start()

    def before_worker_shutdown(self, broker, worker) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.requeue_dropped()
            except Exception as exc:
                if not self._failing:
                    log.warning("delayed_requeue.failed", error=repr(exc))
                self._failing = True
                continue
            self._failing = False

    def requeue_dropped(self) -> int:
        """One pass; returns the messages requeued. Raises what Redis raises."""
        broker, worker = self._broker, self._worker
        if broker is None or worker is None:
            return 0
        now = self._clock()
        missing: dict[tuple[str, str], float] = {}
        due: dict[str, list[str]] = {}
        for queue, consumer in list(worker.consumers.items()):
            if q_name(queue) == queue:  # not a delay queue
                continue
            fetched = {
                m.decode() for m in broker.client.smembers(f"{broker.namespace}:__acks__.{broker.broker_id}.{queue}")
            }
            for rid in fetched - _held(consumer):
                since = missing[(queue, rid)] = self._missing_since.get((queue, rid), now)
                if now - since >= self.grace_s:
                    due.setdefault(queue, []).append(rid)
        requeued = 0
        for queue, rids in due.items():
            broker.do_requeue(queue, *rids)
            requeued += len(rids)
            for rid in rids:
                missing.pop((queue, rid), None)
        self._missing_since = missing
        if requeued:
            log.warning("delayed_requeue.requeued", messages=requeued, queues=sorted(due))
        return requeued


def _held(consumer) -> set[str]:
    """Redis message ids a delay-queue consumer thread holds in memory: its delay queue and the
    fetched messages its consumer has not handed over yet."""
    held = set()
    delay_queue = consumer.delay_queue
    with delay_queue.mutex:
        items = list(delay_queue.queue)
    held.update(item.message.options.get("redis_message_id") for item in items)
    redis_consumer = consumer.consumer
    for data in list(getattr(redis_consumer, "message_cache", None) or []):
        if data is not None:
            held.add(Message.decode(data).options.get("redis_message_id"))
    return held
