"""Reading what the stages sent to the real broker of the ``actors`` package."""

from __future__ import annotations

from dramatiq.broker import MessageProxy


def drain(broker, queue_name: str) -> list[MessageProxy]:
    """Every message waiting on ``queue_name`` of the broker (acked, so the queue is left empty)."""
    consumer = broker.consume(queue_name, prefetch=50, timeout=300)
    found = []
    try:
        while (message := next(consumer)) is not None:
            consumer.ack(message)
            found.append(message)
    finally:
        consumer.close()
    return found
