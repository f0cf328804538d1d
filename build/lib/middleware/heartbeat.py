"""Announce a worker process while it runs, in a daemon thread beside Dramatiq's worker threads."""

from __future__ import annotations

import threading
from collections.abc import Callable

import dramatiq
import structlog

log = structlog.get_logger(__name__)


class HeartbeatMiddleware(dramatiq.Middleware):
    """Calls ``start()`` before the worker consumes anything, ``beat()`` every ``interval_s``
    seconds while it runs (until its last message finished), and ``stop()`` when it shut down cleanly.

    ``start`` runs before the worker threads exist, so nothing is claimed under a worker id that
    was not announced yet. A worker killed with SIGKILL calls nothing: its silence is the signal
    (other workers' ``beat`` takes back what it held). Errors are logged as ``heartbeat.failed``
    and the next beat runs anyway (a database outage must not stop the thread).
    """

    def __init__(
        self,
        start: Callable[[], object],
        beat: Callable[[], object],
        stop: Callable[[], object],
        interval_s: float,
        recovered: Callable[[], object] | None = None,
    ) -> None:
        self.start, self.beat, self.stop, self.recovered = start, beat, stop, recovered
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def before_worker_boot(self, broker, worker) -> None:
        self._call(self.start, "start")

    def after_worker_boot(self, broker, worker) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="kbwiki-heartbeat", daemon=True)
        self._thread.start()

    def after_worker_shutdown(self, broker, worker) -> None:
        # beats go on while the worker finishes its messages (a reduce batch can take a while):
        # silent for the worker TTL, it would have its claims taken back mid-batch
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.interval_s + 5)
        self._call(self.stop, "stop")

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._call(self.beat, "beat")

    def _call(self, fn: Callable[[], object], what: str) -> None:
        try:
            fn()
        except Exception as exc:
            if not self._failing:  # once per outage, not every beat
                log.warning("heartbeat.failed", step=what, error=repr(exc), retrying_every_s=self.interval_s)
            self._failing = True
            return
        if self._failing:
            log.info("heartbeat.recovered", step=what)
            self._failing = False
            if self.recovered is not None:  # work left waiting by the outage goes on now, not at the next sweep
                self._call(self.recovered, "recovered")
