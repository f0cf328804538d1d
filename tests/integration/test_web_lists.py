"""The web view's A-Z list of pages and the search page's paging and type filter, over real HTTP."""

from __future__ import annotations

import re
from urllib.parse import unquote

import httpx
import pytest

from kbwiki.web.app import AZ_PAGE, create_app
from repos.pages import WikiPageRepository
from repos.web import SEARCH_LIMIT
from tests.support.pages import make_pages
from tests.support.web import build_wiki, serving

N_PAGES = AZ_PAGE + 37  # more than one page of the list


@pytest.fixture()
def wiki(clean_db):
    built = build_wiki(clean_db)
    WikiPageRepository(clean_db).bulk_insert(make_pages(built.kb_id, N_PAGES))
    return built


@pytest.fixture()
def client(clean_db, wiki):
    with serving(create_app(clean_db, tenant_id=1)) as base, httpx.Client(base_url=base, timeout=60.0) as c:
        yield c


def _slugs(html: str, list_class: str) -> list[str]:
    block = html.split(f'<ul class="{list_class}">', 1)[1].split("</ul>", 1)[0]
    return [unquote(s) for s in re.findall(r'/page/([^"]+)"', block)]


def _next(html: str) -> str | None:
    found = re.search(r'<a href="([^"]+)" rel="next">', html)
    return found.group(1).replace("&amp;", "&") if found else None


def test_the_a_to_z_list_walks_every_live_page_once_in_title_order(client, wiki):
    seen, url, pages = [], f"/kb/{wiki.kb_id}/pages", 0
    while url:
        r = client.get(url)
        assert r.status_code == 200
        seen.extend(_slugs(r.text, "az"))
        url, pages = _next(r.text), pages + 1
    assert pages == 2 and len(seen) == len(set(seen)) == N_PAGES + 6  # build_wiki's 6 live pages
    assert "secret" not in seen  # tenant 2's page


def test_the_a_to_z_list_filters_by_type_and_starts_at_a_letter(client, wiki):
    concepts = client.get(f"/kb/{wiki.kb_id}/pages", params={"type": "concept"}).text
    assert 'class="badge concept"' in concepts and 'class="badge entity"' not in concepts
    from_m = client.get(f"/kb/{wiki.kb_id}/pages", params={"from": "m"}).text
    titles = re.findall(r'/page/[^"]+">([^<]+)</a>', from_m.split('<ul class="az">', 1)[1])
    assert titles and all(t.lower() >= "m" for t in titles)
    assert client.get(f"/kb/{wiki.kb_id}/pages", params={"type": "nonsense"}).status_code == 400
    assert client.get(f"/kb/{wiki.kb_id}/pages", params={"after": "garbage!"}).status_code == 400
    assert client.get(f"/kb/{wiki.other_kb_id}/pages").status_code == 404


def test_search_pages_through_its_hits_and_filters_by_type(client, wiki):
    first = client.get(f"/kb/{wiki.kb_id}/search", params={"q": "thing"})
    assert first.status_code == 200
    hits_1 = re.findall(r'<li class="hit [a-z]+"><a href="[^"]*/page/([^"]+)"', first.text)
    assert len(hits_1) == SEARCH_LIMIT
    second = client.get(_next(first.text))
    hits_2 = re.findall(r'<li class="hit [a-z]+"><a href="[^"]*/page/([^"]+)"', second.text)
    assert hits_2 and not set(hits_1) & set(hits_2) and 'rel="first"' in second.text
    entities = client.get(f"/kb/{wiki.kb_id}/search", params={"q": "thing", "type": "entity"}).text
    assert 'class="badge entity"' in entities and 'class="badge concept"' not in entities
    assert client.get(f"/kb/{wiki.kb_id}/search", params={"q": "x", "type": "bogus"}).status_code == 400
