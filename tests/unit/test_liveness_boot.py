"""actors.liveness: a worker that PostgreSQL refused at boot takes its worker id on its first beat."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from actors.liveness import Liveness
from wiki.errors import DatabaseUnreachable


class _Workers:
    def __init__(self) -> None:
        self.beats: list[str] = []

    def beat(self, worker_id: str, host: str, pid: int) -> None:
        self.beats.append(worker_id)


def test_a_worker_refused_at_boot_carries_its_id_from_its_first_beat() -> None:
    deps = SimpleNamespace(worker_id=None, workers=_Workers())
    refusals = iter([DatabaseUnreachable('FATAL:  too many connections for role "kb"')])

    def deps_factory():
        for exc in refusals:
            raise exc
        return deps

    liveness = Liveness(deps_factory)
    with pytest.raises(DatabaseUnreachable):
        liveness.start()  # HeartbeatMiddleware logs it and beats on
    liveness.beat()
    # without the id its claims would wait KBWIKI_STALE_CLAIM_S (300 s) after a crash, not the TTL
    assert deps.worker_id == liveness.worker_id != ""
    assert deps.workers.beats == [liveness.worker_id]
