"""`kbwiki worker` stops its Dramatiq processes when it gets SIGTERM (a platform stopping a dyno)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.e2e.conftest import wait_until

pytestmark = pytest.mark.e2e


def test_sigterm_stops_every_worker_process(pipeline_env):
    cmd = [sys.executable, "-c", "from kbwiki.cli import main; main()", "worker", "-p", "1", "-t", "1"]
    proc = subprocess.Popen(
        cmd, env={**os.environ, **pipeline_env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    children: list[psutil.Process] = []
    try:
        parent = psutil.Process(proc.pid)
        children = wait_until(
            lambda: len(parent.children(recursive=True)) >= 2 and parent.children(recursive=True),
            60,
            "the dramatiq processes to start",
        )
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
        wait_until(
            lambda: not any(c.is_running() and c.status() != psutil.STATUS_ZOMBIE for c in children),
            60,
            "every worker process to exit",
        )
    finally:
        for p in [*children, psutil.Process(proc.pid)] if proc.poll() is None else children:
            if p.is_running():
                p.kill()
