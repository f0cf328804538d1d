"""HeartbeatMiddleware: one line per outage, and the work an outage stalled goes on at its end."""

from __future__ import annotations

import threading

from structlog.testing import capture_logs

from middleware.heartbeat import HeartbeatMiddleware


def test_an_outage_is_logged_once_and_its_end_runs_recovered():
    failures = iter([True, True, True])  # three beats fail in a row, then they all succeed
    recovered = threading.Event()

    def beat():
        if next(failures, False):
            raise ConnectionError("server away")

    middleware = HeartbeatMiddleware(lambda: None, beat, lambda: None, interval_s=0.01, recovered=recovered.set)
    with capture_logs() as logs:
        middleware.after_worker_boot(None, None)
        try:
            assert recovered.wait(10), "recovered() was not called after the beats came back"
        finally:
            middleware.after_worker_shutdown(None, None)
    events = [entry["event"] for entry in logs]
    assert events.count("heartbeat.failed") == 1  # three failures in a row: one line
    assert events.count("heartbeat.recovered") == 1
