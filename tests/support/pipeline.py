"""Running every stage of a KB in the test's own thread until its lanes are empty (no broker)."""

from __future__ import annotations

import pytest


def submit_all(deps, kb, docs) -> list[str]:
    """Submit ``docs`` (``kbwiki.corpus.CorpusDoc``: title, text, source_uri) to ``kb`` as a producer
    does (``stages.ingest.submit_document``), asserting each is queued; returns their knowledge ids."""
    from stages.ingest import submit_document

    ids = []
    for doc in docs:
        result = submit_document(
            deps,
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=doc.title,
            content=doc.text,
            source_uri=doc.source_uri,
        )
        assert result.status == "queued", (doc.source_uri, result.status)
        ids.append(result.knowledge_id)
    return ids


def settle(deps, kb, max_rounds: int = 50, leads: bool = True) -> None:
    """Pump, map, reduce, write page leads, back-link, cross-link and rebuild the index of ``kb``
    until every lane is empty; fails the test when they never empty. Map runs in the ingest lane's
    order, reduce in batches of the KB's batch size; ``leads=False`` leaves the lead lane as it is
    (and the linking that waits for it, ``stages.pacing``)."""
    from kbwiki.ingest import lane_rows
    from stages.backlink import run_backlink
    from stages.crosslink import run_crosslink
    from stages.index import rebuild_index
    from stages.ingest import pump_ingest_lane
    from stages.leads import run_leads
    from stages.map import map_document
    from stages.reduce import run_reduce_batch
    from wiki.lanes import BACKLINK, FINALIZE, INGEST, LEAD, OP_INGEST, REDUCE, SCOPE_KB

    for _ in range(max_rounds):
        pump_ingest_lane(kb.tenant_id, kb.id, deps)
        for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 1000):
            if op.claimed_at is not None and op.op == OP_INGEST:
                map_document(kb.tenant_id, kb.id, op.dedup_key, op.id, deps)
        while deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id):
            result = run_reduce_batch(kb.tenant_id, kb.id, deps)
            if not (result.documents or result.retracted or result.failed):
                break
        while leads and deps.ops.pending_count(LEAD, SCOPE_KB, kb.id):
            if not run_leads(kb.tenant_id, kb.id, deps).claimed:
                break  # paused, dropped or backing off
        while deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id):
            if not run_backlink(kb.tenant_id, kb.id, deps).claimed:
                break  # waiting for the documents still being mapped
        while deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id):
            if not run_crosslink(kb.tenant_id, kb.id, deps).claimed:
                break  # waiting for the documents still being mapped
        rebuild_index(kb.tenant_id, kb.id, deps)
        waiting = (LEAD, BACKLINK, FINALIZE) if not leads and deps.ops.pending_count(LEAD, SCOPE_KB, kb.id) else ()
        if lane_rows(deps, kb.id) == sum(deps.ops.pending_count(lane, SCOPE_KB, kb.id) for lane in waiting):
            return
    pytest.fail(f"lanes of {kb.id} never emptied: {deps.ops.counts_by_lane(SCOPE_KB, kb.id)}")
