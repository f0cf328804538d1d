"""Sending the "drain this lane of this KB" messages, debounced with a Redis marker.

A trigger carries no work, only (tenant_id, knowledge_base_id). The debounce marker means "a
trigger for this actor and KB is queued"; the actor clears it when it starts, so work that
arrives while it runs gets a trigger of its own. Markers expire, and the sweeper re-triggers
every lane with rows, so a lost marker or message delays work but never loses it.
"""

from __future__ import annotations

import dramatiq

from actors.coordination import trigger_key
from actors.deps import Deps

MARKER_GRACE_MS = 60_000


def send_trigger(
    deps: Deps, actor_name: str, *, tenant_id: int, knowledge_base_id: str, debounce: bool = True, delay_s: float = 0.0
) -> bool:
    """Send ``actor_name(tenant_id, knowledge_base_id)``; returns False when one is already queued.

    Debounced triggers are delayed by ``settings.debounce_ms`` so a burst becomes one message;
    ``debounce=False`` sends at once (follow-ups of a batch that left rows behind), or after
    ``delay_s`` seconds (the turn of an op backing off after a failure).
    """
    actor = dramatiq.get_broker().get_actor(actor_name)
    kwargs = {"tenant_id": tenant_id, "knowledge_base_id": knowledge_base_id}
    if not debounce:
        actor.send_with_options(kwargs=kwargs, delay=int(delay_s * 1000) or None)
        return True
    key = trigger_key(deps.settings.key_prefix, actor_name, knowledge_base_id)
    if not deps.redis.set(key, "1", nx=True, px=deps.settings.debounce_ms + MARKER_GRACE_MS):
        return False
    actor.send_with_options(kwargs=kwargs, delay=deps.settings.debounce_ms or None)
    return True


def clear_trigger(deps: Deps, actor_name: str, knowledge_base_id: str) -> None:
    """Called by a trigger actor as it starts: later work needs a new trigger."""
    deps.redis.delete(trigger_key(deps.settings.key_prefix, actor_name, knowledge_base_id))
