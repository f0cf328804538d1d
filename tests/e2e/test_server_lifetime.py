"""A new user's day on the embedded default (issue 25): no command owns the local servers.

``serve``, a worker and ``ingest --wait`` start in an order, ``status`` runs, the servers are
stopped (``kbwiki down``) and started (``kbwiki up``) under them, a second ingest is worked off, and
``serve`` and the worker are stopped with Ctrl-C in an order. Before the supervisor, stopping the
command that had started the servers took them from every other command. ``bench/lifetime.py``
runs every order and prints how soon the worker resumed.
"""

from __future__ import annotations

import pytest

from tests.support.lifetime import day

ORDERS = [
    (("serve", "worker", "ingest"), ("serve", "worker")),
    (("ingest", "worker", "serve"), ("worker", "serve")),
]


@pytest.mark.parametrize(("start_order", "stop_order"), ORDERS, ids=lambda o: "-".join(o))
def test_commands_start_and_stop_in_any_order_and_survive_down_and_up(tmp_path, start_order, stop_order):
    run = day(tmp_path, start_order, stop_order)
    assert run.problems() == [], run.outputs
    assert run.statuses == [200, 503, 200]
    assert "stopped the local servers" in run.outputs["down"]
    # the worker said once that Redis was away, not once per queue every 3 s
    assert run.outputs["worker"].count("Consumer encountered a connection error") <= 2
    # serve said once, on its own stderr, that the database was away
    assert run.outputs["serve"].count("the database is not answering") == 1
