"""A new user's day on the embedded default: ``serve``, a worker and other commands started and
stopped in a given order on one home, with the servers stopped (``kbwiki down``) and started again
(``kbwiki up``) while they run. Used by ``tests/e2e/test_server_lifetime.py`` (some orders) and
``bench/lifetime.py`` (every order, with the worker's resume time).

Every command is the real ``kbwiki`` in its own process, on a home of its own. What a run checks:
no command fails or prints a traceback; ``serve`` answers 200 before and after the outage and 503
during it; the worker finishes a second ingest after the servers are back.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from kbwiki.services.client import stop_home
from tests.support.web import free_port

#: Seconds any one step may take before the run fails (a fresh home runs initdb first).
STEP_S = 120.0
#: The long-running commands and the commands that end by themselves.
STARTS = ("serve", "worker", "ingest")
TOPICS = ("Heron", "Egret", "Bittern", "Stork", "Ibis", "Spoonbill")


@dataclass
class Run:
    """What one run saw: each command's exit code and output, and when the worker resumed."""

    codes: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    #: Seconds from ``kbwiki up`` returning to the second ingest's documents all being done.
    resume_s: float | None = None
    statuses: list[int] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Each failed command and each traceback, one line each (empty: the run is clean)."""
        found = [f"{name} exited {code}" for name, code in self.codes.items() if code not in (0, 130)]
        found += [f"{name} printed a traceback" for name, out in self.outputs.items() if "Traceback" in out]
        return found


class Home:
    """A home of its own (``KBWIKI_HOME``) and the ``kbwiki`` processes run on it."""

    def __init__(self, base: Path) -> None:
        base.chmod(0o755)  # PostgreSQL may run as another account, which must reach the home
        self.path = base / "home"
        self.logs = base / "logs"
        self.logs.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(KBWIKI_HOME=str(self.path), KBWIKI_SERVERS_IDLE_S="0", PYTHONUNBUFFERED="1")
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen[str]:
        """``kbwiki ARGS`` in the background, its output in ``logs/NAME.log``."""
        log = open(self.logs / f"{name}.log", "w")  # noqa: SIM115  (the child owns it)
        proc = subprocess.Popen(
            [sys.executable, "-m", "kbwiki.cli", *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # SIGINT goes to this command's group only, as Ctrl-C would
        )
        self.procs[name] = proc
        return proc

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``kbwiki ARGS`` to its end."""
        return subprocess.run(
            [sys.executable, "-m", "kbwiki.cli", *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=STEP_S,
        )

    def interrupt(self, name: str, into: Run) -> None:
        """Ctrl-C on command ``name`` (SIGINT to its process group); record its code and output."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGINT)
        into.codes[name] = proc.wait(timeout=STEP_S)
        into.outputs[name] = (self.logs / f"{name}.log").read_text()

    def close(self) -> None:
        """Kill what is left and stop the home's servers."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        stop_home(self.path)


def wait_for(condition, what: str, deadline_s: float = STEP_S) -> None:
    """Poll ``condition`` every 0.1 s; AssertionError naming ``what`` after ``deadline_s``."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {deadline_s:.0f} s waiting for {what}")
        time.sleep(0.1)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0  # not listening (yet)


def _folder(base: Path, name: str, topics: tuple[str, ...]) -> Path:
    folder = base / name
    folder.mkdir()
    _write(folder, topics)
    return folder


def _write(folder: Path, topics: tuple[str, ...]) -> None:
    for topic in topics:
        (folder / f"{topic.lower()}.md").write_text(
            f"# {topic}\n\nThe {topic} is a wading bird. The {topic} feeds on fish in shallow water.\n"
        )


def _done(home: Home, kb: str, count: int) -> bool:
    import json

    out = home.run("status", "--kb", kb, "--json")
    if out.returncode != 0:
        return False
    report = json.loads(out.stdout)
    return report.get("documents", {}).get("done", 0) >= count and not any(report.get("lanes", {}).values())


def day(base: Path, start_order: tuple[str, ...], stop_order: tuple[str, ...]) -> Run:
    """One run: start ``serve``, ``worker`` and ``ingest --wait`` in ``start_order``, run ``status``,
    stop and start the servers, ingest again, then Ctrl-C ``serve`` and the worker in ``stop_order``.
    Raises AssertionError (with what it waited for) when a step does not happen within ``STEP_S``."""
    home = Home(base)
    run = Run()
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    folder = _folder(base, "birds", TOPICS[:3])
    try:
        for name in start_order:
            if name == "serve":
                home.start("serve", "serve", "--port", str(port))
            elif name == "worker":
                home.start("worker", "worker", "-p", "1", "-t", "4")
            else:
                home.start("ingest", "ingest", str(folder), "--kb", "birds", "--wait", "--timeout", str(STEP_S))
        ingest = home.procs.pop("ingest")
        run.codes["ingest"] = ingest.wait(timeout=STEP_S)
        run.outputs["ingest"] = (home.logs / "ingest.log").read_text()
        status = home.run("status", "--kb", "birds")
        run.codes["status"], run.outputs["status"] = status.returncode, status.stdout + status.stderr
        wait_for(lambda: _status(url) == 200, "serve to answer 200")
        run.statuses.append(200)

        down = home.run("down")
        run.codes["down"], run.outputs["down"] = down.returncode, down.stdout + down.stderr
        wait_for(lambda: _status(url) == 503, "serve to answer 503 while the servers are down")
        run.statuses.append(503)
        up = home.run("up")
        run.codes["up"], run.outputs["up"] = up.returncode, up.stdout + up.stderr
        started = time.monotonic()
        _write(folder, TOPICS[3:])  # new files in the KB's folder: only they are queued
        again = home.run("ingest", str(folder), "--kb", "birds")
        run.codes["ingest again"], run.outputs["ingest again"] = again.returncode, again.stdout + again.stderr
        wait_for(lambda: _done(home, "birds", len(TOPICS)), "the worker to finish the second ingest")
        run.resume_s = time.monotonic() - started
        wait_for(lambda: _status(url) == 200, "serve to answer 200 after the servers came back")
        run.statuses.append(200)

        for name in stop_order:
            home.interrupt(name, run)
        return run
    finally:
        home.close()
