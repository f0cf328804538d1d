"""The wiki is complete (what ``kbwiki ingest --wait`` waits for) only once its index shows every batch.

Stage functions run in-process against real PostgreSQL, one step at a time, so the moment between
"cross-links done" and "index rebuilt" that an export could fall into is held open on purpose.
"""

from __future__ import annotations

import uuid

from kbwiki.ingest import wait_for_lanes
from stages.backlink import run_backlink
from stages.crosslink import run_crosslink
from stages.deps import build_deps
from stages.index import rebuild_index
from stages.reduce import run_reduce_batch
from tests.integration.test_reduce import _mapped
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import BACKLINK, FINALIZE, INDEX, SCOPE_KB
from wiki.models import ExtractedItem, Extraction
from wiki.slugs import INDEX_SLUG


def _extraction(name: str) -> Extraction:
    item = ExtractedItem(
        name=name, kind="concept", description=f"{name} is a scheme.", evidence=[f"{name} is a scheme."]
    )
    return Extraction(summary=f"About {name}.", body=f"About {name}.", items=[item])


def _link_all(deps, kb) -> None:
    """Back-link and cross-link until both lanes are empty (every document is reduced already)."""
    while deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id):
        assert run_backlink(kb.tenant_id, kb.id, deps).claimed
    while deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id):
        assert run_crosslink(kb.tenant_id, kb.id, deps).claimed


def test_wait_returns_only_once_the_index_shows_the_batch(settings, clean_db):
    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    for title in ("Alpha", "Beta"):
        _mapped(deps, kb, title, _extraction(f"{title} scheme"))

    run_reduce_batch(kb.tenant_id, kb.id, deps)
    assert deps.ops.pending_count(INDEX, SCOPE_KB, kb.id) == 1  # queued with the batch's pages
    _link_all(deps, kb)
    # cross-links done, no batch active, but the index is behind: not complete
    assert deps.pages.get(kb.id, INDEX_SLUG) is None
    assert wait_for_lanes(deps, kb, 2, timeout_s=0.2, progress=False) is False

    rebuild_index(kb.tenant_id, kb.id, deps)
    assert wait_for_lanes(deps, kb, 2, timeout_s=5, progress=False) is True
    index = deps.pages.get(kb.id, INDEX_SLUG)
    assert "doc-alpha" in index.content and "doc-beta" in index.content


def test_a_rebuild_leaves_the_requests_of_later_batches(settings, clean_db):
    from stages.index import request_index

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    _mapped(deps, kb, "Gamma", _extraction("Gamma scheme"))
    run_reduce_batch(kb.tenant_id, kb.id, deps)
    with deps.pool.connection() as conn:  # a batch that commits while the rebuild runs
        request_index(kb, conn, ops=deps.ops)
        rebuild_index(kb.tenant_id, kb.id, deps)  # cannot see the uncommitted request
    assert deps.ops.pending_count(INDEX, SCOPE_KB, kb.id) == 1
    rebuild_index(kb.tenant_id, kb.id, deps)
    assert deps.ops.pending_count(INDEX, SCOPE_KB, kb.id) == 0


def test_a_batch_that_only_deletes_pages_queues_a_rebuild(settings, clean_db):
    from stages.delete import delete_document

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    kid = _mapped(deps, kb, "Delta", _extraction("Delta scheme"))
    run_reduce_batch(kb.tenant_id, kb.id, deps)
    rebuild_index(kb.tenant_id, kb.id, deps)
    _link_all(deps, kb)
    assert "doc-delta" in deps.pages.get(kb.id, INDEX_SLUG).content

    delete_document(kb.tenant_id, kb.id, kid, deps)  # its retract goes straight to reduce
    result = run_reduce_batch(kb.tenant_id, kb.id, deps)
    assert result.retracted == 1 and deps.ops.pending_count(INDEX, SCOPE_KB, kb.id) == 1
    assert wait_for_lanes(deps, kb, 0, timeout_s=0.2, progress=False) is False
    rebuild_index(kb.tenant_id, kb.id, deps)
    assert "doc-delta" not in deps.pages.get(kb.id, INDEX_SLUG).content
