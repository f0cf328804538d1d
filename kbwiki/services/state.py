"""A home's folder and the files its supervisor and commands share there.

- ``services.json`` (:func:`read_state`): the supervisor (pid + process start time), per server
  its entry (``kbwiki.services.server.Server``), and ``watch`` (what the supervisor restarted);
- ``build.json``: which builds made the data (:mod:`kbwiki.services.builds`); ``ports.json``: the
  port each server keeps across restarts (:func:`server_port`);
- locks (``flock``): ``services.lock`` serialises server starts (:func:`start_lock`),
  ``clients.lock`` is held shared by every attached command (``client.local_services``),
  ``supervisor.lock`` exclusively by the one supervisor;
- ``supervisor.log``, ``supervisor.error`` (the one-line reason it could not start the servers)
  and ``supervisor.notice`` (lines for the user: :func:`notice`, :func:`say_notices`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil

from wiki.errors import ServiceError
from wiki.settings import Settings

STATE_FILE = "services.json"
BUILD_FILE = "build.json"
PORTS_FILE = "ports.json"
START_LOCK = "services.lock"
CLIENTS_LOCK = "clients.lock"
SUPERVISOR_LOCK = "supervisor.lock"
SUPERVISOR_LOG = "supervisor.log"
SUPERVISOR_ERROR = "supervisor.error"
#: Lines the supervisor has for the user (an account or a folder it made): the next attaching
#: command prints them on stderr and removes the file.
SUPERVISOR_NOTICE = "supervisor.notice"


def home_folder(settings: Settings) -> Path:
    """The home of the embedded servers: ``settings.home`` (``KBWIKI_HOME``) when set, else the
    per-user data folder ``$XDG_DATA_HOME/kbwiki`` (``~/.local/share/kbwiki`` by default), so
    every command finds the same servers whichever folder it runs from. Absolute, resolved.
    Raises :class:`ServiceError` when neither it nor the user's home folder is known."""
    if settings.home:
        return Path(settings.home).expanduser().resolve()
    base = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        try:
            base = str(Path.home() / ".local" / "share")
        except RuntimeError:
            raise ServiceError("cannot tell your home folder (HOME is unset); set KBWIKI_HOME") from None
    return Path(base).resolve() / "kbwiki"


def read_json(path: Path) -> dict[str, Any]:
    """The JSON object in ``path``; {} when it is missing, unreadable or not an object."""
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Replace ``path`` with ``value`` at once (a reader never sees half a file). Raises OSError."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True))
    tmp.replace(path)


def read_state(home: Path) -> dict[str, Any]:
    """``<home>/services.json`` ({} when there is none)."""
    return read_json(home / STATE_FILE)


def write_state(home: Path, state: dict[str, Any]) -> None:
    """Write ``<home>/services.json``; an empty ``state`` removes it."""
    if not state:
        (home / STATE_FILE).unlink(missing_ok=True)
        return
    write_json(home / STATE_FILE, state)


@contextlib.contextmanager
def flocked(path: Path, mode: int = fcntl.LOCK_EX) -> Iterator[None]:
    """Hold ``flock`` ``mode`` (exclusive by default) on the file ``path`` (made when missing)."""
    with open(path, "a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def start_lock(home: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the home's server-start lock (``services.lock``)."""
    return flocked(home / START_LOCK)


def notice(home: Path, line: str) -> None:
    """Keep ``line`` (one line, said once) for the next command that attaches to ``home``."""
    with open(home / SUPERVISOR_NOTICE, "a") as notices:
        notices.write(line + "\n")


def say_notices(home: Path) -> None:
    """Print the supervisor's notices on stderr (``kbwiki: LINE``) and forget them."""
    path = home / SUPERVISOR_NOTICE
    try:
        lines = path.read_text().splitlines()
        path.unlink()
    except OSError:
        return
    for line in lines:
        print(f"kbwiki: {line}", file=sys.stderr)


def process_token(pid: int) -> float | None:
    """The start time of process ``pid`` (tells a live owner from a recycled pid), ``None`` if gone."""
    if pid <= 0:
        return None
    try:
        proc = psutil.Process(pid)
        # a zombie is gone (its parent, often a container's init, has not reaped it yet)
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc.create_time()
    except psutil.Error:
        return None


def supervisor_alive(state: dict[str, Any]) -> bool:
    """Whether the supervisor a state names (pid + process start time) still runs."""
    entry = state.get("supervisor") or {}
    token = process_token(int(entry.get("pid", -1)))
    return token is not None and abs(token - float(entry.get("started", -1))) < 1.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def server_port(home: Path, name: str) -> int:
    """The port server ``name`` of ``home`` listens on: the one it had before when that is free,
    else a new one (remembered in ``<home>/ports.json``). Keeping the port lets clients that hold
    the old URL (running workers, ``serve``) reconnect when the servers come back."""
    ports = read_json(home / PORTS_FILE)
    port = ports.get(name)
    if isinstance(port, int) and _port_free(port):
        return port
    ports[name] = free_port()
    write_json(home / PORTS_FILE, ports)
    return int(ports[name])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
