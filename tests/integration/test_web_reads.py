"""The bounded, tenant-scoped reads the web view, the read API and the MCP server share
(repos.web): pages A-Z by keyset, search pages and its type filter, a page's sources, and the
cursor codec they page with."""

from __future__ import annotations

import pytest

from repos.knowledge import DocumentRepository
from repos.pages import WikiPageRepository
from repos.web import RANK_WINDOW, WebRepository
from tests.support.pages import make_pages
from tests.support.web import add_cited_hub, build_wiki
from wiki.cursor import decode_cursor, encode_cursor
from wiki.errors import BadInput


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


def _walk(repo, kb_id, limit, page_type=None, tenant_id=1):
    seen, after = [], None
    while True:
        pages, after = repo.pages_az(tenant_id, kb_id, page_type=page_type, after=after, limit=limit)
        seen.extend(pages)
        if after is None:
            return seen


def test_pages_az_walks_every_live_page_once_in_title_order(clean_db, wiki):
    WikiPageRepository(clean_db).bulk_insert(make_pages(wiki.kb_id, 57))
    repo = WebRepository(clean_db)
    one_go, last = repo.pages_az(1, wiki.kb_id, limit=200)
    assert last is None
    walked = _walk(repo, wiki.kb_id, limit=7)
    assert [p.slug for p in walked] == [p.slug for p in one_go]
    assert len({p.slug for p in walked}) == len(walked) == 57 + 6  # build_wiki's 6 live pages
    keys = [(p.title.lower(), p.slug) for p in walked]
    assert keys == sorted(keys)
    concepts = _walk(repo, wiki.kb_id, limit=5, page_type="concept")
    assert concepts and all(p.page_type == "concept" for p in concepts)
    assert {p.slug for p in concepts} == {p.slug for p in walked if p.page_type == "concept"}


def test_pages_az_is_tenant_scoped(clean_db, wiki):
    repo = WebRepository(clean_db)
    assert repo.pages_az(1, wiki.other_kb_id) == ([], None)
    assert repo.pages_az(2, wiki.other_kb_id)[0]


def test_search_pages_hold_each_hit_once_and_filter_by_type(clean_db, wiki):
    WikiPageRepository(clean_db).bulk_insert(make_pages(wiki.kb_id, 120))
    repo = WebRepository(clean_db)
    whole = repo.search(1, wiki.kb_id, "thing", limit=2 * RANK_WINDOW)
    assert len(whole) > 30
    paged, after = [], None
    while page := repo.search(1, wiki.kb_id, "thing", limit=9, after=after):
        paged.extend(page)
        after = page[-1].key
    # each hit once, in the ranked order (which matches are ranked can change with the plan)
    assert len(paged) == len({h.page.slug for h in paged}) >= RANK_WINDOW
    assert all(a.key < b.key for a, b in zip(paged, paged[1:]))
    entities = repo.search(1, wiki.kb_id, "thing", limit=50, page_type="entity")
    assert entities and all(h.page.page_type == "entity" for h in entities)
    titled = repo.search(1, wiki.kb_id, "alpha", page_type="summary")
    assert all(h.page.page_type == "summary" for h in titled)
    assert "alpha-engine" in {h.page.slug for h in repo.search(1, wiki.kb_id, "alpha")}


def test_sources_list_a_pages_documents_with_their_uris_and_page_on(clean_db, wiki):
    made = add_cited_hub(clean_db, wiki.kb_id, 5, uri="d/{}.md", title="Doc {}")
    DocumentRepository(clean_db).set_status([made[1].id], "deleted")
    repo = WebRepository(clean_db)
    first, after = repo.sources(1, wiki.kb_id, "hub", limit=3)
    rest, end = repo.sources(1, wiki.kb_id, "hub", after=after, limit=3)
    assert end is None and [s.position for s in first + rest] == [1, 2, 3, 4, 5]
    assert [s.source_uri for s in first + rest] == ["d/0.md", None, "d/2.md", "d/3.md", "d/4.md"]
    assert repo.sources(2, wiki.kb_id, "hub") is None and repo.sources(1, wiki.kb_id, "nope") is None


def test_cursor_round_trips_and_refuses_another_kind_or_garbage():
    token = encode_cursor("pages", "été / 北京", "slug-1")
    assert decode_cursor(token, "pages", (str, str)) == ("été / 北京", "slug-1")
    for bad in (token + "x", "!!", encode_cursor("kbs", 1, "x"), encode_cursor("pages", 1, "x"), "A" * 5000):
        with pytest.raises(BadInput):
            decode_cursor(bad, "pages", (str, str))
