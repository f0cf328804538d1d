"""The actor names the stages send (``wiki.lanes.Actor``) are the actors ``actors/`` declares."""

from __future__ import annotations

import actors  # noqa: F401  (declares every actor)
from actors.declare import DECLARED
from wiki.lanes import Actor


def test_every_declared_actor_has_its_name_and_every_name_an_actor():
    assert set(DECLARED) == {a.value for a in Actor}
