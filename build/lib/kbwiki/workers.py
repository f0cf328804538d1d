"""Running Dramatiq worker processes on the ``actors`` package (``dramatiq actors:setup_broker``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


#: What the ``dramatiq`` command loads (as the Procfile does): the ``actors`` package, then the broker
#: its ``setup_broker`` builds from the environment, in each worker process.
BROKER = "actors:setup_broker"


def worker_command(processes: int, threads: int, watch: bool = False) -> list[str]:
    """The ``dramatiq`` command line for ``processes`` × ``threads`` workers."""
    cmd = [sys.executable, "-m", "dramatiq", BROKER, "--processes", str(processes), "--threads", str(threads)]
    if watch:
        cmd += ["--watch", str(ROOT)]
    return cmd


def start_workers(processes: int, threads: int, log_path: Path | None = None) -> subprocess.Popen:
    """Start workers in the background (they inherit DATABASE_URL / REDIS_URL from the environment)."""
    out = open(log_path, "ab") if log_path else None  # noqa: SIM115  (owned by the child)
    return subprocess.Popen(
        worker_command(processes, threads),
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=out,
        stderr=subprocess.STDOUT if out else None,
    )


def stop_workers(proc: subprocess.Popen, timeout_s: float = 30) -> None:
    """Ask the workers to finish their current messages (SIGTERM), then kill them after ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_workers(processes: int, threads: int, watch: bool = False) -> int:
    """Run workers in the foreground until they exit; returns their exit code."""
    proc = subprocess.Popen(worker_command(processes, threads, watch), cwd=ROOT, env=os.environ.copy())
    # SIGTERM (a platform stopping the dyno) goes to the workers, which finish their messages;
    # without this the dramatiq processes outlived the command.
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: proc.send_signal(signum))
    try:
        return proc.wait()
    except KeyboardInterrupt:
        stop_workers(proc)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
