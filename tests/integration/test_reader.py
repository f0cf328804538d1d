"""kbwiki.reader.Reader on a real PostgreSQL: shapes, cursor paging that walks every row once,
filters, bad input, and another tenant's KB, page and document as NotFound."""

from __future__ import annotations

import pytest

from kbwiki.reader import MAX_HOPS, PAGE_SOURCES, Reader
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from repos.web import RANK_WINDOW
from tests.support.reader import grow, other_tenant_document, store_lint_report
from tests.support.web import add_cited_hub, build_wiki
from wiki.cursor import encode_cursor
from wiki.errors import BadInput, NotFound, UnknownDocument, UnknownKnowledgeBase, UnknownPage


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


@pytest.fixture()
def reader(clean_db):
    return Reader(clean_db, 1)


def walk(listing, **kwargs):
    """Every item of a listing, page by page, and the number of pages."""
    items, cursor, pages = [], None, 0
    while True:
        page = listing(after=cursor, **kwargs)
        items.extend(page.items)
        pages += 1
        cursor = page.next_cursor
        if cursor is None:
            return items, pages


def test_kbs_are_the_tenants_with_counts_and_page(clean_db, wiki, reader):
    for name in ("b-more", "a-more", "c-more"):
        KnowledgeBaseRepository(clean_db).get_or_create(1, name)
    kbs, pages = walk(reader.kbs, limit=2)
    assert [kb.name for kb in kbs] == ["a-more", "b-more", "c-more", "web-demo"] and pages == 2
    demo = kbs[-1]
    assert demo.id == wiki.kb_id and demo.pages == {"summary": 1, "entity": 3, "concept": 1, "index": 1}
    assert demo.documents == {"pending": 1, "failed": 1}
    assert "secret" not in {kb.name for kb in walk(Reader(clean_db, 1).kbs)[0]}
    assert [kb.name for kb in Reader(clean_db, 2).kbs().items] == ["secret"]


def test_documents_page_through_every_document_once_and_filter_by_status(clean_db, wiki, reader):
    grow(clean_db, wiki, pages=0, documents=23)
    whole = reader.documents(wiki.kb_id, limit=200)
    assert len(whole.items) == 25 and whole.next_cursor is None
    walked, pages = walk(reader.documents, kb_id=wiki.kb_id, limit=4)
    assert [d.id for d in walked] == [d.id for d in whole.items] and pages == 7
    failed = reader.documents(wiki.kb_id, status="failed")
    assert [d.source_uri for d in failed.items] == ["broken.md"]
    guide = next(d for d in whole.items if d.id == wiki.doc_id)
    assert guide.pages == 6  # build_wiki's pages all cite it
    with pytest.raises(BadInput):
        reader.documents(wiki.kb_id, status="nonsense")


def test_pages_a_to_z_walk_once_and_filter_by_type(clean_db, wiki, reader):
    grow(clean_db, wiki, pages=57, documents=0)
    walked, pages = walk(reader.pages, kb_id=wiki.kb_id, limit=10)
    assert len(walked) == len({p.slug for p in walked}) == 57 + 6 and pages == 7
    assert [(p.title.lower(), p.slug) for p in walked] == sorted((p.title.lower(), p.slug) for p in walked)
    entities, _ = walk(reader.pages, kb_id=wiki.kb_id, page_type="entity", limit=7)
    assert {p.slug for p in entities} == {p.slug for p in walked if p.page_type == "entity"}
    with pytest.raises(BadInput):
        reader.pages(wiki.kb_id, page_type="nonsense")


def test_page_holds_content_out_links_and_sources(clean_db, wiki, reader):
    page = reader.page(wiki.kb_id, "alpha-engine")
    assert page.title == "Alpha Engine" and page.page_type == "entity" and page.aliases == ["AE", "alpha db"]
    assert "[[beta-store|Beta Store]]" in page.content
    assert page.out_links == ["beta-store", "doc-storage-engines-guide"]
    assert [s.source_uri for s in page.sources] == ["guide.md"] and page.sources_total == 1
    assert page.sources_cursor is None and page.version == 1
    assert reader.page(wiki.kb_id, "北京大兴").title == "北京大兴"


def test_sources_page_on_past_the_first_fifty(clean_db, wiki, reader):
    made = add_cited_hub(clean_db, wiki.kb_id, 63)
    page = reader.page(wiki.kb_id, "hub")
    assert len(page.sources) == PAGE_SOURCES and page.sources_total == 63 and page.sources_cursor
    rest = reader.sources(wiki.kb_id, "hub", after=page.sources_cursor, limit=200)
    assert [s.position for s in page.sources + rest.items] == list(range(1, 64)) and rest.next_cursor is None
    walked, pages = walk(reader.sources, kb_id=wiki.kb_id, slug="hub", limit=10)
    assert [s.source_uri for s in walked] == [d.source_uri for d in made] and pages == 7


def test_backlinks_page_by_slug(clean_db, wiki, reader):
    whole = reader.backlinks(wiki.kb_id, "beta-store")
    assert [p.slug for p in whole.items] == ["alpha-engine", "doc-storage-engines-guide", "北京大兴"]
    walked, pages = walk(reader.backlinks, kb_id=wiki.kb_id, slug="beta-store", limit=1)
    assert [p.slug for p in walked] == [p.slug for p in whole.items] and pages == 3
    assert reader.backlinks(wiki.kb_id, "index").items == []


def test_search_pages_to_the_rank_window_and_filters_by_type(clean_db, wiki, reader):
    grow(clean_db, wiki, pages=120, documents=0)
    walked, pages = walk(reader.search, kb_id=wiki.kb_id, q="thing", limit=9)
    slugs = [h.page.slug for h in walked]
    # a keyset walk: each hit once, in the ranked order, through at least one window of matches
    assert len(slugs) == len(set(slugs)) >= RANK_WINDOW and pages == -(-len(slugs) // 9)
    assert all(a.key < b.key for a, b in zip(walked, walked[1:]))
    assert reader.search(wiki.kb_id, "alpha").items[0].page.slug == "alpha-engine"
    assert reader.search(wiki.kb_id, "北京").items[0].page.slug == "北京大兴"
    assert "北京大兴" in {h.page.slug for h in reader.search(wiki.kb_id, "国际机场").items}
    concepts, _ = walk(reader.search, kb_id=wiki.kb_id, q="thing", page_type="concept", limit=20)
    assert concepts and all(h.page.page_type == "concept" for h in concepts)
    assert reader.search(wiki.kb_id, "   ").items == []
    with pytest.raises(BadInput):
        reader.search(wiki.kb_id, "thing", page_type="nonsense")


def test_graph_neighbourhood_with_edges(clean_db, wiki, reader):
    graph = reader.graph(wiki.kb_id, "beta-store", hops=1)
    assert graph.centre == "beta-store" and graph.hops == 1 and not graph.capped
    assert {n.slug for n in graph.nodes} == {"beta-store", "alpha-engine", "doc-storage-engines-guide", "北京大兴"}
    assert {"from": "alpha-engine", "to": "beta-store"} in graph.model_dump()["edges"]
    assert reader.graph(wiki.kb_id, "beta-store", hops=99).hops == MAX_HOPS


def test_evidence_of_a_document(clean_db, wiki, reader):
    ev = reader.evidence(wiki.kb_id, wiki.doc_id, page="alpha-engine")
    assert ev.title == "Storage engines guide" and ev.source_uri == "guide.md" and ev.status == "pending"
    assert ev.content_head.startswith("Alpha Engine writes") and ev.citing[0].slug == "doc-storage-engines-guide"
    assert len(ev.citing) == 6 and ev.evidence == ["Alpha Engine writes to Beta Store."]
    broken = next(d for d in reader.documents(wiki.kb_id).items if d.source_uri == "broken.md")
    failed = reader.evidence(wiki.kb_id, broken.id)
    assert failed.error == "ValueError: cannot parse"  # the headline, not the traceback
    DocumentRepository(clean_db).set_status([broken.id], "deleted")
    with pytest.raises(UnknownDocument):
        reader.evidence(wiki.kb_id, broken.id)


def test_lint_report_stored_or_none(clean_db, wiki, reader):
    assert reader.lint(wiki.kb_id).report is None
    report = store_lint_report(clean_db, wiki)
    out = reader.lint(wiki.kb_id)
    assert out.report is not None and out.report.score == report.score and out.report.counts == report.counts


def test_another_tenants_kb_page_and_document_are_not_found(clean_db, wiki, reader):
    secret_doc = other_tenant_document(clean_db, wiki)
    other = wiki.other_kb_id
    for read in (
        lambda: reader.documents(other),
        lambda: reader.pages(other),
        lambda: reader.page(other, "alpha-engine"),
        lambda: reader.backlinks(other, "alpha-engine"),
        lambda: reader.sources(other, "alpha-engine"),
        lambda: reader.graph(other, "alpha-engine"),
        lambda: reader.search(other, "secret"),
        lambda: reader.evidence(other, secret_doc),
        lambda: reader.lint(other),
    ):
        with pytest.raises(UnknownKnowledgeBase):
            read()
    with pytest.raises(UnknownDocument):
        reader.evidence(wiki.kb_id, secret_doc)  # another tenant's document under one's own KB
    for read in (reader.page, reader.backlinks, reader.sources, reader.graph):
        with pytest.raises(UnknownPage):
            read(wiki.kb_id, "no-such-page")
    # the other tenant sees its own
    assert Reader(clean_db, 2).page(other, "alpha-engine").title == "Secret Alpha"
    assert issubclass(UnknownKnowledgeBase, NotFound) and issubclass(UnknownPage, LookupError)


def test_a_cursor_of_another_listing_or_garbage_is_bad_input(clean_db, wiki, reader):
    pages_cursor = encode_cursor("pages", "a", "b")
    for read in (
        lambda c: reader.documents(wiki.kb_id, after=c),
        lambda c: reader.backlinks(wiki.kb_id, "beta-store", after=c),
        lambda c: reader.search(wiki.kb_id, "alpha", after=c),
        lambda c: reader.kbs(after=c),
        lambda c: reader.sources(wiki.kb_id, "alpha-engine", after=c),
    ):
        for bad in (pages_cursor, "not a cursor!"):
            with pytest.raises(BadInput):
                read(bad)
    with pytest.raises(BadInput):
        reader.pages(wiki.kb_id, after=encode_cursor("documents", "a", "b"))
    with pytest.raises(BadInput):
        reader.search(wiki.kb_id, "alpha", after=encode_cursor("search", -5))


def test_limit_is_clamped(clean_db, wiki, reader):
    assert len(reader.pages(wiki.kb_id, limit=0).items) == 1
    assert len(reader.pages(wiki.kb_id, limit=10**9).items) == 6
