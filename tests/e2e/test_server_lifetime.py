"""A new user's day on the embedded default (issue 25): no command owns the local servers.

``serve``, a worker and ``ingest --wait`` start in an order, ``status`` runs, the servers are
stopped (``kbwiki down``) and started (``kbwiki up``) under them, a second ingest is worked off, and
``serve`` and the worker are stopped with Ctrl-C in an order. Before the supervisor, stopping the
command that had started the servers took them from every other command. ``bench/lifetime.py``
runs every order and prints how soon the worker resumed.
"""

from __future__ import annotations

import pytest

from tests.support.lifetime import STEP_S, Home, day, wait_for

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


def test_ingest_wait_rides_out_down_and_up(tmp_path):
    # A new user's trial: `ingest --wait` across `kbwiki down` and `up` ended with "the servers
    # went away (PoolTimeout ...)" although the servers came back on their ports.
    home = Home(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "heron.md").write_text("# Heron\n\nThe Heron is a wading bird that feeds on fish.\n")
    try:
        assert home.run("up").returncode == 0
        ingest = home.start("ingest", "ingest", str(folder), "--kb", "birds", "--wait", "--timeout", "240")
        log = tmp_path / "logs" / "ingest.log"
        wait_for(lambda: "queued=1" in log.read_text(), "the ingest to queue its document")
        assert home.run("down").returncode == 0
        wait_for(lambda: "not answering" in log.read_text(), "the wait to say the database is away")
        assert home.run("up").returncode == 0
        home.start("worker", "worker", "-p", "1", "-t", "4")
        assert ingest.wait(timeout=STEP_S) == 0, log.read_text()[-2000:]
        assert "Traceback" not in log.read_text()
    finally:
        home.close()
