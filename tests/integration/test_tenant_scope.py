"""Every repository read and delete by tenant, KB or id sees only its own tenant's rows.

Two tenants each hold a KB of the same name, a document of the same source_uri and title, pages
of the same slugs and titles, an extraction, a queued op, a dead letter and a lint report. Each
read is asked about tenant 1's KB and must return tenant 1's rows only (a leak would double a
count or show tenant 2's marker); each delete for tenant 1 must leave tenant 2's rows whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from repos.dead_letters import TaskDeadLetterRepository
from repos.extractions import ExtractionRepository
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository, UnknownKnowledgeBase
from repos.lint import LintRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from wiki.lint import LintReport
from wiki.models import Document, ExtractedItem, Extraction, KnowledgeBase, Page, SourceRef

KB_NAME = "shared"
INGEST, REDUCE, KB_SCOPE = "wiki:ingest", "wiki:reduce", "knowledge_base"


@dataclass
class Tenant:
    kb: KnowledgeBase
    doc: Document
    op_id: int
    dead_letter_id: int
    page_ids: dict[str, int]


@dataclass
class World:
    kbs: KnowledgeBaseRepository
    docs: DocumentRepository
    pages: WikiPageRepository
    extractions: ExtractionRepository
    ops: TaskPendingOpsRepository
    dead: TaskDeadLetterRepository
    lint: LintRepository
    t: dict[int, Tenant]


EXTRACTION = Extraction(
    summary="Alpha is a thing.",
    body="Alpha is a thing.",
    items=[ExtractedItem(name="Alpha", kind="entity", description="A thing.")],
)


def _tenant(w: World, tenant: int) -> Tenant:
    kb = w.kbs.get_or_create(tenant, KB_NAME)
    doc, _ = w.docs.upsert(kb, title="Alpha", source_uri="a.md", content=f"Alpha is a thing of tenant {tenant}. " * 3)
    w.docs.set_status([doc.id], "failed", f"reason of tenant {tenant}")
    ref = [SourceRef(knowledge_id=doc.id, title="Alpha")]
    pages = [
        Page(
            tenant_id=tenant,
            knowledge_base_id=kb.id,
            slug="doc-alpha",
            title="Alpha",
            page_type="summary",
            content=f"T{tenant} summary of [[alpha|Alpha]].",
            summary=f"T{tenant}",
            source_refs=ref,
        ),
        Page(
            tenant_id=tenant,
            knowledge_base_id=kb.id,
            slug="alpha",
            title="Alpha",
            page_type="entity",
            content=f"T{tenant} Alpha, see [[beta|Beta]].",
            aliases=["Alfa"],
            source_refs=ref,
        ),
        Page(
            tenant_id=tenant,
            knowledge_base_id=kb.id,
            slug="beta",
            title="Beta",
            page_type="concept",
            content=f"T{tenant} Beta.",
            source_refs=ref,
        ),
    ]
    for page in pages:
        w.pages.save(page)
    saved = {p.slug: p.id for p in w.pages.get_many(kb.id, [p.slug for p in pages]).values()}
    w.extractions.put(kb.id, doc.id, doc.content_hash, "offline", EXTRACTION)
    w.extractions.put_merge_decisions(kb.id, "merge_v1:m", {("alfa", "s"): "alpha" if tenant == 1 else None})
    op = w.ops.enqueue(
        tenant_id=tenant,
        task_type=INGEST,
        scope=KB_SCOPE,
        scope_id=kb.id,
        op="ingest",
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id},
    )
    dead = w.dead.insert(
        task_type="wiki_reduce",
        tenant_id=tenant,
        scope=KB_SCOPE,
        scope_id=kb.id,
        related_id=doc.id,
        payload={"tenant": tenant},
        last_error="boom",
    )
    w.lint.save_report(
        LintReport(
            knowledge_base_id=kb.id,
            knowledge_base_name=KB_NAME,
            pages_checked=tenant,
            counts={},
            pages_affected={},
            fixed={},
            samples={},
            score=100,
            score_after_fix=100,
            summary=f"T{tenant}",
            fix=False,
            created_at=datetime.now(UTC),
            duration_ms=0,
        )
    )
    return Tenant(kb, doc, op.id, dead.id, saved)


@pytest.fixture()
def w(clean_db) -> World:
    pool = clean_db
    world = World(
        KnowledgeBaseRepository(pool),
        DocumentRepository(pool),
        WikiPageRepository(pool),
        ExtractionRepository(pool),
        TaskPendingOpsRepository(pool),
        TaskDeadLetterRepository(pool),
        LintRepository(pool),
        {},
    )
    for tenant in (1, 2):
        world.t[tenant] = _tenant(world, tenant)
    assert world.t[1].kb.id != world.t[2].kb.id and world.t[1].doc.id != world.t[2].doc.id
    return world


# ---- reads: (name, call with tenant 1's keys, check of the answer) ------------------------------


def _one(w, tenant=1):
    return w.t[tenant]


READS = {
    # knowledge bases
    "kbs.get_by_name": lambda w: w.kbs.get_by_name(1, KB_NAME).id == _one(w).kb.id,
    "kbs.get_or_create": lambda w: w.kbs.get_or_create(1, KB_NAME).id == _one(w).kb.id,
    "kbs.get_active": lambda w: w.kbs.get_active(1, _one(w).kb.id).tenant_id == 1,
    "kbs.get": lambda w: w.kbs.get(_one(w).kb.id).tenant_id == 1,
    # documents
    "docs.get": lambda w: w.docs.get(_one(w).doc.id).tenant_id == 1,
    "docs.get_many": lambda w: {d.tenant_id for d in w.docs.get_many([_one(w).doc.id]).values()} == {1},
    "docs.find by id": lambda w: w.docs.find(_one(w).kb.id, _one(w).doc.id).tenant_id == 1,
    "docs.find by source_uri": lambda w: w.docs.find(_one(w).kb.id, "a.md").id == _one(w).doc.id,
    "docs.find other tenant's id": lambda w: w.docs.find(_one(w).kb.id, _one(w, 2).doc.id) is None,
    "docs.count_by_status": lambda w: w.docs.count_by_status(_one(w).kb.id) == {"failed": 1},
    "docs.sample_not_written": lambda w: (
        [d["reason"] for d in w.docs.sample_not_written(_one(w).kb.id)] == ["reason of tenant 1"]
    ),
    # pages
    "pages.get": lambda w: w.pages.get(_one(w).kb.id, "alpha").content.startswith("T1 "),
    "pages.get_many": lambda w: (
        {p.tenant_id for p in w.pages.get_many(_one(w).kb.id, ["alpha", "beta"]).values()} == {1}
    ),
    "pages.lite_by_slugs": lambda w: len(w.pages.lite_by_slugs(_one(w).kb.id, ["alpha", "beta"])) == 2,
    "pages.summaries": lambda w: (
        w.pages.summaries(_one(w).kb.id, ["doc-alpha", "alpha"])
        == {
            "doc-alpha": "T1",
            "alpha": "",
        }
    ),
    "extractions.merge_decisions": lambda w: (
        w.extractions.merge_decisions(_one(w).kb.id, "merge_v1:m", [("alfa", "s")]) == {("alfa", "s"): "alpha"}
    ),
    "pages.existing_slugs": lambda w: w.pages.existing_slugs(_one(w).kb.id, ["alpha", "gamma"]) == {"alpha"},
    "pages.similar_titles": lambda w: [p.slug for p in w.pages.similar_titles(_one(w).kb.id, "Alpha")] == ["alpha"],
    "pages.similar_titles_many": lambda w: (
        [p.slug for p in w.pages.similar_titles_many(_one(w).kb.id, ["Alpha"])["alpha"]] == ["alpha"]
    ),
    "pages.title_matches": lambda w: (
        sorted(p.slug for _, p in w.pages.title_matches(_one(w).kb.id, ["alpha", "beta"])) == ["alpha", "beta"]
    ),
    "pages.slugs_by_source": lambda w: (
        w.pages.slugs_by_source(_one(w).kb.id, _one(w).doc.id) == ["alpha", "beta", "doc-alpha"]
    ),
    "pages.slugs_by_source other tenant's doc": lambda w: (
        w.pages.slugs_by_source(_one(w).kb.id, _one(w, 2).doc.id) == []
    ),
    "pages.slugs_by_sources": lambda w: (
        w.pages.slugs_by_sources(_one(w).kb.id, [_one(w).doc.id, _one(w, 2).doc.id]).get(_one(w, 2).doc.id, []) == []
    ),
    "pages.in_link_sources": lambda w: w.pages.in_link_sources(_one(w).kb.id, ["beta"]) == ["alpha"],
    "pages.recent": lambda w: [p.tenant_id for p in w.pages.recent(_one(w).kb.id, "summary")] == [1],
    "pages.counts_by_type": lambda w: (
        w.pages.counts_by_type(_one(w).kb.id) == {"summary": 1, "entity": 1, "concept": 1}
    ),
    "pages.link_stats": lambda w: w.pages.link_stats(_one(w).kb.id)["links"] == 2,
    "pages.iter_pages": lambda w: {p.tenant_id for p in w.pages.iter_pages(_one(w).kb.id)} == {1},
    "pages.cited_only_by": lambda w: w.pages.cited_only_by(_one(w).kb.id, ["alpha"], [_one(w, 2).doc.id]) == set(),
    # extractions
    "extractions.get": lambda w: (
        w.extractions.get(_one(w).kb.id, _one(w).doc.id, _one(w).doc.content_hash, "offline") == EXTRACTION
    ),
    "extractions.get other tenant's doc": lambda w: (
        w.extractions.get(_one(w).kb.id, _one(w, 2).doc.id, _one(w, 2).doc.content_hash, "offline") is None
    ),
    "extractions.get_many": lambda w: (
        list(
            w.extractions.get_many(
                _one(w).kb.id,
                {
                    _one(w).doc.id: (_one(w).doc.content_hash, "offline"),
                    _one(w, 2).doc.id: (_one(w, 2).doc.content_hash, "offline"),
                },
            )
        )
        == [_one(w).doc.id]
    ),
    # lint
    "lint.page_window": lambda w: (
        {p.slug for p in w.lint.page_window(_one(w).kb.id, 0)} == {"alpha", "beta", "doc-alpha"}
    ),
    "lint.slugs_with_in_links": lambda w: (
        w.lint.slugs_with_in_links(_one(w).kb.id, ["alpha", "beta", "doc-alpha"]) == {"alpha", "beta"}
    ),
    "lint.stale_source_refs": lambda w: (
        w.lint.stale_source_refs(_one(w).kb.id, list(_one(w, 2).page_ids.values())) == {}
    ),
    "lint.live_documents": lambda w: (
        w.lint.live_documents(_one(w).kb.id, [_one(w).doc.id, _one(w, 2).doc.id]) == {_one(w).doc.id}
    ),
    "lint.pages_titled": lambda w: (
        sorted(p.slug for p in w.lint.pages_titled(_one(w).kb.id, ["alpha"])) == ["alpha", "doc-alpha"]
    ),
    "lint.pages_with_alias": lambda w: [p.slug for p in w.lint.pages_with_alias(_one(w).kb.id, ["alfa"])] == ["alpha"],
    "lint.title_matches": lambda w: [p.slug for _, p in w.lint.title_matches(_one(w).kb.id, ["beta"])] == ["beta"],
    "lint.latest_report": lambda w: w.lint.latest_report(_one(w).kb.id).summary == "T1",
    # queued ops
    "ops.get": lambda w: w.ops.get(_one(w).op_id).tenant_id == 1,
    "ops.peek": lambda w: [o.tenant_id for o in w.ops.peek(INGEST, KB_SCOPE, _one(w).kb.id)] == [1],
    "ops.pending_count": lambda w: w.ops.pending_count(INGEST, KB_SCOPE, _one(w).kb.id) == 1,
    "ops.counts_by_lane": lambda w: w.ops.counts_by_lane(KB_SCOPE, _one(w).kb.id) == {INGEST: 1},
    "ops.claimed_count": lambda w: w.ops.claimed_count(INGEST, KB_SCOPE, _one(w).kb.id, 300) == 0,
    "ops.claim": lambda w: [o.tenant_id for o in w.ops.claim(INGEST, KB_SCOPE, _one(w).kb.id, 10, 300)] == [1],
    "ops.lanes_with_rows": lambda w: (
        {(lane.scope_id, lane.tenant_id) for lane in w.ops.lanes_with_rows()}
        == {(_one(w).kb.id, 1), (_one(w, 2).kb.id, 2)}
    ),
    # dead letters
    "dead.get": lambda w: w.dead.get(_one(w).dead_letter_id, tenant_id=1).tenant_id == 1,
    "dead.get other tenant's id": lambda w: w.dead.get(_one(w, 2).dead_letter_id, tenant_id=1) is None,
    "dead.list": lambda w: [d.id for d in w.dead.list(tenant_id=1)] == [_one(w).dead_letter_id],
    "dead.list by KB": lambda w: (
        [d.id for d in w.dead.list(tenant_id=1, scope=KB_SCOPE, scope_id=_one(w).kb.id)] == [_one(w).dead_letter_id]
    ),
    "dead.list another tenant's KB": lambda w: (
        w.dead.list(tenant_id=1, scope=KB_SCOPE, scope_id=_one(w, 2).kb.id) == []
    ),
    "dead.count": lambda w: (w.dead.count(tenant_id=1), w.dead.count(tenant_id=None)) == (1, 2),
}


@pytest.mark.parametrize("name", sorted(READS))
def test_read_sees_only_its_tenant(w, name):
    assert READS[name](w), name


def test_kbs_get_active_refuses_another_tenants_kb(w):
    with pytest.raises(UnknownKnowledgeBase):
        w.kbs.get_active(1, w.t[2].kb.id)


# ---- deletes: (call for tenant 1, tenant 1's rows gone) and tenant 2 untouched ------------------


def _tenant2_whole(w: World) -> None:
    two = w.t[2]
    assert w.kbs.get_active(2, two.kb.id).deleted_at is None
    doc = w.docs.get(two.doc.id)
    assert doc.status == "failed"
    assert w.pages.counts_by_type(two.kb.id) == {"summary": 1, "entity": 1, "concept": 1}
    assert w.extractions.get(two.kb.id, two.doc.id, two.doc.content_hash, "offline") == EXTRACTION
    assert w.ops.get(two.op_id) is not None
    assert w.dead.get(two.dead_letter_id, tenant_id=2) is not None


def _mark_deleting(w, one):
    assert w.docs.mark_deleting(one.kb.id, one.doc.id) is not None
    assert w.docs.mark_deleting(one.kb.id, w.t[2].doc.id) is None  # another KB's document: untouched
    w.docs.mark_deleted([one.doc.id])
    assert w.docs.get(one.doc.id).status == "deleted"


DELETES = {
    "kbs.mark_deleted": lambda w, one: (
        w.kbs.mark_deleted(2, one.kb.id) is None and w.kbs.mark_deleted(1, one.kb.id).deleted_at is not None
    ),
    "docs.mark_deleting + mark_deleted": lambda w, one: _mark_deleting(w, one) is None,
    "docs.mark_kb_deleted": lambda w, one: w.docs.mark_kb_deleted(one.kb.id) == 1,
    "pages.delete": lambda w, one: w.pages.delete(one.kb.id, "alpha") and w.pages.get(one.kb.id, "alpha") is None,
    "pages.delete_many": lambda w, one: sorted(w.pages.delete_many(one.kb.id, ["alpha", "beta"])) == ["alpha", "beta"],
    "pages.delete_kb": lambda w, one: w.pages.delete_kb(one.kb.id) == 3,
    "extractions.delete_other_versions": lambda w, one: (
        w.extractions.delete_other_versions(one.kb.id, {one.doc.id: "", w.t[2].doc.id: ""}) == 1
    ),
    "ops.delete_by_ids": lambda w, one: w.ops.delete_by_ids([one.op_id]) == 1,
    "ops.delete_by_dedup_key": lambda w, one: w.ops.delete_by_dedup_key(INGEST, KB_SCOPE, one.kb.id, one.doc.id) == 1,
    "ops.delete_by_dedup_key other tenant's doc": lambda w, one: (
        w.ops.delete_by_dedup_key(INGEST, KB_SCOPE, one.kb.id, w.t[2].doc.id) == 0
    ),
    "ops.delete_by_scope": lambda w, one: w.ops.delete_by_scope(KB_SCOPE, one.kb.id) == 1,
    "dead.delete": lambda w, one: (
        not w.dead.delete(w.t[2].dead_letter_id, tenant_id=1) and w.dead.delete(one.dead_letter_id, tenant_id=1)
    ),
    "dead.purge by ids": lambda w, one: w.dead.purge(tenant_id=1, ids=[one.dead_letter_id, w.t[2].dead_letter_id]) == 1,
    "dead.purge everything": lambda w, one: w.dead.purge(tenant_id=1, everything=True) == 1,
    "dead.purge by task type": lambda w, one: w.dead.purge(tenant_id=1, task_type="wiki_reduce") == 1,
    "dead.purge by KB": lambda w, one: w.dead.purge(tenant_id=1, scope=KB_SCOPE, scope_id=w.t[2].kb.id) == 0,
}


@pytest.mark.parametrize("name", sorted(DELETES))
def test_delete_leaves_the_other_tenant_whole(w, name):
    assert DELETES[name](w, w.t[1]), name
    _tenant2_whole(w)
