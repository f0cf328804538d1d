"""Lane rows for tests and benchmarks: an op on a KB's lane, and a document as map leaves it."""

from __future__ import annotations

from typing import Any

from wiki.lanes import REDUCE, SCOPE_KB
from wiki.models import Extraction, KnowledgeBase


def lane_op(deps, kb: KnowledgeBase, task_type: str, key: str = "", op: str = "ingest", payload: dict | None = None):
    """Append one op to ``kb``'s lane ``task_type`` (``PendingOpRepository.enqueue``); returns the row."""
    return deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=task_type,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=op,
        dedup_key=key,
        payload=payload,
    )


def mapped_document(deps, kb: KnowledgeBase, title: str, extraction: Extraction, **doc: Any) -> str:
    """Store a document as the map stage leaves it: its row (``title``, source ``<title>.md`` and
    a short text unless ``doc`` says otherwise), its extraction under the deps' extractor, and its
    op on the reduce lane. Returns its knowledge id."""
    doc = {"source_uri": f"{title}.md", "content": f"{title} text " * 20, **doc}
    stored, _ = deps.docs.upsert(kb, title=title, **doc)
    deps.extractions.put(kb.id, stored.id, stored.content_hash, deps.extractor.name, extraction)
    payload = {"content_hash": stored.content_hash, "extractor": deps.extractor.name}
    lane_op(deps, kb, REDUCE, key=stored.id, payload=payload)
    return stored.id
