"""A page's history, diffs and revert in the web face, over real HTTP (uvicorn on a free port) and a
real PostgreSQL database: tenant-scoped, page text always escaped, and the revert behind the ops
sign-in and its CSRF token."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import httpx
import pytest

from kbwiki.web.app import create_app
from repos.pages import WikiPageRepository
from tests.support.web import HOSTILE_BODY, build_wiki, serving

TOKEN = "test-ops-token-0123456789"
HTTP_TIMEOUT_S = 60.0
NEW_TEXT = "Alpha Engine is a storage engine, rewritten.\n\n<script>alert('v3')</script> [[beta-store|Beta Store]]\n"


@pytest.fixture()
def wiki(clean_db):
    """``build_wiki``'s KB, whose ``alpha-engine`` then gets versions 2 (hostile text, a second
    source) and 3."""
    wiki = build_wiki(clean_db)
    pages = WikiPageRepository(clean_db)
    page = pages.get(wiki.kb_id, "alpha-engine")
    second = page.source_refs[0].model_copy(update={"knowledge_id": wiki.doc_id + "-x", "title": "Second guide"})
    pages.save(page.model_copy(update={"content": HOSTILE_BODY + "\n"}), written_by="batch:2")
    pages.save(
        page.model_copy(update={"content": NEW_TEXT, "source_refs": [*page.source_refs, second]}),
        written_by=f"document:{wiki.doc_id}",
    )
    return wiki


@pytest.fixture()
def base(clean_db, wiki):
    with serving(create_app(clean_db, tenant_id=1, ops_token=TOKEN)) as url:
        yield url


def _client(base: str) -> httpx.Client:
    return httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S)


@contextlib.contextmanager
def _signed_in(base: str, kb_id: str, version: int = 1) -> Iterator[tuple[httpx.Client, str]]:
    """A signed-in client and the CSRF token of the revert form of ``alpha-engine`` at ``version``."""
    with _client(base) as client:
        assert client.post("/ops/login", data={"token": TOKEN}).status_code == 303
        page = client.get(f"/ops/kb/{kb_id}/revert/alpha-engine", params={"version": version})
        yield client, re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)


def _version(pool, kb_id: str) -> int:
    return WikiPageRepository(pool).get(kb_id, "alpha-engine").version


def test_the_page_links_its_history_which_lists_versions_and_writers(base, wiki):
    with _client(base) as c:
        page = c.get(f"/kb/{wiki.kb_id}/page/alpha-engine").text
        assert f'href="/kb/{wiki.kb_id}/history/alpha-engine"' in page
        r = c.get(f"/kb/{wiki.kb_id}/history/alpha-engine")
    assert r.status_code == 200
    rows = re.findall(r'<tr id="v(\d+)">', r.text)
    assert rows == ["3", "2", "1"]
    assert f"document:{wiki.doc_id}" in r.text and "batch:2" in r.text
    assert f'href="/kb/{wiki.kb_id}/diff/alpha-engine?from=2&amp;to=3"' in r.text
    assert f'href="/ops/kb/{wiki.kb_id}/revert/alpha-engine?version=1"' in r.text
    assert "?version=3" not in r.text  # no revert to the current version


def test_a_diff_between_any_two_versions_shows_page_text_escaped(base, wiki):
    with _client(base) as c:
        r = c.get(f"/kb/{wiki.kb_id}/diff/alpha-engine", params={"from": 1, "to": 3})
        default = c.get(f"/kb/{wiki.kb_id}/diff/alpha-engine")
        hostile = c.get(f"/kb/{wiki.kb_id}/diff/alpha-engine", params={"from": 1, "to": 2})
    assert r.status_code == 200 and "version 1 → 3" in r.text
    assert re.search(r'<tr class="removed">.*Alpha Engine is a storage engine that writes to', r.text)
    assert re.search(r'<tr class="added">.*Alpha Engine is a storage engine, rewritten\.', r.text)
    assert "&lt;script&gt;alert(&#39;v3&#39;)&lt;/script&gt;" in r.text and "<script>alert" not in r.text
    assert '<li class="added">+ <a' in r.text and "Second guide" in r.text  # the source version 3 added
    assert "version 2 → 3" in default.text  # the previous kept version to the current one
    html = hostile.text.lower()
    assert "&lt;img src=x onerror" in html and not re.search(r"<img[^>]*onerror", html)
    assert "<script>alert" not in html and 'href="javascript' not in html


def test_unknown_versions_pages_and_another_tenants_kb_are_404(base, wiki):
    with _client(base) as c:
        assert c.get(f"/kb/{wiki.kb_id}/diff/alpha-engine", params={"from": 9, "to": 3}).status_code == 404
        assert c.get(f"/kb/{wiki.kb_id}/diff/alpha-engine", params={"from": "1" * 5000}).status_code == 200
        assert c.get(f"/kb/{wiki.kb_id}/history/no-such-page").status_code == 404
        assert c.get(f"/ops/kb/{wiki.kb_id}/revert/alpha-engine", params={"version": "x"}).status_code == 404
        # tenant 2's KB has a page at the same slug, with a history of its own
        for path in ("history/alpha-engine", "diff/alpha-engine"):
            assert c.get(f"/kb/{wiki.other_kb_id}/{path}").status_code == 404
        assert c.get(f"/ops/kb/{wiki.other_kb_id}/revert/alpha-engine", params={"version": 1}).status_code == 404
    with _signed_in(base, wiki.kb_id) as (client, csrf):
        r = client.post(f"/ops/kb/{wiki.other_kb_id}/revert/alpha-engine", data={"csrf": csrf, "version": "1"})
    assert r.status_code == 404


def test_revert_is_refused_without_a_session_or_its_csrf_token_and_writes_nothing(base, wiki, clean_db):
    url = f"/ops/kb/{wiki.kb_id}/revert/alpha-engine"
    with _client(base) as stranger:
        view = stranger.get(url, params={"version": 1})
        assert view.status_code == 200 and 'id="sign-in-first"' in view.text and 'name="csrf"' not in view.text
        assert view.headers["cache-control"] == "no-store"
        assert stranger.post(url, data={"version": "1", "csrf": "x"}).status_code == 403
    with _signed_in(base, wiki.kb_id) as (client, csrf), _signed_in(base, wiki.kb_id) as (_, other_csrf):
        assert client.post(url, data={"version": "1"}).status_code == 403  # a signed-in browser tricked into posting
        assert client.post(url, data={"version": "1", "csrf": other_csrf}).status_code == 403  # another session's
    assert _version(clean_db, wiki.kb_id) == 3


def test_a_signed_in_operator_reverts_and_a_refused_revert_says_why(base, wiki, clean_db):
    url = f"/ops/kb/{wiki.kb_id}/revert/alpha-engine"
    with _signed_in(base, wiki.kb_id) as (client, csrf):
        view = client.get(url, params={"version": 1})
        assert 'id="revert-button"' in view.text and "version 3 (current) → 1" in view.text
        r = client.post(url, data={"version": "1", "csrf": csrf})
        assert r.status_code == 303
        assert r.headers["location"] == f"/kb/{wiki.kb_id}/history/alpha-engine?reverted=1&now=4"
        history = client.get(r.headers["location"]).text
        assert "Reverted to version 1: the page is version 4 now." in history and "revert:1" in history
        again = client.post(url, data={"version": "1", "csrf": csrf})
        assert again.status_code == 409 and "already has the content and sources of version 1" in again.text
        assert client.post(url, data={"version": "77", "csrf": csrf}).status_code == 404
        assert client.post(url, data={"version": "-1", "csrf": csrf}).status_code == 404
    page = WikiPageRepository(clean_db).get(wiki.kb_id, "alpha-engine")
    assert page.version == 4 and page.content.startswith("Alpha Engine is a storage engine that writes to")
    assert [r.knowledge_id for r in page.source_refs] == [wiki.doc_id]
