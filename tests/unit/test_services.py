"""kbwiki.services: the embedded default starts real local servers, shares them, and stops them."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest
import redis

from kbwiki.services import STATE_FILE, local_services
from wiki.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0


@pytest.fixture()
def home() -> Iterator[Path]:
    """A fresh home in a folder every account can walk (as root the server runs as another user,
    and pytest's own tmp folders are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="kbwiki-services-"))
    base.chmod(0o755)
    yield base / "home"
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_urls_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("DATABASE_URL", "REDIS_URL", "KBWIKI_DATABASE_URL", "KBWIKI_REDIS_URL"):
        monkeypatch.delenv(key, raising=False)


def _embedded(home: Path) -> Settings:
    return Settings(home=str(home), database_url=None, redis_url=None)


def _pids(home: Path) -> tuple[int, int]:
    """(postmaster pid, redis pid) of the servers running under ``home``."""
    postmaster = int((home / "pg" / "postmaster.pid").read_text().splitlines()[0])
    state = json.loads((home / STATE_FILE).read_text())
    return postmaster, int(state["redis"]["pid"])


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _pg_answers(url: str) -> bool:
    try:
        with psycopg.connect(url, connect_timeout=2) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


def _redis_answers(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
    finally:
        client.close()


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_starts_servers_with_pg_trgm_and_stops_them_on_exit(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        assert settings.database_url and settings.redis_url
        assert os.environ["DATABASE_URL"] == settings.database_url
        assert os.environ["REDIS_URL"] == settings.redis_url
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("kbwiki",)
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            assert conn.execute("SELECT similarity('kbwiki', 'kbwiki')").fetchone() == (1.0,)
        assert _redis_answers(settings.redis_url)
        postmaster, redis_pid = _pids(home)
        assert (home / "pg.log").exists()

    assert _gone(postmaster) and _gone(redis_pid)
    assert not _pg_answers(settings.database_url)
    assert not _redis_answers(settings.redis_url)
    assert not (home / STATE_FILE).exists()
    assert "DATABASE_URL" not in os.environ and "REDIS_URL" not in os.environ


def test_set_urls_start_nothing(home: Path) -> None:
    given = Settings(home=str(home), database_url="postgresql://u@db.invalid:5432/x",
                     redis_url="redis://cache.invalid:6379/0")
    with local_services(given) as settings:
        assert settings.database_url == given.database_url
        assert settings.redis_url == given.redis_url
        assert not (home / STATE_FILE).exists()
        assert not (home / "pg").exists()


_CHILD = """
import json, sys
from kbwiki.services import local_services
from wiki.settings import Settings
with local_services(Settings(home=sys.argv[1], database_url=None, redis_url=None)) as s:
    print(json.dumps([s.database_url, s.redis_url]), flush=True)
    sys.stdin.readline()
"""


def _child(home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return subprocess.Popen([sys.executable, "-c", _CHILD, str(home)], cwd=REPO, env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def test_second_process_reuses_servers_and_leaves_them_running(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        child = _child(home)
        urls = json.loads(child.stdout.readline())
        child.communicate("\n", timeout=DEADLINE_S)
        assert child.returncode == 0
        assert urls == [settings.database_url, settings.redis_url]
        # Only the starter stops the servers: after the reusing process left, they still answer.
        assert _pg_answers(settings.database_url)
        assert _redis_answers(settings.redis_url)
        assert json.loads((home / STATE_FILE).read_text())["postgres"]["owner_pid"] == os.getpid()


def test_sigterm_stops_the_servers_the_process_started(home: Path) -> None:
    child = _child(home)
    database_url, _ = json.loads(child.stdout.readline())
    postmaster, redis_pid = _pids(home)
    assert _pg_answers(database_url)
    child.send_signal(signal.SIGTERM)
    child.wait(timeout=DEADLINE_S)
    _wait_for(lambda: _gone(postmaster) and _gone(redis_pid), "servers to stop")
    assert not (home / STATE_FILE).exists()
    child.stdin.close()
    child.stdout.close()


def test_stale_state_is_cleaned_up_and_servers_started_anew(home: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    home.mkdir(parents=True)
    stale = {"owner_pid": dead.pid, "owner_started": 0.0}
    (home / STATE_FILE).write_text(json.dumps({
        "postgres": {**stale, "port": 1, "bindir": str(home / "none"), "data": str(home / "pg"), "run_as": None},
        "redis": {**stale, "port": 1, "pid": dead.pid, "binary": "none"},
    }))
    with local_services(_embedded(home)) as settings:
        assert _pg_answers(settings.database_url)
        assert _redis_answers(settings.redis_url)
        state = json.loads((home / STATE_FILE).read_text())
        assert {state["postgres"]["owner_pid"], state["redis"]["owner_pid"]} == {os.getpid()}
        assert state["postgres"]["port"] != 1 and state["redis"]["port"] != 1
    assert not (home / STATE_FILE).exists()
