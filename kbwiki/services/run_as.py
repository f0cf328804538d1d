"""As whom PostgreSQL's commands run, and what that account needs: its data, a build it can run.

PostgreSQL refuses to run as root, and it runs as the owner of its data: as root with data of
root's (a home under /root, mode 0700, is reachable by no other account), in a user namespace
where root is ``nobody`` (``unshare --user``); where user namespaces are not allowed (a chroot,
many containers), new data goes to the system account ``kbwiki``
(:mod:`kbwiki.services.system_account`). Data owned by another account runs as that account (as
root) or is refused with one line.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbwiki.services import system_account
from kbwiki.services.logs import last_line, log_line
from kbwiki.services.server import STARTUP_TIMEOUT_S
from kbwiki.services.state import notice
from kbwiki.services.system_account import Account
from wiki.errors import ServiceError


@dataclass(frozen=True)
class RunAs:
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

    def run(
        self, cmd: list[str], what: str, timeout: float = STARTUP_TIMEOUT_S, log: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run a short command as this account. Raises :class:`ServiceError` (one line: ``what``,
        the command's last output line and ``log``'s error line) when it fails or outlasts
        ``timeout`` seconds."""
        try:
            done = subprocess.run(
                self.command(cmd),
                check=False,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                **self.kwargs(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServiceError(f"{what} failed: {exc}") from exc
        if done.returncode != 0:
            detail = last_line(done.stderr or done.stdout)
            if log is not None:
                detail += f"; {log_line(log)}"
            raise ServiceError(f"{what} failed (exit {done.returncode}): {detail}")
        return done

    def account(self) -> Account:
        """This account, for :mod:`kbwiki.services.system_account`'s checks (only when ``uid`` is set)."""
        assert self.uid is not None and self.gid is not None, "ourselves or a user namespace: no other account"
        return Account(str(self.user), self.uid, self.gid)

    def entry(self) -> dict[str, Any]:
        """The fields a state entry keeps to stop the server later."""
        return {"run_as": self.user, "userns": self.userns}

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> RunAs:
        """The account a state entry's server runs as. Raises KeyError when that account is gone."""
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
def userns_works() -> bool:
    """Whether ``unshare --user`` may map us to nobody here (containers often forbid user namespaces)."""
    if shutil.which("unshare") is None:
        return False
    try:
        done = subprocess.run(
            RunAs(userns=True).command(["true"]),
            check=False,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def account_for(data: Path, home: Path) -> RunAs:
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
        return RunAs(account.pw_name, account.pw_uid, account.pw_gid)
    if euid != 0:
        return RunAs()
    if userns_works():
        return RunAs(userns=True)
    if data.exists():
        raise ServiceError(
            f"the PostgreSQL data in {data} belongs to root, PostgreSQL cannot run as root and "
            "user namespaces (unshare --user) are not allowed here; set KBWIKI_HOME to a new folder"
        )
    server, created = system_account.server_account()
    if created:
        notice(
            home,
            f"created the system account {server.name!r} to run PostgreSQL (it refuses root, and user "
            "namespaces are not allowed here)",
        )
    return RunAs(server.name, server.uid, server.gid)


def place(home: Path) -> tuple[Path, Path, RunAs]:
    """(data folder, log file, account) of ``home``'s PostgreSQL, with symbolic links resolved.

    The data is ``<home>/pg`` and the log ``<home>/pg.log``, or where those link to. New data for
    an account that cannot reach ``home`` (the ``kbwiki`` account and a home under /root) goes to
    a folder of its own (:func:`kbwiki.services.system_account.data_folder`) that the two names are
    made to link to; said once in ``home``'s notices. Raises :class:`ServiceError` for a link whose
    data is gone, and as :func:`account_for` and ``data_folder`` do.
    """
    link, log_link = home / "pg", home / "pg.log"
    if link.is_symlink() and not link.exists():
        raise ServiceError(
            f"{link} links to {os.readlink(link)}, which is gone: put that folder back, or remove "
            f"{link} to start a new database"
        )
    data, log = link.resolve(), log_link.resolve()
    run_as = account_for(data, home)
    if data.exists() or run_as.uid is None:
        return data, log, run_as
    account = run_as.account()
    if system_account.can(account, "-x", home):
        return data, log, run_as
    folder = system_account.data_folder(home, account)
    log_link.unlink(missing_ok=True)  # a log of no data: the data it spoke of is gone
    link.symlink_to(folder / "pg")
    log_link.symlink_to(folder / "pg.log")
    notice(
        home,
        f"PostgreSQL's data is in {folder} ({link} links to it), as the account {account.name!r} "
        f"cannot reach {home}; remove that folder too if you remove the home",
    )
    return folder / "pg", folder / "pg.log", run_as


def runnable(bindir: Path, version: str, run_as: RunAs, home: Path) -> Path:
    """``bindir``, or where the account ``run_as`` can run that build from
    (:func:`kbwiki.services.system_account.runnable_bindir`: a copy, said once in ``home``'s notices)."""
    if run_as.uid is None:
        return bindir
    account = run_as.account()
    found, copied = system_account.runnable_bindir(bindir, version, account)
    if copied:
        notice(
            home,
            f"copied PostgreSQL {version} to {found.parent}, as the account {account.name!r} cannot run "
            f"it from {bindir}",
        )
    return found


def prepare(data: Path, log: Path, run_as: RunAs) -> None:
    """Create the data folder ``data`` and the log file ``log`` owned by the server's account, and
    check that it can reach them (:func:`runnable` saw to the binaries). Raises :class:`ServiceError`."""
    data.mkdir(mode=0o700, exist_ok=True)
    log.touch(mode=0o600, exist_ok=True)
    if run_as.uid is not None:
        for path in (data, log):
            os.chown(path, run_as.uid, run_as.gid)
        # The server's account must be able to walk every parent of home: tell the user instead
        # of letting initdb fail obscurely.
        if not system_account.can(run_as.account(), "-w", data):
            raise ServiceError(
                f"PostgreSQL runs as {run_as.user!r} and that account cannot reach {data}; "
                "set KBWIKI_HOME to a folder it can reach, or DATABASE_URL"
            )
