"""Deleting many documents finishes on the pipeline's own triggers (issue 27, deliverable 4).

A fault run deleted 60 documents in 274.7 s: each recovery sweep (every 30 s) moved the few
retracts one pump claimed, and nothing else triggered the rest. Here the sweeper and the
stale-claim takeback are an hour away, so only a trigger path that carries every retract to the
end can finish: the test waits for it with a deadline and never for time.
"""

from __future__ import annotations

import uuid

import dramatiq
import pytest

from middleware.periodic import PeriodicMiddleware
from tests.e2e.conftest import wait_until
from tests.support.corpus import shipped_docs
from tests.support.pipeline import submit_all

pytestmark = pytest.mark.e2e

#: More documents than two claims of the ingest lane's map slots (16): a pump claim of retracts
#: that does not pump again leaves some behind.
N_DOCS = 40
#: Longer than the test can take: no sweep and no stale-claim takeback happens during it.
NEVER_S = 3600


@pytest.fixture()
def worker_without_sweeps(actors_broker, deps, monkeypatch):
    """Real worker threads whose recovery sweeper and stale-claim takeback are an hour away, and
    triggers debounced as by default (500 ms: a burst of deletes is one trigger)."""
    sweeper = next(m for m in actors_broker.middleware if isinstance(m, PeriodicMiddleware))
    monkeypatch.setattr(sweeper, "interval_s", NEVER_S)
    monkeypatch.setattr(deps.settings, "stale_claim_s", NEVER_S)
    monkeypatch.setattr(deps.settings, "debounce_ms", 500)
    w = dramatiq.Worker(actors_broker, worker_threads=4, worker_timeout=100)
    w.start()
    yield w
    w.stop()


def test_deleting_many_documents_finishes_without_the_sweeper(deps, worker_without_sweeps):
    from kbwiki.ingest import lane_rows
    from stages.delete import DELETE_BATCH, delete_documents

    kb = deps.kbs.get_or_create(1, f"e2e-delete-many-{uuid.uuid4().hex[:6]}")
    ids = submit_all(deps, kb, shipped_docs()[:N_DOCS])

    def settled():
        counts = deps.docs.count_by_status(kb.id)
        return not any(counts.get(s) for s in ("pending", "mapped", "deleting")) and not lane_rows(deps, kb.id)

    wait_until(settled, 300, f"{N_DOCS} documents ingested")
    assert deps.pages.counts_by_type(kb.id).get("summary", 0) > N_DOCS // 2

    for start in range(0, N_DOCS, DELETE_BATCH):  # as `kbwiki delete` sends them
        results = delete_documents(kb.tenant_id, kb.id, ids[start : start + DELETE_BATCH], deps)
        assert {r.status for r in results} == {"deleting"}

    def gone():
        pages = deps.pages.counts_by_type(kb.id)
        return (
            deps.docs.count_by_status(kb.id) == {"deleted": N_DOCS}
            and not lane_rows(deps, kb.id)
            and set(pages) <= {"index"}
        )

    wait_until(gone, 120, f"{N_DOCS} documents deleted, their pages gone, every lane empty")
    assert deps.pages.link_stats(kb.id)["dead_links"] == 0
