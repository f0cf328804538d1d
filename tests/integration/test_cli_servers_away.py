"""A command whose servers go away while it runs ends on one line saying so (a real PostgreSQL the
test's pool reached, then a server that stopped answering)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def test_servers_going_away_mid_command_is_one_line(database_url, monkeypatch):
    import psycopg

    from kbwiki import cli
    from wiki.errors import ServersUnreachable
    from wiki.settings import get_settings

    monkeypatch.setenv("DATABASE_URL", database_url)  # with both URLs set no server is started
    get_settings.cache_clear()
    with pytest.raises(ServersUnreachable, match="the servers went away") as caught:
        with cli.services():
            raise psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    assert "run the command again" in str(caught.value) and "(AdminShutdown: terminating" in str(caught.value)
    get_settings.cache_clear()


_GONE = r"""
import sys, time
import click
import psycopg_pool
from kbwiki import cli

pools = []

@cli.main.command()
def gone():
    with cli.services():
        # a pool to a server that stopped: psycopg logs "error connecting in ..." while it retries,
        # and its threads go on retrying (and logging) after the command failed, as the deps' pool does
        pools.append(psycopg_pool.ConnectionPool("postgresql://postgres@127.0.0.1:1/x", min_size=1, timeout=2,
                                                 name="kbwiki", kwargs={"connect_timeout": 1}))
        with pools[0].connection():
            pass

try:
    cli.main(["gone"], standalone_mode=False)
except click.ClickException as exc:
    # what happens between the command's end and its error line: one more failed reconnect
    errors, deadline = pools[0].get_stats().get("connections_errors", 0), time.monotonic() + 60
    while pools[0].get_stats().get("connections_errors", 0) <= errors and time.monotonic() < deadline:
        time.sleep(0.05)
    exc.show()
    sys.exit(exc.exit_code)
"""


def test_servers_going_away_print_that_one_line_and_nothing_else(database_url, tmp_path):
    # Seen: "discarding closed connection" and "error connecting in 'kbwiki'" lines from the pool,
    # printed by Python's last-resort log handler before the command's own error line.
    from tests.conftest import REDIS_URL

    env = {k: v for k, v in os.environ.items() if not k.startswith("KBWIKI_")}
    env.update(DATABASE_URL=database_url, REDIS_URL=REDIS_URL)
    out = subprocess.run(
        [sys.executable, "-c", _GONE], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 1, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: the servers went away (PoolTimeout"), out.stderr
