"""Sending messages by actor name, and the "drain this lane of this KB" triggers, debounced with a
Redis marker.

A trigger carries no work, only (tenant_id, knowledge_base_id). The debounce marker means "a
trigger for this actor and KB is queued"; the actor clears it when it starts, so work that
arrives while it runs gets a trigger of its own. Markers expire, and the sweeper re-triggers
every lane with rows, so a lost marker or message delays work but never loses it.

Messages go through Dramatiq's global broker, which ``actors.setup_broker()`` sets; stages name
actors instead of importing them, so this layer never imports ``actors``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dramatiq
import dramatiq.broker
import redis as redis_lib

from repos.coordination import mark_once, trigger_key, unmark
from wiki.settings import Settings

MARKER_GRACE_MS = 60_000


class BrokerNotSet(RuntimeError):
    """A message was sent before ``actors.setup_broker()`` built the broker."""


def get_actor(actor_name: str) -> dramatiq.Actor:
    """The actor ``actor_name`` on the broker ``actors.setup_broker()`` set.

    Raises ``BrokerNotSet`` before that (``dramatiq.get_broker()`` would quietly build a broker
    on localhost instead) and ``dramatiq.errors.ActorNotFound`` for an undeclared name.
    """
    broker = dramatiq.broker.global_broker
    if broker is None:
        raise BrokerNotSet(f"{actor_name}: call actors.setup_broker() before sending messages")
    return broker.get_actor(actor_name)


def send(actor_name: str, **kwargs: Any) -> dramatiq.Message:
    """Send ``actor_name(**kwargs)`` at once."""
    return get_actor(actor_name).send(**kwargs)


def recheck_key(settings: Settings, actor_name: str, knowledge_base_id: str) -> str:
    """The Redis marker "a delayed re-check of ``actor_name`` for this KB is queued"."""
    return trigger_key(settings.key_prefix, f"{actor_name}:recheck", knowledge_base_id)


@dataclass(frozen=True)
class Triggers:
    """The trigger messages of one KB (``actor_name(tenant_id, knowledge_base_id)``), as a
    ``*_step`` sends them after its work: :meth:`send`, :meth:`clear` (as the actor starts) and
    :meth:`recheck` (when a deferred run's defer ends)."""

    tenant_id: int
    knowledge_base_id: str
    redis: redis_lib.Redis
    settings: Settings

    def _send(self, actor: dramatiq.Actor, delay_ms: int | None) -> None:
        kwargs = {"tenant_id": self.tenant_id, "knowledge_base_id": self.knowledge_base_id}
        actor.send_with_options(kwargs=kwargs, delay=delay_ms)

    def send(self, actor_name: str, *, debounce: bool = True, delay_s: float = 0.0) -> bool:
        """Send the trigger; returns False when one is already queued.

        Debounced triggers are delayed by ``settings.debounce_ms`` so a burst becomes one message;
        ``debounce=False`` sends at once (follow-ups of a batch that left rows behind), or after
        ``delay_s`` seconds (the turn of an op backing off after a failure).
        """
        actor = get_actor(actor_name)  # BrokerNotSet before any marker is set
        if not debounce:
            self._send(actor, int(delay_s * 1000) or None)
            return True
        key = trigger_key(self.settings.key_prefix, actor_name, self.knowledge_base_id)
        if not mark_once(self.redis, key, self.settings.debounce_ms + MARKER_GRACE_MS):
            return False
        self._send(actor, self.settings.debounce_ms or None)
        return True

    def clear(self, actor_name: str) -> None:
        """Called by a trigger actor as it starts: later work needs a new trigger."""
        unmark(self.redis, trigger_key(self.settings.key_prefix, actor_name, self.knowledge_base_id))

    def recheck(self, actor_name: str, wait_s: float) -> bool:
        """Send the trigger in ``wait_s`` seconds (when a deferred run's defer runs out), unless a
        re-check of it for the KB is already queued; True when sent.

        The marker expires when the message is due, so a run that defers again then queues the next
        one; the deferred runs a burst of batches triggers in the meantime queue none."""
        delay_ms = max(1, int(wait_s * 1000) + 1)
        if not mark_once(self.redis, recheck_key(self.settings, actor_name, self.knowledge_base_id), delay_ms):
            return False
        self._send(get_actor(actor_name), delay_ms)
        return True
