"""The faults of ``bench/chaos.py`` that need more than a signal: a paused supervisor, a full disk,
exhausted connections, a second host cut off from the servers, a frozen worker caught holding a
transaction, and the progress timeline stalls are measured on.

Each needs root where it touches the machine (a tmpfs mount, a network namespace); ``chaos.py``
skips those faults, and says so in its report, when it runs as another user.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg

from tests.support.tcp_proxy import TcpProxy

# --- progress timeline ------------------------------------------------------------------------


class Timeline:
    """Samples a progress count (documents done) every ``every_s`` seconds in a thread, so the stall
    around a fault is read afterwards: the longest time the count did not grow while work was
    pending. A sample that fails (a server away) records nothing."""

    def __init__(self, count: Callable[[], int], pending: Callable[[], int], every_s: float = 0.5) -> None:
        self._count, self._pending, self.every_s = count, pending, every_s
        self.times: list[float] = []  # monotonic seconds of each sample
        self.counts: list[int] = []
        self.pendings: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="chaos-timeline", daemon=True)

    def start(self) -> Timeline:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                count, pending = self._count(), self._pending()
            except Exception:  # a server away: no sample
                continue
            self.times.append(time.monotonic())
            self.counts.append(count)
            self.pendings.append(pending)

    def progress_after(self, t: float) -> float | None:
        """Seconds from ``t`` until the count first grew past its value at ``t``: 0 when nothing was
        pending at ``t``, None when it never grew."""
        i = bisect.bisect_left(self.times, t)
        if i >= len(self.times) or self.pendings[i] == 0:
            return 0.0
        base = self.counts[i - 1] if i > 0 else self.counts[i]
        for j in range(i, len(self.times)):
            if self.counts[j] > base:
                return round(self.times[j] - t, 1)
        return None

    def longest_stall(self, start: float, end: float) -> float | None:
        """The longest time within [start, end] the count did not grow while work was pending
        (from ``start`` to the first growth and from the last growth to ``end`` included); None
        when no sample fell in the window."""
        lo, hi = bisect.bisect_left(self.times, start), bisect.bisect_right(self.times, end)
        if lo >= hi:
            return None
        longest, since = 0.0, start
        last = self.counts[lo - 1] if lo > 0 else self.counts[lo]
        for j in range(lo, hi):
            if self.counts[j] > last or self.pendings[j] == 0:
                longest = max(longest, self.times[j] - since)
                since, last = self.times[j], self.counts[j]
        if self.pendings[hi - 1] > 0:
            longest = max(longest, end - since)
        return round(longest, 1)


# --- the servers' supervisor ------------------------------------------------------------------


@contextlib.contextmanager
def supervisor_paused(pid: int) -> Iterator[None]:
    """Stop the home's supervisor (SIGSTOP) for the block, so an outage made on purpose is not
    repaired at its first health check; it resumes (SIGCONT) and repairs what is still down."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


# --- a full disk ------------------------------------------------------------------------------


def mount_tmpfs(folder: Path, size_mb: int) -> None:
    """Mount a tmpfs of ``size_mb`` MiB on ``folder`` (root only; raises CalledProcessError)."""
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", "tmpfs", str(folder)], check=True)


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], check=False)


def fill_disk(path: Path, chunk_mb: int = 16) -> int:
    """Write zeros to ``path`` until the file system is full; returns the bytes written."""
    chunk = b"\0" * (chunk_mb << 20)
    written = 0
    with open(path, "wb", buffering=0) as fh:
        while True:
            try:
                written += fh.write(chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) <= 4096:
                    return written
                chunk = chunk[: len(chunk) // 4]  # fill the last few MiB too


# --- connections --------------------------------------------------------------------------------


def exhaust_connections(url: str, cap: int = 2000) -> list[psycopg.Connection]:
    """Open connections to ``url`` until the server refuses one (``too many clients``, or the slots
    kept for superusers); returns them (the caller closes them)."""
    held: list[psycopg.Connection] = []
    while len(held) < cap:
        try:
            held.append(psycopg.connect(url, connect_timeout=5, autocommit=True))
        except psycopg.OperationalError:
            break
    return held


# --- a frozen worker holding a transaction ------------------------------------------------------


def backends_in_transaction(url: str, application_name: str) -> list[int]:
    """PostgreSQL backend pids of ``application_name`` with a transaction open (``xact_start`` set,
    not ``idle``)."""
    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        return [
            r[0]
            for r in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND xact_start IS NOT NULL"
                " AND state <> 'idle'",
                (application_name,),
            )
        ]


def backend_alive(url: str, pid: int) -> bool:
    with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0] > 0


def freeze_in_transaction(group: int, url: str, application_name: str, timeout_s: float = 120) -> list[int]:
    """SIGSTOP process group ``group`` at a moment one of its sessions has a transaction open (it
    polls, stops, checks again, and resumes to try again when the transaction ended just before);
    returns the backend pids left holding a transaction. Raises TimeoutError when it never catches one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if backends_in_transaction(url, application_name):
            os.killpg(group, signal.SIGSTOP)
            if held := backends_in_transaction(url, application_name):
                return held
            os.killpg(group, signal.SIGCONT)
        time.sleep(0.005)
    raise TimeoutError(f"no transaction of {application_name} open within {timeout_s:.0f} s")


# --- a second host ---------------------------------------------------------------------------------


class Host:
    """A second "host": network namespace ``name`` joined to this one by a veth pair (this side
    ``10.231.0.1``, the host's side ``10.231.0.2``), reaching the servers through TCP forwarders
    listening on this side's address. ``cut()`` takes the link down (packets dropped, connections
    hang as on a real network partition); ``join()`` brings it back. Root only."""

    HERE, THERE = "10.231.0.1", "10.231.0.2"

    def __init__(self, name: str, upstreams: dict[str, int]) -> None:
        self.name, self.veth = name, f"{name[:8]}0"
        self._ip("netns", "add", name)
        self._ip("link", "add", self.veth, "type", "veth", "peer", "name", f"{name[:8]}1")
        self._ip("link", "set", f"{name[:8]}1", "netns", name)
        self._ip("addr", "add", f"{self.HERE}/30", "dev", self.veth)
        self._ip("link", "set", self.veth, "up")
        self._ip("netns", "exec", name, "ip", "addr", "add", f"{self.THERE}/30", "dev", f"{name[:8]}1")
        self._ip("netns", "exec", name, "ip", "link", "set", f"{name[:8]}1", "up")
        self._ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
        self.ports: dict[str, int] = {}
        self._proxies: list[TcpProxy] = []
        for label, port in upstreams.items():
            proxy = TcpProxy(("127.0.0.1", port), listen_host=self.HERE)
            proxy.up()
            self._proxies.append(proxy)
            self.ports[label] = proxy.port

    @staticmethod
    def _ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    def command(self, cmd: list[str]) -> list[str]:
        """``cmd`` run inside the host's namespace."""
        return ["ip", "netns", "exec", self.name, *cmd]

    def cut(self) -> None:
        self._ip("link", "set", self.veth, "down")

    def join(self) -> None:
        self._ip("link", "set", self.veth, "up")

    def close(self) -> None:
        for proxy in self._proxies:
            proxy.down()
        subprocess.run(["ip", "link", "del", self.veth], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", self.name], check=False, capture_output=True)
