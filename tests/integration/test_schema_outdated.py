"""A command on a configured database that lacks migrations says so in one line and asks for
``kbwiki migrate`` (found by a demo run on an empty database: a traceback about a missing table)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
from psycopg import sql

from tests.conftest import ADMIN_URL, REDIS_URL, _with_dbname

KBWIKI = str(Path(sys.executable).with_name("kbwiki"))


def test_a_database_without_migrations_gets_one_line_asking_for_migrate(tmp_path) -> None:
    name = f"kbwiki_test_empty_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    env = {
        **os.environ,
        "DATABASE_URL": _with_dbname(ADMIN_URL, name),
        "REDIS_URL": REDIS_URL,
        "KBWIKI_HOME": str(tmp_path / "home"),
    }
    try:
        status = subprocess.run([KBWIKI, "status", "--kb", "docs"], env=env, capture_output=True, text=True)
        assert status.returncode == 1, status.stderr
        assert "lacks" in status.stderr and "run `kbwiki migrate`" in status.stderr
        assert "Traceback" not in status.stderr and len(status.stderr.strip().splitlines()) == 1
        migrate = subprocess.run([KBWIKI, "migrate"], env=env, capture_output=True, text=True)
        assert migrate.returncode == 0 and "applied" in migrate.stdout
        again = subprocess.run([KBWIKI, "status", "--kb", "docs"], env=env, capture_output=True, text=True)
        assert "kbwiki migrate" not in again.stderr
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
