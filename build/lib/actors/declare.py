"""Declaring an actor without a broker: ``@actor(...)`` records the function and its options, and
``actors.broker.setup_broker`` declares every recorded actor on the broker it builds.

Dramatiq's own ``@dramatiq.actor`` binds to the global broker as it decorates (building a default
one when none is set), so importing a module of actors needed the broker's settings, and every
command imported actors inside functions to dodge that. A ``LazyActor`` is the pattern of
flask-dramatiq and django_dramatiq: import it anywhere, send through it once the broker is set.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dramatiq
from dramatiq import Broker

from actors.retry_policy import data_retries
from stages.triggers import BrokerNotSet
from wiki.settings import Settings

#: Every actor declared with :func:`actor`, by name, in declaration order.
DECLARED: dict[str, LazyActor] = {}


class LazyActor:
    """An actor's function and options, declared on a broker by :meth:`bind`.

    ``send``, ``send_with_options``, ``message`` and ``message_with_options`` go to the actor on
    the bound broker (``BrokerNotSet`` before ``setup_broker``); calling it, or its ``fn``, runs
    the function inline.
    """

    def __init__(self, fn: Callable[..., Any], queue_name: str, carries_data: bool, options: dict[str, Any]):
        self.fn, self.queue_name, self.carries_data, self.options = fn, queue_name, carries_data, options
        self.actor_name = fn.__name__
        self.__doc__ = fn.__doc__
        self._actor: dramatiq.Actor | None = None

    def bind(self, broker: Broker, settings: Settings) -> dramatiq.Actor:
        """Declare this actor on ``broker`` (once per broker); a data-carrying actor gets the retries
        of ``actors.retry_policy.data_retries(settings)``."""
        if self._actor is None or self._actor.broker is not broker:
            options = {**self.options, **(data_retries(settings) if self.carries_data else {})}
            self._actor = dramatiq.Actor(
                self.fn,
                broker=broker,
                actor_name=self.actor_name,
                queue_name=self.queue_name,
                priority=0,
                options=options,
            )
        return self._actor

    @property
    def actor(self) -> dramatiq.Actor:
        """The Dramatiq actor on the broker; raises ``BrokerNotSet`` before ``setup_broker``."""
        if self._actor is None:
            raise BrokerNotSet(f"{self.actor_name}: call actors.setup_broker() before sending messages")
        return self._actor

    def send(self, *args: Any, **kwargs: Any) -> dramatiq.Message:
        return self.actor.send(*args, **kwargs)

    def send_with_options(self, **options: Any) -> dramatiq.Message:
        return self.actor.send_with_options(**options)

    def message(self, *args: Any, **kwargs: Any) -> dramatiq.Message:
        return self.actor.message(*args, **kwargs)

    def message_with_options(self, **options: Any) -> dramatiq.Message:
        return self.actor.message_with_options(**options)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"LazyActor({self.actor_name!r}, queue_name={self.queue_name!r})"


def actor(*, queue_name: str = "wiki", carries_data: bool = False, **options: Any) -> Callable[[Callable], LazyActor]:
    """Declare the decorated function as an actor of kbwiki (bound by ``actors.setup_broker``).

    ``options`` are Dramatiq's actor options (``max_retries``, ``time_limit`` in ms, ``throws``);
    ``carries_data=True`` marks a message that is the data itself (``wiki_submit``,
    ``wiki_retract``, ``wiki_delete_kb``): it retries through outages (``actors.retry_policy``).
    Raises ValueError for a name declared twice.
    """

    def decorate(fn: Callable) -> LazyActor:
        if fn.__name__ in DECLARED:
            raise ValueError(f"an actor named {fn.__name__!r} is already declared")
        lazy = DECLARED[fn.__name__] = LazyActor(fn, queue_name, carries_data, options)
        return lazy

    return decorate
