"""A PostgreSQL session lost under the pool (terminated by the server) is a named error while
borrowed and replaced before it is lent when idle (a real server terminating the test's sessions)."""

from __future__ import annotations

import psycopg
import pytest

from repos.db import make_pool
from wiki import errors


def test_a_lost_connection_is_translated_at_the_pool_and_a_statement_error_is_not(database_url):
    pool = make_pool(database_url, 1, 2)
    try:
        with pytest.raises(errors.DatabaseUnreachable) as caught, pool.connection() as conn:
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
            _terminate(database_url, pid)  # lost while borrowed
            conn.execute("SELECT 1")
        assert isinstance(caught.value.__cause__, psycopg.OperationalError)
        with pytest.raises(psycopg.errors.DivisionByZero), pool.connection() as conn:
            conn.execute("SELECT 1 / 0")
    finally:
        pool.close()


def test_a_connection_lost_while_idle_in_the_pool_is_replaced_before_it_is_lent(database_url):
    # A server restart (`kbwiki down` and `up`) breaks every idle pooled connection: the next
    # borrower gets a working one, not the broken one's error.
    pool = make_pool(database_url, 1, 1)
    try:
        with pool.connection() as conn:
            pid = conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"]
        _terminate(database_url, pid)
        with pool.connection() as conn:
            assert conn.execute("SELECT pg_backend_pid() AS pid").fetchone()["pid"] != pid
    finally:
        pool.close()


def _terminate(database_url: str, pid: int) -> None:
    with psycopg.connect(database_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
