"""The supervisor of a home's local servers: one process per home that no user command owns.

``python -m kbwiki.supervisor HOME --idle S [--detach]`` is started by the first command that needs
the embedded servers (``kbwiki.services.client.attach``) or by ``kbwiki up``. It:

- holds ``<home>/supervisor.lock`` (``flock``) for its life, so a home has one supervisor; a second
  one exits 0 at once (two commands may start one at the same moment);
- starts PostgreSQL and Redis (``kbwiki.services.builds.SERVERS``; or adopts the ones a killed
  supervisor left answering), each on the port it had before (``state.server_port``), and records
  itself and them in ``<home>/services.json``; when it cannot, it writes the one-line reason to
  ``<home>/supervisor.error`` (the waiting command prints it) and exits 1;
- checks every ``CHECK_S`` seconds that each server answers, and restarts one that missed
  ``MISSES`` checks in a row on the same port, with a backoff doubling from ``CHECK_S`` up to
  ``MAX_BACKOFF_S`` while starting fails (a full disk); it records under ``watch`` in the state
  file, per server, when it last restarted it and why it had stopped (its log's line,
  ``Server.why_stopped``), or while restarting fails, since when, how many tries failed, the last
  error and the next try (``kbwiki status`` and ``kbwiki up`` print them:
  ``kbwiki.services.client.watch_lines``);
- never dies of its own writes: on a full disk a log line (``middleware.logging``) or a state
  file write that fails is lost, and the checks go on (the fault run of issue 27: PostgreSQL shut
  down on a full disk and stayed down, its supervisor gone with it);
- stops both servers on SIGTERM/SIGINT (``kbwiki down``: attached commands and workers wait and
  reconnect when servers come back), or once for ``idle`` seconds no command holds
  ``<home>/clients.lock`` and neither server has a client connection (``idle`` 0: never).

The idle stop is decided while holding ``clients.lock`` exclusively: a command attaching then
waits until the servers are down and starts a new supervisor, never reusing a dying one.
Logs are JSON lines in ``<home>/supervisor.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import structlog

from kbwiki.services import state
from kbwiki.services.builds import SERVERS, choose_build, record_build
from kbwiki.services.client import server_clients
from kbwiki.services.logs import short_error
from kbwiki.services.server import Build
from middleware.logging import configure_logging
from wiki.errors import ServiceError

log = structlog.get_logger(__name__)

#: Seconds between two health and idle checks, and the missed health checks in a row that make a
#: server count as down (6 s: a PostgreSQL checkpoint under load never takes a connection that long).
CHECK_S = 2.0
MISSES = 3
#: Longest wait between two restarts of a server that fails to start (a full disk, a port taken).
MAX_BACKOFF_S = 60.0


class Supervisor:
    """Runs the servers of ``home`` until stopped; see the module docstring."""

    def __init__(self, home: Path, idle_s: float) -> None:
        self.home = home
        self.idle_s = idle_s
        self.stopping = threading.Event()
        self.builds: dict[str, Build] = {}
        self.entries: dict[str, dict[str, Any]] = {}
        #: Per server: its last restart (``restarted_at``, ``why``) or, while restarting fails,
        #: ``down_since``, ``why``, ``failures``, ``error``, ``wait_s`` (the backoff) and
        #: ``next_try_at`` (epoch seconds).
        self.watch: dict[str, dict[str, Any]] = {}

    # -- life ----------------------------------------------------------------------------------

    def run(self) -> int:
        """Serve until stopped; returns the exit code (0, or 1 when the servers could not start)."""
        with open(self.home / state.SUPERVISOR_LOCK, "a") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return 0  # another supervisor runs this home
            (self.home / state.SUPERVISOR_ERROR).unlink(missing_ok=True)
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, lambda *_: self.stopping.set())
            try:
                self._start()
            except ServiceError as exc:
                log.error("supervisor.start_failed", error=str(exc))
                (self.home / state.SUPERVISOR_ERROR).write_text(str(exc) + "\n")
                self._stop_servers()
                return 1
            log.info("supervisor.ready", ports={n: e["port"] for n, e in self.entries.items()}, idle_s=self.idle_s)
            self._watch()  # returns after stopping the servers on idle, or on a stop signal
            self._stop_servers()
            log.info("supervisor.stopped")
            return 0

    def _start(self) -> None:
        with state.start_lock(self.home):
            # Every build is chosen before any server starts: a home that cannot run is refused
            # whole, never half-started.
            self.builds = {name: choose_build(self.home, name) for name in SERVERS}
            previous = state.read_state(self.home)
            self._write_state()
            for name in SERVERS:
                old = previous.get(name)
                if old and self._answers(name, old):
                    self.entries[name] = old  # left answering by a supervisor that was killed
                    log.info("supervisor.adopted", server=name, port=old["port"])
                else:
                    if old:
                        self._cleanup(name, old)
                    self.entries[name] = self._start_one(name)
                self._write_state()

    def _watch(self) -> None:
        misses = dict.fromkeys(SERVERS, 0)
        retry_at = dict.fromkeys(SERVERS, 0.0)
        backoff = dict.fromkeys(SERVERS, CHECK_S)
        idle_since = time.monotonic()
        while not self.stopping.wait(CHECK_S):
            for name in SERVERS:
                entry = self.entries.get(name)
                if entry is not None and self._answers(name, entry):
                    misses[name], backoff[name] = 0, CHECK_S
                    continue
                misses[name] += 1
                if misses[name] < MISSES or time.monotonic() < retry_at[name]:
                    continue
                try:
                    error = self._restart(name)
                except OSError as exc:  # our own write (a full disk): the server is tried again
                    error = f"{type(exc).__name__}: {exc}"
                if error is None:
                    misses[name], backoff[name] = 0, CHECK_S
                else:
                    retry_at[name] = time.monotonic() + backoff[name]
                    self._failed(name, error, backoff[name])
                    backoff[name] = min(MAX_BACKOFF_S, backoff[name] * 2)
            if self.idle_s <= 0 or self._busy():
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= self.idle_s:
                with self._clients_excluded() as excluded:
                    # decided under the exclusive lock: no command can attach until we are down
                    if excluded and server_clients(self.home) == 0:
                        log.info("supervisor.idle_stop", idle_s=self.idle_s)
                        self._stop_servers()
                        return
                idle_since = time.monotonic()

    # -- servers -------------------------------------------------------------------------------

    def _start_one(self, name: str) -> dict[str, Any]:
        entry = SERVERS[name].start(self.home, self.builds[name], state.server_port(self.home, name))
        record_build(self.home, name, self.builds[name])
        log.info("supervisor.started", server=name, port=entry["port"])
        return entry

    def _restart(self, name: str) -> str | None:
        """Stop what is left of server ``name`` and start it again; returns None, or the error
        (logged) when it failed. Records why it had stopped in ``self.watch``."""
        watch = self.watch.get(name) or {}
        if (old := self.entries.pop(name, None)) is not None:
            # read before the cleanup, which may add its own lines to the log
            watch = {"why": SERVERS[name].why_stopped(old, MISSES * CHECK_S), "down_since": time.time()}
            self.watch[name] = watch
            log.warning("supervisor.server_down", server=name, why=watch["why"])
            self._cleanup(name, old)
        self._write_state()
        try:
            with state.start_lock(self.home):
                self.entries[name] = self._start_one(name)
        except ServiceError as exc:
            log.error("supervisor.restart_failed", server=name, error=str(exc))
            return short_error(str(exc))  # the whole of it is in the log line above
        self.watch[name] = {"restarted_at": time.time(), "why": watch.get("why", "it stopped")}
        self._write_state()
        return None

    def _failed(self, name: str, error: str, wait_s: float) -> None:
        """Record that restarting ``name`` failed with ``error`` and is tried again in ``wait_s`` s."""
        watch = self.watch.setdefault(name, {"why": "it stopped", "down_since": time.time()})
        watch.pop("restarted_at", None)
        watch.update(
            failures=watch.get("failures", 0) + 1, error=error, wait_s=wait_s, next_try_at=time.time() + wait_s
        )
        self._write_state()

    @staticmethod
    def _answers(name: str, entry: dict[str, Any]) -> bool:
        return SERVERS[name].answers(int(entry["port"]))

    @staticmethod
    def _cleanup(name: str, entry: dict[str, Any]) -> None:
        with contextlib.suppress(ServiceError):
            SERVERS[name].cleanup(entry)

    def _stop_servers(self) -> None:
        for name in reversed(SERVERS):
            if (entry := self.entries.pop(name, None)) is not None:
                self._cleanup(name, entry)
        state.write_state(self.home, {})

    def _write_state(self) -> None:
        """Write ``services.json``; a failed write (a full disk) is logged when it can be, and the
        next write tries again."""
        token = state.process_token(os.getpid())
        record = {"supervisor": {"pid": os.getpid(), "started": token}, **self.entries, "watch": self.watch}
        try:
            state.write_state(self.home, record)
        except OSError as exc:
            log.warning("supervisor.state_not_written", error=str(exc))

    # -- clients -------------------------------------------------------------------------------

    def _busy(self) -> bool:
        """Whether a command is attached (holds the shared client lock) or a server has a client."""
        with self._clients_excluded() as excluded:
            return not excluded or server_clients(self.home) > 0

    @contextlib.contextmanager
    def _clients_excluded(self):
        """Hold ``clients.lock`` exclusively (yields True), or yield False when a command holds it."""
        with open(self.home / state.CLIENTS_LOCK, "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)


def main(argv: list[str] | None = None) -> int:
    """The supervisor's command line (see the module docstring); returns its exit code."""
    parser = argparse.ArgumentParser(prog="kbwiki.supervisor")
    parser.add_argument("home", type=Path)
    parser.add_argument("--idle", type=float, required=True, help="seconds without a client before stopping (0: never)")
    parser.add_argument("--detach", action="store_true", help="fork into a new session and return at once")
    args = parser.parse_args(argv)
    home = args.home.resolve()
    if args.detach:
        if os.fork() > 0:
            return 0
        os.setsid()
    configure_logging("INFO", home / state.SUPERVISOR_LOG)
    return Supervisor(home, args.idle).run()


if __name__ == "__main__":
    sys.exit(main())
