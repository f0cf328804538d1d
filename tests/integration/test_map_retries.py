"""The map stage's edges: a document handled twice at once, and the backoff of a failed document."""

from __future__ import annotations

import uuid

from stages.claims import backoff_s
from stages.deps import build_deps
from stages.map import map_document
from stages.reduce import run_reduce_batch
from tests.e2e.conftest import wait_until
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import INGEST, REDUCE, SCOPE_KB

TEXT = (
    "The widget library draws widgets on screens. Widgets are small parts of a user interface. "
    "The widget library keeps a list of widgets and redraws them when they change. "
) * 3


class _RacedExtractor(OfflineExtractor):
    """The offline extractor, during whose first extraction another worker maps and reduces the same
    op (as when a claim was taken back from a worker thought dead and claimed again)."""

    def __init__(self, other_handler):
        super().__init__()
        self.other_handler = other_handler
        self.raced = False

    def extract(self, title, text):
        if not self.raced:
            self.raced = True
            self.other_handler()
        return super().extract(title, text)


class _FailingExtractor(OfflineExtractor):
    """An extractor whose backend is down: every call raises a transient error."""

    def extract(self, title, text):
        raise ConnectionError("backend unreachable")


def _queued(deps, kb, title: str):
    doc, _ = deps.docs.upsert(kb, title=title, source_uri=f"{title}.md", content=TEXT)
    op = deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op="ingest",
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
    )
    return doc, op


def test_a_map_whose_op_was_finished_meanwhile_leaves_the_document_done(settings, clean_db):
    # Read in the code: map moved an op that was already gone and set a finished document back to
    # "mapped"; it then stayed "mapped" although its pages were written.
    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    doc, op = _queued(deps, kb, "Widgets")

    def other_worker():
        assert map_document(kb.tenant_id, kb.id, doc.id, op.id, deps) == "mapped"
        assert run_reduce_batch(kb.tenant_id, kb.id, deps).documents == 1

    raced = build_deps(settings, pool=clean_db, extractor=_RacedExtractor(other_worker))
    assert map_document(kb.tenant_id, kb.id, doc.id, op.id, raced) == "gone"
    assert deps.docs.get(doc.id).status == "done"
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id) == 0


def test_a_failed_document_waits_its_backoff_before_the_next_attempt(settings, clean_db):
    # Seen: five retries spent in 1.4 s, so one short outage of the extractor dead-lettered a document.
    fast = settings.model_copy(update={"document_retry_backoff_ms": 300, "document_retry_backoff_max_ms": 5000})
    deps = build_deps(fast, pool=clean_db, extractor=_FailingExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    doc, op = _queued(deps, kb, "Widgets")

    assert deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300) == [deps.ops.get(op.id)]
    assert map_document(kb.tenant_id, kb.id, doc.id, op.id, deps) == "retry"
    backing_off = deps.ops.get(op.id)
    assert backing_off.claimed_at is None and backing_off.not_before is not None
    assert deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300) == []  # not before its backoff ends
    assert [
        o.id
        for o in wait_until(
            lambda: deps.ops.claim(INGEST, SCOPE_KB, kb.id, 10, 300), 10, "the op claimable after its backoff"
        )
    ] == [op.id]


def test_the_backoff_schedule_doubles_with_jitter_up_to_its_cap(settings, pool):
    deps = build_deps(
        settings.model_copy(update={"document_retry_backoff_ms": 1000, "document_retry_backoff_max_ms": 60_000}),
        pool=pool,
    )
    for fails in range(1, 6):
        low = 2 ** (fails - 1)
        delays = {backoff_s(deps.settings, fails) for _ in range(50)}
        assert all(low <= d < 2 * low for d in delays), (fails, delays)
        assert len(delays) > 1  # jittered: documents failing together come back apart
    assert all(30 <= backoff_s(deps.settings, 20) <= 60 for _ in range(20))
    off = build_deps(settings.model_copy(update={"document_retry_backoff_ms": 0}), pool=pool)
    assert backoff_s(off.settings, 3) == 0
