"""End-to-end fixtures: the real ``actors`` package on a RedisBroker, with real worker threads.

The broker (``actors.setup_broker``) and the process-wide Deps read the environment, so it is
pointed at the session database and a private Redis namespace first.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import dramatiq
import pytest

from tests.conftest import REDIS_URL, SESSION_PREFIX


@pytest.fixture(scope="session")
def pipeline_env(database_url: str) -> Iterator[dict]:
    """Environment for the actors package: test database, own Redis namespace, fast triggers."""
    mp = pytest.MonkeyPatch()
    env = {
        "DATABASE_URL": database_url,
        "REDIS_URL": REDIS_URL,
        "KBWIKI_REDIS_NAMESPACE": f"{SESSION_PREFIX}-dramatiq",
        "KBWIKI_KEY_PREFIX": SESSION_PREFIX,
        "KBWIKI_DEBOUNCE_MS": "0",
        "KBWIKI_STALE_CLAIM_S": "10",
        "KBWIKI_SWEEP_INTERVAL_S": "2",
        "KBWIKI_INGEST_BATCH_SIZE": "4",
    }
    for key, value in env.items():
        mp.setenv(key, value)
    from wiki.settings import get_settings

    get_settings.cache_clear()
    yield env
    mp.undo()
    get_settings.cache_clear()


@pytest.fixture(scope="session")
def actors_broker(pipeline_env):
    """The broker of the real ``actors`` package, built from the pipeline's environment."""
    import actors

    broker = actors.setup_broker()
    yield broker
    broker.flush_all()
    for key in broker.client.scan_iter(f"{SESSION_PREFIX}*"):  # heartbeats have no TTL
        broker.client.delete(key)


@pytest.fixture()
def deps(actors_broker):
    """The process-wide Deps the actors use."""
    from stages.deps import get_deps

    return get_deps()


@pytest.fixture()
def worker(actors_broker) -> Iterator[dramatiq.Worker]:
    """Real worker threads consuming every queue of the actors package."""
    w = dramatiq.Worker(actors_broker, worker_threads=4, worker_timeout=100)
    w.start()
    yield w
    w.stop()


def wait_until(condition: Callable[[], object], timeout_s: float = 120, what: str = "condition") -> object:
    """Poll ``condition`` until it returns something truthy; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
