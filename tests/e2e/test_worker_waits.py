"""`kbwiki worker` started while its servers refuse it waits for them instead of exiting (issue 27).

A fault run started a worker while PostgreSQL's connection slots were all taken ("too many
clients"): it exited at once. Here the worker's own role has a connection limit of 0 (limits are
per server: the shared test server's slots are left alone) and its Redis is not running yet; the
worker must say why on each try, outlast both, and then do the work an ingest sends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import sql

from kbwiki.services import valkey
from kbwiki.services.state import free_port
from repos.db import apply_migrations
from tests.conftest import ADMIN_URL
from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.e2e

DEADLINE_S = 180


@pytest.fixture()
def limited_database() -> Iterator[tuple[str, str]]:
    """(URL of a migrated database as its owner, the owner's role), a role whose connection limit
    the test sets; both dropped at the end."""
    name = f"kbwiki_wait_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD 'wait'").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(name), sql.Identifier(name)))
    parts = urlsplit(ADMIN_URL)
    url = urlunsplit(parts._replace(netloc=f"{name}:wait@{parts.hostname}:{parts.port or 5432}", path=f"/{name}"))
    try:
        apply_migrations(url)
        yield url, name
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
            admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(name)))


def _connection_limit(role: str, limit: int) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(sql.Identifier(role), sql.Literal(limit)))


def test_a_worker_refused_at_start_waits_for_postgresql_and_redis_then_works(limited_database, tmp_path: Path):
    url, role = limited_database
    _connection_limit(role, 0)  # every connection of the role refused: "too many connections"
    port = free_port()  # Redis will listen here, later
    prefix = f"kbwiki-wait-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "REDIS_URL": valkey.url(port),
        "KBWIKI_REDIS_NAMESPACE": f"{prefix}-dramatiq",
        "KBWIKI_KEY_PREFIX": prefix,
        "KBWIKI_HOME": str(tmp_path / "home"),
        "KBWIKI_DEBOUNCE_MS": "0",
    }
    log = tmp_path / "worker.log"
    redis_entry = None
    with open(log, "w") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "kbwiki.cli", "worker", "-p", "1", "-t", "2"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:

        def said(text: str, times: int = 1) -> bool:
            return worker.poll() is not None or log.read_text().count(text) >= times

        wait_until(lambda: said("too many connections for role", 2), DEADLINE_S, "two refused tries")
        assert worker.poll() is None, log.read_text()
        assert "kbwiki worker: cannot connect to PostgreSQL (DATABASE_URL): " in log.read_text()
        assert "; trying again in " in log.read_text()

        _connection_limit(role, -1)
        wait_until(lambda: said("cannot connect to Redis (REDIS_URL)"), DEADLINE_S, "a try refused by Redis")
        assert worker.poll() is None, log.read_text()

        home = tmp_path / "redis-home"
        home.mkdir()
        redis_entry = valkey.start(home, valkey.builds()[0], port)
        docs = tmp_path / "docs"
        docs.mkdir()
        (docs / "heron.md").write_text("# Heron\n\nThe Heron is a wading bird that feeds on fish in shallow water.\n")
        ingest = subprocess.run(
            [sys.executable, "-m", "kbwiki.cli", "ingest", str(docs), "--kb", "birds", "--wait", "--timeout", "240"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert ingest.returncode == 0, ingest.stdout + ingest.stderr + log.read_text()[-3000:]
        assert worker.poll() is None
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
        if redis_entry is not None:
            valkey.cleanup(redis_entry)
