"""A re-ingest finds the unchanged documents of a chunk in two statements (issue 24): the bulk
check must call unchanged exactly the documents ``submit_document`` would, one by one."""

from __future__ import annotations

import uuid

from kbwiki.corpus import CorpusDoc, Rejected
from kbwiki.ingest import ingest_docs
from repos.knowledge import content_hash
from stages.ingest import prepare_document, submit_document, unchanged_sources
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)


def _doc(name: str, extra: str = "") -> CorpusDoc:
    text = f"# {name}\n\nThe {name} is a bird of the shore. It feeds on insects and small fish.{extra}\n"
    return CorpusDoc(title=name, source_uri=f"{name}.md", text=text)


def test_the_bulk_check_agrees_with_submitting_one_by_one(deps, clean_db):  # noqa: F811
    kb = deps.kbs.get_or_create(1, f"again-{uuid.uuid4().hex[:6]}")
    birds = ["Plover", "Curlew", "Dunlin", "Knot", "Stint"]
    first = ingest_docs(deps, kb, [_doc(b) for b in birds])
    assert first.counts == {"queued": len(birds)}
    ids = {b: deps.docs.find(kb.id, f"{b}.md").id for b in birds}
    deps.docs.set_status([ids["Plover"]], "done")  # written, but by no extractor of today's name
    deps.docs.set_status([ids["Curlew"]], "failed", "extraction failed 6 times")
    deps.docs.set_status([ids["Knot"]], "done")
    doc = deps.docs.get(ids["Knot"])
    deps.extractions.put(
        kb.id, doc.id, doc.content_hash, deps.extractor.name, deps.extractor.extract("Knot", doc.content)
    )
    again = [_doc(b, " It nests on tundra." if b == "Dunlin" else "") for b in birds]
    prepared = {}
    for d in again:
        title, content, _, _ = prepare_document(d.title, d.text, deps.settings)
        prepared[d.source_uri] = (title, content_hash(content))
    bulk = unchanged_sources(kb.id, prepared, deps)
    one_by_one = {
        d.source_uri
        for d in again
        if submit_document(
            deps, tenant_id=1, knowledge_base_id=kb.id, title=d.title, content=d.text, source_uri=d.source_uri
        ).status
        == "unchanged"
    }
    # Knot is written with today's extraction, Stint still pending: unchanged; Plover lacks today's
    # extraction, Curlew failed, Dunlin changed: submitted again
    assert bulk == one_by_one == {"Knot.md", "Stint.md"}


def test_a_reingest_counts_unchanged_rejected_and_changed_documents(deps, clean_db):  # noqa: F811
    kb = deps.kbs.get_or_create(1, f"again-{uuid.uuid4().hex[:6]}")
    docs = [_doc(f"Bird{i}") for i in range(7)]
    assert ingest_docs(deps, kb, docs).counts == {"queued": 7}
    changed = _doc("Bird3", " It winters in Africa.")
    report = ingest_docs(deps, kb, [*docs[:3], changed, *docs[4:], Rejected("a.png", "binary")])
    assert report.counts == {"unchanged": 6, "queued": 1, "rejected": 1}
    assert report.problems == ["rejected a.png: binary"]


def test_a_source_given_twice_in_one_chunk_ends_with_its_last_content(deps, clean_db):  # noqa: F811
    kb = deps.kbs.get_or_create(1, f"again-{uuid.uuid4().hex[:6]}")
    first = _doc("Godwit")
    ingest_docs(deps, kb, [first])
    changed = _doc("Godwit", " It flies nonstop across the Pacific.")
    report = ingest_docs(deps, kb, [changed, first])  # the second copy is the stored content again
    assert report.counts == {"queued": 2}
    assert deps.docs.get(deps.docs.find(kb.id, "Godwit.md").id).content_hash == content_hash(
        prepare_document(first.title, first.text, deps.settings)[1]
    )
