"""A command's side of the home's servers: attach to them (starting the home's supervisor when
none runs), stop them, and read what the supervisor did (:mod:`kbwiki.supervisor` runs them)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from kbwiki.services.builds import SERVERS
from kbwiki.services.server import STARTUP_TIMEOUT_S
from kbwiki.services.state import (
    CLIENTS_LOCK,
    SUPERVISOR_ERROR,
    SUPERVISOR_LOG,
    flocked,
    home_folder,
    process_token,
    read_state,
    say_notices,
    supervisor_alive,
)
from wiki.errors import ServersUnreachable, ServiceError
from wiki.settings import Settings


@contextlib.contextmanager
def local_services(settings: Settings) -> Iterator[Settings]:
    """Make sure PostgreSQL and Redis are there for ``settings``; yield settings that point at them.

    For each of ``database_url`` / ``redis_url`` that is unset, attach to the server of the home
    (:func:`kbwiki.services.state.home_folder`) that the home's supervisor runs, starting the
    supervisor when none runs (:func:`attach`); set URLs are used as they are and nothing is
    started for them. The servers outlive this call: the supervisor stops them on ``kbwiki down``
    or after ``settings.servers_idle_s`` seconds with no attached command (holding
    ``<home>/clients.lock``) and no connection. The yielded copy has both URLs set and ``home``
    resolved, and ``DATABASE_URL`` / ``REDIS_URL`` / ``KBWIKI_HOME`` are exported to ``os.environ``
    for child processes (workers); the previous environment is restored on exit.

    Raises :class:`ServiceError` when a server cannot be found, started or reached within
    ``STARTUP_TIMEOUT_S`` seconds, or a home cannot run (one line: what happened, the log's error
    line and where the log is, or what to do).
    """
    wanted = [name for name, value in (("postgres", settings.database_url), ("redis", settings.redis_url)) if not value]
    urls = {"postgres": settings.database_url, "redis": settings.redis_url}
    home = home_folder(settings) if wanted else None
    saved_env = {key: os.environ.get(key) for key in ("DATABASE_URL", "REDIS_URL", "KBWIKI_HOME")}
    with contextlib.ExitStack() as stack:
        if home is not None:
            home.mkdir(parents=True, exist_ok=True)
            # shared: the supervisor does not stop on idle while it is held, and we block here
            # while a supervisor is stopping (so we start a new one, never reuse a dying one)
            stack.enter_context(flocked(home / CLIENTS_LOCK, fcntl.LOCK_SH))
            urls.update(attach(home, wanted, settings.servers_idle_s))
        folder = str(home) if home else None
        exported = {"DATABASE_URL": urls["postgres"], "REDIS_URL": urls["redis"], "KBWIKI_HOME": folder}
        os.environ.update({key: value for key, value in exported.items() if value})
        try:
            update = {"database_url": urls["postgres"], "redis_url": urls["redis"], "home": folder or settings.home}
            yield settings.model_copy(update=update)
        finally:
            for key, old in saved_env.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old


def attach(home: Path, wanted: list[str], idle_s: float, timeout_s: float = STARTUP_TIMEOUT_S + 30) -> dict[str, str]:
    """The URLs of servers ``wanted`` ("postgres", "redis") of ``home``, started by the home's
    supervisor when none runs (it stops them after ``idle_s`` seconds without a client, or on
    ``kbwiki down``); prints the supervisor's notices (an account or folder it made) on stderr.
    Raises :class:`ServiceError` with the supervisor's one-line reason when it could not start
    them; ``ServersUnreachable`` at once when the supervisor runs but restarting one of them keeps
    failing (its :func:`watch_lines`), or after ``timeout_s`` seconds without an answer."""
    deadline = time.monotonic() + timeout_s
    spawned_at: float | None = None
    while True:
        state = read_state(home)
        if supervisor_alive(state):
            failing = [n for n in wanted if ((state.get("watch") or {}).get(n) or {}).get("failures")]
            if failing:  # waiting would wait for nothing: say why, and when it tries again
                lines = watch_lines(home)
                raise ServersUnreachable(f"the local servers are down: {'; '.join(lines)}")
            entries = [state.get(name) for name in wanted]
            if all(e and SERVERS[n].answers(int(e["port"])) for n, e in zip(wanted, entries, strict=True)):
                say_notices(home)
                return {n: SERVERS[n].url(int(e["port"])) for n, e in zip(wanted, entries, strict=True)}
        elif spawned_at is not None and (reason := _supervisor_error(home, spawned_at)):
            say_notices(home)  # an account made before the failure is still news
            raise ServiceError(reason)
        elif spawned_at is None or time.time() - spawned_at > 5:  # never started, or died silently
            spawned_at = time.time()
            _spawn_supervisor(home, idle_s)
        if time.monotonic() > deadline:
            raise ServersUnreachable(
                f"the local servers did not answer within {timeout_s:.0f} s; see {home / SUPERVISOR_LOG}"
            )
        time.sleep(0.1)


def _spawn_supervisor(home: Path, idle_s: float) -> None:
    """Start the home's supervisor detached from this process (its own session; it outlives us)."""
    with open(home / SUPERVISOR_LOG, "ab") as log:
        subprocess.run(
            [sys.executable, "-m", "kbwiki.supervisor", str(home), "--idle", str(idle_s), "--detach"],
            check=True,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            timeout=30,
        )


def _supervisor_error(home: Path, since: float) -> str | None:
    """The line a supervisor started at or after ``since`` (epoch s) wrote on failing, if any."""
    path = home / SUPERVISOR_ERROR
    try:
        if path.stat().st_mtime + 1.0 < since:
            return None
        return path.read_text().strip() or None
    except OSError:
        return None


def stop_home(home: Path, timeout_s: float = 90.0) -> bool:
    """Stop the supervisor of ``home`` and its servers (SIGTERM, then wait until it is gone).
    Returns False when none ran. Raises :class:`ServiceError` when it did not stop in ``timeout_s``."""
    state = read_state(home)
    if not supervisor_alive(state):
        return False
    pid = int(state["supervisor"]["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while supervisor_alive(read_state(home)) and process_token(pid) is not None:
        if time.monotonic() > deadline:
            raise ServiceError(f"the local servers' supervisor (pid {pid}) did not stop within {timeout_s:.0f} s")
        time.sleep(0.1)
    return True


def server_clients(home: Path) -> int:
    """How many connections the home's servers hold now (PostgreSQL client backends and Redis
    clients, not counting this check's own); 0 when none runs."""
    state = read_state(home)
    if not supervisor_alive(state):
        return 0
    return sum(server.clients(int(state[name]["port"])) for name, server in SERVERS.items() if state.get(name))


def watch_lines(home: Path, now: float | None = None) -> list[str]:
    """What the home's supervisor did about its servers, one line per server it restarted or is
    trying to restart (from ``watch`` in ``<home>/services.json``, see :mod:`kbwiki.supervisor`):

    - ``PostgreSQL restarted 12 s ago after it stopped: PANIC: could not write ...: No space left
      on device`` (the last restart of the supervisor's life, and why, ``Server.why_stopped``);
    - ``PostgreSQL is down since 01:02:03 UTC (it stopped: ...); 3 restarts failed, the last: <its
      error>; next try in 16 s`` while restarting fails.

    [] when no supervisor runs or it restarted nothing. ``now``: epoch seconds (default: now).
    """
    state = read_state(home)
    if not supervisor_alive(state):
        return []
    now = time.time() if now is None else now
    lines = []
    for name, server in SERVERS.items():
        watch = (state.get("watch") or {}).get(name) or {}
        if watch.get("failures"):
            since = time.strftime("%H:%M:%S UTC", time.gmtime(watch["down_since"]))
            tries = "restart failed" if watch["failures"] == 1 else f"{watch['failures']} restarts failed"
            lines.append(
                f"{server.label} is down since {since} ({watch['why']}); {tries}, the last: {watch['error']};"
                f" next try in {_ago(watch['next_try_at'] - now)}"
            )
        elif watch.get("restarted_at"):
            lines.append(f"{server.label} restarted {_ago(now - watch['restarted_at'])} ago after {watch['why']}")
    return lines


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def servers_down(home: Path) -> bool:
    """Whether the home's supervisor runs and failed to restart one of its servers (so a command
    attaching now would wait for nothing)."""
    state = read_state(home)
    return supervisor_alive(state) and any(w.get("failures") for w in (state.get("watch") or {}).values())
