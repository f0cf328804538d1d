"""Page revisions on real PostgreSQL: every page write keeps the version it replaces when its content
or sources change, at most ``revisions_keep`` per page, in a constant number of statements; the
sources of a kept version come back from the deltas; KB deletes drop the history, soft deletes
keep it; reads are tenant-scoped."""

from __future__ import annotations

import pytest

from repos.pages import WikiPageRepository
from repos.revisions import PageRevisionRepository
from repos.web import WebRepository
from wiki.models import Page, SourceRef
from wiki.revisions import MAX_REF_CHANGES, sources_at


def _refs(*ids: int) -> list[SourceRef]:
    return [SourceRef(knowledge_id=f"doc-{i}", title=f"Document {i}") for i in ids]


def _page(kb_id: str, content: str, refs: list[SourceRef], slug: str = "hub", title: str = "Hub", tenant: int = 1):
    return Page(
        tenant_id=tenant,
        knowledge_base_id=kb_id,
        slug=slug,
        title=title,
        page_type="entity",
        content=content,
        source_refs=refs,
    )


def _count(pool, sql: str, *args) -> int:
    with pool.connection() as conn:
        return conn.execute(sql, args).fetchone()["n"]


@pytest.fixture()
def kb(clean_db):
    from repos.knowledge import KnowledgeBaseRepository

    return KnowledgeBaseRepository(clean_db).get_or_create(1, "revisions")


def test_a_write_keeps_the_version_it_replaces_only_when_content_or_sources_change(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db), PageRevisionRepository(clean_db)
    pages.save(_page(kb.id, "First text.\n", _refs(1)), written_by="document:doc-1")
    pages.save(_page(kb.id, "First text.\n", _refs(1), title="HUB"), written_by="lint")  # title only: no revision
    assert pages.get(kb.id, "hub").version == 2
    assert [h.version for h in revisions.history(1, kb.id, "hub")] == [2]  # the current version alone
    pages.save(_page(kb.id, "Second text.\n", _refs(1, 2)), written_by="batch:7")

    history = revisions.history(1, kb.id, "hub")
    assert [(h.version, h.written_by, h.current) for h in history] == [(3, "batch:7", True), (2, "lint", False)]
    assert [(h.size, h.sources) for h in history] == [(len("Second text.\n"), 2), (len("First text.\n"), 1)]
    page = pages.get(kb.id, "hub")
    kept = revisions.since(1, kb.id, page.id, 1)
    assert [(r.version, r.content) for r in kept] == [(2, "First text.\n")]
    assert kept[0].written_at is not None and kept[0].written_at <= page.updated_at
    # sources alone changing is a change too
    pages.save(_page(kb.id, "Second text.\n", _refs(2)), written_by="document:doc-1")
    assert [h.version for h in revisions.history(1, kb.id, "hub")] == [4, 3, 2]


def test_a_hub_page_keeps_its_newest_revisions_only(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db, revisions_keep=3), PageRevisionRepository(clean_db)
    other = _page(kb.id, "Other page.\n", _refs(1), slug="other", title="Other")
    for i in range(1, 11):
        pages.save_many([_page(kb.id, f"Text {i}.\n", _refs(*range(i))), other], written_by=f"batch:{i}")
    history = revisions.history(1, kb.id, "hub")
    assert [h.version for h in history] == [10, 9, 8, 7]
    assert [h.written_by for h in history] == ["batch:10", "batch:9", "batch:8", "batch:7"]
    # the unchanged page written with it kept nothing; the table holds 3 rows in all
    assert [h.version for h in revisions.history(1, kb.id, "other")] == [10]
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 3
    # a lower retention applies at the page's next write
    WikiPageRepository(clean_db, revisions_keep=1).save(_page(kb.id, "Text 11.\n", _refs(1)))
    assert [h.version for h in revisions.history(1, kb.id, "hub")] == [11, 10]
    # none at all: the page's revisions go with its next write
    WikiPageRepository(clean_db, revisions_keep=0).save(_page(kb.id, "Text 12.\n", _refs(1)))
    assert [h.version for h in revisions.history(1, kb.id, "hub")] == [12]
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 0


def test_the_sources_of_every_kept_version_come_back_from_the_deltas(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db), PageRevisionRepository(clean_db)
    written = {}
    steps = [
        _refs(1, 2, 3),
        _refs(1, 2, 3, 4, 5),  # two documents added
        _refs(1, 3, 4, 5),  # one retracted from the middle
        [*_refs(1, 3), SourceRef(knowledge_id="doc-4", title="Renamed 4"), *_refs(5, 6)],  # a title changed
        _refs(6, 1, 3, 5),  # reordered, one gone
        _refs(1, 3, 5, 6),
    ]
    for i, refs in enumerate(steps):
        version = pages.save(_page(kb.id, f"Text {i}.\n", refs)).version
        written[version] = refs
    page = pages.get(kb.id, "hub")
    kept = revisions.since(1, kb.id, page.id, 1)
    assert [r.version for r in kept] == [5, 4, 3, 2, 1]
    for version, refs in written.items():
        if version == page.version:
            continue
        back = sources_at(page.source_refs, kept, version)
        assert back is not None and {(r.knowledge_id, r.title) for r in back} == {
            (r.knowledge_id, r.title) for r in refs
        }, version
        if version != 5:  # the reorder of version 5 is not kept; every other order is
            assert back == refs, version
    assert sources_at(page.source_refs, kept, 99) is None


def test_a_write_changing_more_refs_than_kept_leaves_older_sources_unknown(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db), PageRevisionRepository(clean_db)
    pages.save(_page(kb.id, "Few.\n", _refs(-1)))
    pages.save(_page(kb.id, "Many.\n", _refs(*range(MAX_REF_CHANGES + 1))))
    pages.save(_page(kb.id, "Many again.\n", _refs(*range(MAX_REF_CHANGES + 2))))
    page = pages.get(kb.id, "hub")
    kept = revisions.since(1, kb.id, page.id, 1)
    assert [(r.version, r.sources) for r in kept] == [(2, MAX_REF_CHANGES + 1), (1, 1)]
    assert kept[1].refs_only_here is None and kept[1].refs_only_next is None  # 1,002 refs changed
    assert sources_at(page.source_refs, kept, 2) == _refs(*range(MAX_REF_CHANGES + 1))
    assert sources_at(page.source_refs, kept, 1) is None
    # the bytes a revision holds do not grow with the page's sources: one ref changed, one kept
    with clean_db.connection() as conn:
        size = conn.execute(
            "SELECT pg_column_size(refs_only_here) + pg_column_size(refs_only_next) AS n"
            " FROM wiki_page_revisions WHERE page_id = %s AND version = 2",
            (page.id,),
        ).fetchone()["n"]
    assert size < 200


class _Counting:
    """A connection that counts the statements run through it."""

    def __init__(self, conn) -> None:
        self.conn, self.statements = conn, 0

    def execute(self, *args, **kwargs):
        self.statements += 1
        return self.conn.execute(*args, **kwargs)


def test_save_many_runs_as_many_statements_for_one_page_as_for_two_hundred(clean_db, kb):
    pages = WikiPageRepository(clean_db)

    def statements(batch: list[Page]) -> int:
        with clean_db.connection() as conn:
            counting = _Counting(conn)
            pages.save_many(batch, conn=counting)
        return counting.statements

    def batch(n: int, text: str) -> list[Page]:
        return [
            _page(kb.id, f"{text} [[elsewhere|next]]\n", _refs(i), slug=f"page-{i}", title=f"Page {i}")
            for i in range(n)
        ]

    for text in ("New.", "Changed."):  # inserts, then updates that keep revisions
        assert statements(batch(1, text)) == statements(batch(200, text)) == 6
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 200
    assert statements(batch(200, "Changed.")) == 6  # unchanged: nothing kept
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 200


def test_a_soft_deleted_page_keeps_its_history_and_a_kb_delete_drops_it(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db), PageRevisionRepository(clean_db)
    pages.save(_page(kb.id, "One.\n", _refs(1)))
    pages.save(_page(kb.id, "Two.\n", _refs(1)))
    pages.delete(kb.id, "hub")
    assert revisions.history(1, kb.id, "hub") is None  # no live page
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 1
    pages.save(_page(kb.id, "Again.\n", _refs(1)))  # a new page row at the slug: a history of its own
    assert [h.version for h in revisions.history(1, kb.id, "hub")] == [1]
    pages.save(_page(kb.id, "Again, changed.\n", _refs(1)))
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 2
    pages.delete_kb(kb.id)
    assert _count(clean_db, "SELECT count(*) AS n FROM wiki_page_revisions") == 0


def test_history_is_the_tenants_own(clean_db, kb):
    pages, revisions = WikiPageRepository(clean_db), PageRevisionRepository(clean_db)
    pages.save(_page(kb.id, "One.\n", _refs(1)))
    pages.save(_page(kb.id, "Two.\n", _refs(1)))
    assert len(revisions.history(1, kb.id, "hub")) == 2
    assert revisions.history(2, kb.id, "hub") is None
    page = pages.get(kb.id, "hub")
    assert revisions.since(2, kb.id, page.id, 1) == []
    assert WebRepository(clean_db).page(2, kb.id, "hub") is None
