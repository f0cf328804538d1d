"""Shared fixtures: a throw-away PostgreSQL database and a private Redis namespace per test session.

The servers come from ``KBWIKI_TEST_DATABASE_URL`` (an admin URL; default the local ``postgres``
database) and ``KBWIKI_TEST_REDIS_URL`` (default db 9 on localhost). ``make test`` / ``.ci/run``
start both when none is reachable.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator

import psycopg
import pytest
import redis
from psycopg import sql

from repos.db import apply_migrations, make_pool
from wiki.settings import Settings

ADMIN_URL = os.environ.get("KBWIKI_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("KBWIKI_TEST_REDIS_URL", "redis://127.0.0.1:6379/9")
SESSION_PREFIX = f"kbwiki-test-{uuid.uuid4().hex[:8]}"

# The broker ``actors.setup_broker()`` builds reads the environment: the whole test session points
# it at the test Redis db under a key namespace of its own.
os.environ["REDIS_URL"] = REDIS_URL
os.environ["KBWIKI_REDIS_NAMESPACE"] = f"{SESSION_PREFIX}-dramatiq"
os.environ["KBWIKI_KEY_PREFIX"] = SESSION_PREFIX
os.environ.pop("DATABASE_URL", None)
# Commands log to commands.log in their home: a session home of its own, never the user's (a new
# user's `make test` appended 800 lines of test KBs to theirs). Tests that need another set it.
os.environ.setdefault("KBWIKI_HOME", tempfile.mkdtemp(prefix="kbwiki-test-home-"))


@pytest.fixture(scope="session", autouse=True)
def broker():
    """The broker stage functions send their triggers through (no connection until a send)."""
    import actors

    return actors.setup_broker()


def _with_dbname(url: str, dbname: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{dbname}"


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A fresh database with every migration applied; dropped at the end of the session."""
    name = f"kbwiki_test_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = _with_dbname(ADMIN_URL, name)
    apply_migrations(url)
    yield url
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture(scope="session")
def pool(database_url: str):
    """A connection pool on the session database."""
    p = make_pool(database_url, 1, 8)
    yield p
    p.close()


@pytest.fixture()
def clean_db(pool):
    """Empty every data table before a test that needs a blank slate."""
    with pool.connection() as conn:
        conn.execute(
            "TRUNCATE task_pending_ops, task_dead_letters, task_workers, task_lane_fences, wiki_links,"
            " wiki_extractions, wiki_merge_decisions, wiki_index_intros,"
            " wiki_pages,"
            " knowledges, knowledge_bases RESTART IDENTITY CASCADE"
        )
    return pool


@pytest.fixture()
def redis_prefix() -> str:
    """A key prefix of this test's own, so tests never see each other's (or a demo's) keys."""
    return f"kbwiki-test-{uuid.uuid4().hex[:8]}"


@pytest.fixture()
def redis_client(redis_prefix: str) -> Iterator[redis.Redis]:
    """A client on the test Redis db; deletes the test's keys afterwards."""
    client = redis.Redis.from_url(REDIS_URL)
    yield client
    for key in client.scan_iter(f"{redis_prefix}*"):
        client.delete(key)
    client.close()


@pytest.fixture()
def settings(database_url: str, redis_prefix: str) -> Settings:
    """Settings pointing at the test database and the test's Redis namespace."""
    return Settings(
        database_url=database_url,
        redis_url=REDIS_URL,
        redis_namespace=f"{redis_prefix}-dramatiq",
        key_prefix=redis_prefix,
        debounce_ms=0,
    )
