"""A finished map fills its KB's free map slot itself, without a trip through ``wiki_ingest``."""

from __future__ import annotations

import uuid

from stages.deps import build_deps
from stages.ingest import pump_ingest_lane
from stages.map import map_step
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import INGEST, SCOPE_KB

TEXT = (
    "The widget library draws widgets on screens. Widgets are small parts of a user interface. "
    "The widget library keeps a list of widgets and redraws them when they change. "
) * 3


def test_a_mapped_document_claims_the_next_one_in_its_thread(settings, clean_db):
    # Seen in bench/llm_pipeline.py: at 200 ms per model call a slot waited about as long for the
    # wiki_ingest message that refilled it as it spent on its document.
    two_slots = settings.model_copy(update={"ingest_map_parallel": 2})
    deps = build_deps(two_slots, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    ops = []
    for i in range(3):
        doc, _ = deps.docs.upsert(kb, title=f"Widgets {i}", source_uri=f"w{i}.md", content=TEXT + f" Part {i}.")
        ops.append(
            deps.ops.enqueue(
                tenant_id=kb.tenant_id,
                task_type=INGEST,
                scope=SCOPE_KB,
                scope_id=kb.id,
                op="ingest",
                dedup_key=doc.id,
                payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
            )
        )
    assert pump_ingest_lane(kb.tenant_id, kb.id, deps) == 2
    assert deps.ops.get(ops[2].id).claimed_at is None  # both slots taken: the third waits

    assert map_step(kb.tenant_id, kb.id, ops[0].dedup_key, ops[0].id, deps) == "mapped"

    assert deps.ops.get(ops[2].id).claimed_at is not None  # the freed slot went to it at once
    assert deps.ops.claimed_count(INGEST, SCOPE_KB, kb.id, two_slots.stale_claim_s) == 2


def test_the_cache_answers_for_the_first_name_that_has_a_result(settings, clean_db):
    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    doc, _ = deps.docs.upsert(kb, title="Widgets", source_uri="w.md", content=TEXT)
    extraction = OfflineExtractor().extract(doc.title, doc.content)
    other = extraction.model_copy(update={"summary": "another mode's answer"})
    deps.extractions.put(kb.id, doc.id, doc.content_hash, "llm-v1-json_object:m", extraction)
    deps.extractions.put(kb.id, doc.id, doc.content_hash, "llm-v1-fenced:m", other)

    names = ["llm-v1-json_schema:m", "llm-v1-json_object:m", "llm-v1-fenced:m"]
    found = deps.extractions.first_of(kb.id, doc.id, doc.content_hash, names)
    assert found is not None and found[1] == "llm-v1-json_object:m" and found[0] == extraction
    assert deps.extractions.first_of(kb.id, doc.id, doc.content_hash, names[::-1])[1] == "llm-v1-fenced:m"
    assert deps.extractions.first_of(kb.id, doc.id, "other-hash", names) is None
