"""Server-level statements: is a server there, does a database exist, create or drop one.

For the code that starts or checks servers before any pool exists (``kbwiki.services``, the
``kbwiki`` command, the test and bench set-ups). Each call opens its own short connection; driver
errors become ``wiki.errors.DatabaseUnreachable`` / ``RedisUnreachable`` here (the driver error
kept as ``__cause__``).
"""

from __future__ import annotations

import math

import psycopg
import redis
from psycopg import sql

from wiki.errors import DatabaseUnreachable, RedisUnreachable


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def check_database(url: str, timeout_s: float = 5) -> None:
    """Connect to ``url`` and run ``SELECT 1``; raises ``DatabaseUnreachable`` when it does not answer
    within ``timeout_s`` seconds (rounded up to whole seconds, at least 1: libpq's unit)."""
    try:
        with psycopg.connect(url, connect_timeout=max(1, math.ceil(timeout_s))) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        raise DatabaseUnreachable(_first_line(exc)) from exc


def database_answers(url: str, timeout_s: float = 2) -> bool:
    """Whether PostgreSQL at ``url`` answers ``SELECT 1`` within ``timeout_s`` seconds."""
    try:
        check_database(url, timeout_s)
    except DatabaseUnreachable:
        return False
    return True


def check_redis(url: str, timeout_s: float = 5) -> None:
    """PING Redis at ``url``; raises ``RedisUnreachable`` when it does not answer within ``timeout_s``
    seconds or the URL is malformed."""
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    except ValueError as exc:
        raise RedisUnreachable(str(exc)) from exc
    try:
        client.ping()
    except redis.RedisError as exc:
        raise RedisUnreachable(str(exc)) from exc
    finally:
        client.close()


def redis_answers(url: str, timeout_s: float = 2) -> bool:
    """Whether Redis at ``url`` answers PING within ``timeout_s`` seconds."""
    try:
        check_redis(url, timeout_s)
    except RedisUnreachable:
        return False
    return True


def pg_client_count(url: str, timeout_s: float = 2) -> int:
    """How many client connections PostgreSQL at ``url`` holds, not counting this one's; 0 when it
    does not answer within ``timeout_s`` seconds."""
    try:
        with psycopg.connect(url, connect_timeout=max(1, math.ceil(timeout_s)), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            ).fetchone()
    except psycopg.Error:
        return 0
    return int(row[0]) if row else 0


def redis_client_count(url: str, timeout_s: float = 2) -> int:
    """How many clients Redis at ``url`` has connected, not counting this one; 0 when it does not
    answer within ``timeout_s`` seconds."""
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        return max(0, len(client.client_list()) - 1)
    except redis.RedisError:
        return 0
    finally:
        client.close()


def create_database(admin_url: str, name: str, *, replace: bool = False) -> bool:
    """Create database ``name`` through the maintenance connection ``admin_url`` unless it exists;
    returns whether it was created. ``replace`` drops an existing one first (``WITH (FORCE)``)."""
    try:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            if replace:
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            elif conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None:
                return False
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        raise DatabaseUnreachable(_first_line(exc)) from exc
    return True


def drop_database(admin_url: str, name: str) -> None:
    """Drop database ``name`` (``WITH (FORCE)``: its sessions are ended) through ``admin_url``; a
    missing one is fine. The benchmarks' scratch databases go this way."""
    try:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    except psycopg.OperationalError as exc:
        raise DatabaseUnreachable(_first_line(exc)) from exc


def extension_available(url: str, name: str) -> bool:
    """Whether the server at ``url`` can install extension ``name`` (``pg_available_extensions``)."""
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            return conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", (name,)).fetchone() is not None
    except psycopg.OperationalError as exc:
        raise DatabaseUnreachable(_first_line(exc)) from exc


def vacuum_analyze(url: str) -> None:
    """``VACUUM ANALYZE`` the whole database at ``url`` (bench set-ups: as autovacuum would have)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
