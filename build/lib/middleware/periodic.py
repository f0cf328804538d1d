"""Run a function on worker boot and then every ``interval_s`` seconds, in a daemon thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

import dramatiq
import structlog

log = structlog.get_logger(__name__)


class PeriodicMiddleware(dramatiq.Middleware):
    """Calls ``fn()`` once when a worker boots and then every ``interval_s`` seconds until it stops.

    Used for the recovery sweeper (re-trigger lanes with rows, reclaim stale claims). Errors are
    logged as ``periodic.failed`` and the next tick runs anyway. Several worker processes each run
    their own ticks; ``fn`` must be idempotent.
    """

    def __init__(self, fn: Callable[[], object], interval_s: float, name: str = "periodic") -> None:
        self.fn = fn
        self.interval_s = interval_s
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def after_worker_boot(self, broker, worker) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"kbwiki-{self.name}", daemon=True)
        self._thread.start()

    def before_worker_shutdown(self, broker, worker) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.fn()
            except Exception as exc:  # a failed sweep must not kill the thread
                log.warning("periodic.failed", task=self.name, error=repr(exc))
            self._stop.wait(self.interval_s)
