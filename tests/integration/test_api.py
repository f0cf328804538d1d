"""The read API under /api/v1 over real HTTP (uvicorn on a free port) and a real PostgreSQL:
every route's shape, cursor paging that walks every row once, filters, errors as JSON, the
server's tenant only, the bearer token, the web face's middleware, and the OpenAPI document."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest
from openapi_spec_validator import validate

from kbwiki.outage import RETRY_AFTER_S
from kbwiki.web.app import create_app
from repos.db import Pool
from repos.pages import WikiPageRepository
from repos.web import RANK_WINDOW
from tests.integration.test_web_security import _kbwiki_serve
from tests.support.reader import grow, other_tenant_document, store_lint_report
from tests.support.web import add_cited_hub, build_wiki, free_port, serving
from wiki.cursor import encode_cursor
from wiki.models import Page, SourceRef

HTTP_TIMEOUT_S = 60.0
API_TOKEN = "api-token-0123456789abcdef"
#: A slug with characters a URL must percent-encode (slugify never makes one; the API must still serve it).
ODD_SLUG = "what? 100% #1 & more+"
#: Every route of the API, as the OpenAPI document names it.
ROUTES = {
    "/kbs",
    "/kbs/{kb}/documents",
    "/kbs/{kb}/documents/{id}",
    "/kbs/{kb}/pages",
    "/kbs/{kb}/pages/{slug}",
    "/kbs/{kb}/pages/{slug}/backlinks",
    "/kbs/{kb}/pages/{slug}/sources",
    "/kbs/{kb}/pages/{slug}/graph",
    "/kbs/{kb}/search",
    "/kbs/{kb}/lint",
}


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


def _client(app):
    with serving(app) as base, httpx.Client(base_url=f"{base}/api/v1", timeout=HTTP_TIMEOUT_S) as c:
        yield c


@pytest.fixture()
def api(clean_db, wiki):
    yield from _client(create_app(clean_db, tenant_id=1))


@pytest.fixture()
def locked(clean_db, wiki):
    yield from _client(create_app(clean_db, tenant_id=1, api_token=API_TOKEN))


def ok(response: httpx.Response) -> dict:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    return response.json()


def refused(response: httpx.Response, status: int, code: str) -> str:
    """The message of an error answer, after checking its status, code and shape."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"} and body["error"]["code"] == code
    return body["error"]["message"]


def walk(api, path: str, **params) -> tuple[list[dict], int]:
    """Every item of a listing, following next_cursor, and the number of pages it took."""
    items, cursor, pages = [], None, 0
    while True:
        body = ok(api.get(path, params={**params, **({"cursor": cursor} if cursor else {})}))
        assert set(body) == {"items", "next_cursor"}
        items.extend(body["items"])
        pages += 1
        cursor = body["next_cursor"]
        if cursor is None:
            return items, pages


def page_url(kb_id: str, slug: str, *rest: str) -> str:
    return "/".join([f"/kbs/{kb_id}/pages/{quote(slug, safe='')}", *rest])


# -- every route's shape and paging ---------------------------------------------------------------


def test_kbs_list_the_servers_tenant_only(api, wiki):
    body = ok(api.get("/kbs"))
    assert body["next_cursor"] is None and [kb["name"] for kb in body["items"]] == ["web-demo"]
    [kb] = body["items"]
    assert kb["id"] == wiki.kb_id and kb["pages"]["entity"] == 3 and kb["documents"] == {"pending": 1, "failed": 1}
    assert set(kb) == {"id", "name", "documents", "pages", "last_activity", "paused"}


def test_documents_page_through_every_document_once_with_status_filter(api, wiki, clean_db):
    grow(clean_db, wiki, pages=0, documents=23)
    walked, pages = walk(api, f"/kbs/{wiki.kb_id}/documents", limit=4)
    assert len(walked) == len({d["id"] for d in walked}) == 25 and pages == 7
    assert [d["source_uri"] for d in walked] == sorted(d["source_uri"] for d in walked)
    assert set(walked[0]) == {"id", "source_uri", "title", "status", "pages", "updated_at"}
    failed, _ = walk(api, f"/kbs/{wiki.kb_id}/documents", status="failed")
    assert [d["source_uri"] for d in failed] == ["broken.md"]
    refused(api.get(f"/kbs/{wiki.kb_id}/documents", params={"status": "nonsense"}), 400, "bad_input")


def test_pages_a_to_z_walk_every_page_once_and_filter_by_type(api, wiki, clean_db):
    grow(clean_db, wiki, pages=57, documents=0)
    walked, pages = walk(api, f"/kbs/{wiki.kb_id}/pages", limit=10)
    assert len(walked) == len({p["slug"] for p in walked}) == 57 + 6 and pages == 7
    keys = [(p["title"].lower(), p["slug"]) for p in walked]
    assert keys == sorted(keys)
    assert set(walked[0]) == {"slug", "title", "page_type", "status", "aliases"}
    concepts, _ = walk(api, f"/kbs/{wiki.kb_id}/pages", type="concept", limit=6)
    assert concepts and {p["slug"] for p in concepts} == {p["slug"] for p in walked if p["page_type"] == "concept"}
    refused(api.get(f"/kbs/{wiki.kb_id}/pages", params={"type": "nonsense"}), 400, "bad_input")
    refused(api.get(f"/kbs/{wiki.kb_id}/pages", params={"limit": "many"}), 400, "bad_input")
    assert len(ok(api.get(f"/kbs/{wiki.kb_id}/pages", params={"limit": 10**30}))["items"]) == 63  # clamped to 200


def test_page_with_content_links_and_sources(api, wiki):
    page = ok(api.get(page_url(wiki.kb_id, "alpha-engine")))
    assert page["title"] == "Alpha Engine" and page["page_type"] == "entity" and page["aliases"] == ["AE", "alpha db"]
    assert "[[beta-store|Beta Store]]" in page["content"] and page["version"] == 1
    assert page["out_links"] == ["beta-store", "doc-storage-engines-guide"]
    assert page["sources_total"] == 1 and page["sources_cursor"] is None
    assert page["sources"] == [
        {"position": 1, "knowledge_id": wiki.doc_id, "title": "Storage engines guide", "source_uri": "guide.md",
         "status": "pending"}
    ]  # fmt: skip


def test_slugs_needing_percent_encoding(api, wiki, clean_db):
    WikiPageRepository(clean_db).save(
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug=ODD_SLUG,
            title="Odd one",
            page_type="concept",
            content="Links to [[北京大兴|the airport]].",
            source_refs=[SourceRef(knowledge_id=wiki.doc_id, title="Storage engines guide")],
        )
    )
    cjk = ok(api.get(page_url(wiki.kb_id, "北京大兴")))
    assert cjk["slug"] == "北京大兴" and "%E5%8C%97" in page_url(wiki.kb_id, "北京大兴")
    odd = ok(api.get(page_url(wiki.kb_id, ODD_SLUG)))
    assert odd["slug"] == ODD_SLUG and odd["out_links"] == ["北京大兴"]
    backlinks = ok(api.get(page_url(wiki.kb_id, "北京大兴", "backlinks")))["items"]
    assert {p["slug"] for p in backlinks} == {"doc-storage-engines-guide", ODD_SLUG}
    assert ok(api.get(page_url(wiki.kb_id, ODD_SLUG, "sources")))["items"][0]["source_uri"] == "guide.md"
    graph = ok(api.get(page_url(wiki.kb_id, ODD_SLUG, "graph"), params={"hops": 1}))
    assert {"from": ODD_SLUG, "to": "北京大兴"} in graph["edges"]
    hits = ok(api.get(f"/kbs/{wiki.kb_id}/search", params={"q": "北京"}))["items"]
    assert hits[0]["page"]["slug"] == "北京大兴"
    refused(api.get(page_url(wiki.kb_id, ODD_SLUG[:-1])), 404, "not_found")


def test_backlinks_and_sources_page_with_cursors(api, wiki, clean_db):
    walked, pages = walk(api, page_url(wiki.kb_id, "beta-store", "backlinks"), limit=1)
    assert [p["slug"] for p in walked] == ["alpha-engine", "doc-storage-engines-guide", "北京大兴"] and pages == 3
    made = add_cited_hub(clean_db, wiki.kb_id, 63)
    page = ok(api.get(page_url(wiki.kb_id, "hub")))
    assert len(page["sources"]) == 50 and page["sources_total"] == 63 and page["sources_cursor"]
    rest = ok(api.get(page_url(wiki.kb_id, "hub", "sources"), params={"cursor": page["sources_cursor"]}))
    assert [s["position"] for s in page["sources"] + rest["items"]] == list(range(1, 64))
    walked, pages = walk(api, page_url(wiki.kb_id, "hub", "sources"), limit=10)
    assert [s["source_uri"] for s in walked] == [d.source_uri for d in made] and pages == 7


def test_search_pages_every_hit_once_to_the_rank_window_and_filters_by_type(api, wiki, clean_db):
    grow(clean_db, wiki, pages=120, documents=0)
    walked, pages = walk(api, f"/kbs/{wiki.kb_id}/search", q="thing", limit=9)
    slugs = [h["page"]["slug"] for h in walked]
    # a keyset walk: each hit once, through at least one window of matches
    assert len(slugs) == len(set(slugs)) >= RANK_WINDOW and pages == -(-len(slugs) // 9)
    assert set(walked[0]) == {"page", "kind", "score", "snippet"}
    first = ok(api.get(f"/kbs/{wiki.kb_id}/search", params={"q": "alpha"}))["items"][0]
    assert first["page"]["slug"] == "alpha-engine" and first["kind"] == "title"
    alias = ok(api.get(f"/kbs/{wiki.kb_id}/search", params={"q": "alpha db"}))["items"][0]
    assert alias["page"]["slug"] == "alpha-engine"
    text = ok(api.get(f"/kbs/{wiki.kb_id}/search", params={"q": "国际机场"}))["items"]
    assert [h["page"]["slug"] for h in text] == ["北京大兴"]
    assert text[0]["kind"] == "text" and "<<" in text[0]["snippet"]
    entities, _ = walk(api, f"/kbs/{wiki.kb_id}/search", q="thing", type="entity", limit=25)
    assert entities and all(h["page"]["page_type"] == "entity" for h in entities)
    assert ok(api.get(f"/kbs/{wiki.kb_id}/search"))["items"] == []  # no query, nothing found
    refused(api.get(f"/kbs/{wiki.kb_id}/search", params={"q": "x", "type": "nonsense"}), 400, "bad_input")


def test_graph_nodes_and_edges(api, wiki):
    graph = ok(api.get(page_url(wiki.kb_id, "beta-store", "graph")))
    assert graph["centre"] == "beta-store" and graph["hops"] == 2 and graph["capped"] is False
    assert {"alpha-engine", "北京大兴", "hostile", "index"} <= {n["slug"] for n in graph["nodes"]}
    assert {"from": "alpha-engine", "to": "beta-store"} in graph["edges"]
    one = ok(api.get(page_url(wiki.kb_id, "beta-store", "graph"), params={"hops": 1}))
    assert "hostile" not in {n["slug"] for n in one["nodes"]}
    refused(api.get(page_url(wiki.kb_id, "no-such-page", "graph")), 404, "not_found")


def test_document_evidence(api, wiki):
    doc = ok(api.get(f"/kbs/{wiki.kb_id}/documents/{wiki.doc_id}", params={"page": "alpha-engine"}))
    assert doc["title"] == "Storage engines guide" and doc["source_uri"] == "guide.md" and doc["status"] == "pending"
    assert doc["content_head"].startswith("Alpha Engine writes to Beta Store.")
    assert doc["citing"][0]["slug"] == "doc-storage-engines-guide" and len(doc["citing"]) == 6
    assert doc["evidence"] == ["Alpha Engine writes to Beta Store."] and doc["page"] == "alpha-engine"
    assert isinstance(doc["naming"], list)
    broken = next(d for d in walk(api, f"/kbs/{wiki.kb_id}/documents")[0] if d["source_uri"] == "broken.md")
    failed = ok(api.get(f"/kbs/{wiki.kb_id}/documents/{broken['id']}"))
    assert failed["error"] == "ValueError: cannot parse"  # the headline only: no traceback
    refused(api.get(f"/kbs/{wiki.kb_id}/documents/no-such-doc"), 404, "not_found")


def test_lint_report(api, wiki, clean_db):
    assert ok(api.get(f"/kbs/{wiki.kb_id}/lint")) == {"knowledge_base_id": wiki.kb_id, "report": None}
    report = store_lint_report(clean_db, wiki)
    body = ok(api.get(f"/kbs/{wiki.kb_id}/lint"))["report"]
    assert body["score"] == report.score and body["counts"] == report.counts
    assert body["pages_checked"] == report.pages_checked and set(body["samples"]) == set(report.samples)


# -- errors -------------------------------------------------------------------------------------------


def test_a_bad_cursor_or_another_listings_is_400(api, wiki):
    pages_cursor = encode_cursor("pages", "a", "b")
    for path in (
        "/kbs",
        f"/kbs/{wiki.kb_id}/documents",
        f"/kbs/{wiki.kb_id}/search?q=alpha",
        page_url(wiki.kb_id, "beta-store", "backlinks"),
        page_url(wiki.kb_id, "alpha-engine", "sources"),
    ):
        for bad in (pages_cursor, "not a cursor!", "A" * 5000):
            assert "cursor" in refused(api.get(path, params={"cursor": bad}), 400, "bad_input")
    refused(api.get(f"/kbs/{wiki.kb_id}/pages", params={"cursor": encode_cursor("kbs", "web-demo")}), 400, "bad_input")


def test_another_tenants_kb_page_and_document_are_404(api, wiki, clean_db):
    secret_doc = other_tenant_document(clean_db, wiki)
    other = wiki.other_kb_id
    for path in (
        f"/kbs/{other}/documents",
        f"/kbs/{other}/documents/{secret_doc}",
        f"/kbs/{other}/pages",
        page_url(other, "alpha-engine"),
        page_url(other, "alpha-engine", "backlinks"),
        page_url(other, "alpha-engine", "sources"),
        page_url(other, "alpha-engine", "graph"),
        f"/kbs/{other}/search?q=secret",
        f"/kbs/{other}/lint",
        f"/kbs/{wiki.kb_id}/documents/{secret_doc}",  # its document under one's own KB
    ):
        response = api.get(path)
        refused(response, 404, "not_found")
        assert "Secret" not in response.text and "Hidden" not in response.text
    assert "secret" not in api.get("/kbs").text
    refused(api.get(page_url(wiki.kb_id, "no-such-page")), 404, "not_found")
    refused(api.get("/no-such-route"), 404, "not_found")


def test_only_get_is_answered(api):
    response = api.post("/kbs")
    refused(response, 405, "method_not_allowed")
    assert response.headers["allow"] == "GET"


def test_the_web_faces_middleware_covers_the_api(api):
    response = api.get("/kbs")
    assert response.headers["cache-control"] == "no-store"  # no shared cache keeps an answer
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert api.get("/kbs", headers={"Host": "attacker.example"}).status_code == 400  # DNS rebinding
    assert api.get("/kbs", params={"cursor": "a\x00b"}).status_code == 400  # NUL refused before routing


def test_database_away_is_503_with_retry_after(wiki):
    # a pool on a port where nothing listens: every borrow times out
    dead = Pool(f"postgresql://127.0.0.1:{free_port()}/nothing", min_size=0, max_size=1, timeout=0.5, open=False)
    dead.open(wait=False)
    try:
        with serving(create_app(dead, tenant_id=1)) as base:
            response = httpx.get(f"{base}/api/v1/kbs", timeout=HTTP_TIMEOUT_S)
    finally:
        dead.close()
    refused(response, 503, "unavailable")
    assert response.headers["retry-after"] == str(RETRY_AFTER_S)


def test_an_unexpected_error_is_a_json_500_without_details(clean_db, wiki):
    app = create_app(clean_db, tenant_id=1)
    [api_app] = [route.app for route in app.routes if getattr(route, "path", "") == "/api/v1"]

    class Broken:
        def kbs(self, **kwargs):
            raise RuntimeError("secret internals")

    api_app.state.reader = Broken()
    with serving(app) as base:
        response = httpx.get(f"{base}/api/v1/kbs", timeout=HTTP_TIMEOUT_S)
    assert "secret internals" not in refused(response, 500, "internal") and "Traceback" not in response.text
    assert "script-src 'self'" in response.headers["content-security-policy"]


# -- the bearer token ---------------------------------------------------------------------------------


def test_token_is_required_when_set(locked, wiki):
    paths = ["/kbs", f"/kbs/{wiki.kb_id}/pages", page_url(wiki.kb_id, "alpha-engine"), f"/kbs/{wiki.kb_id}/lint"]
    for path in paths:
        missing = locked.get(path)
        refused(missing, 401, "unauthorized")
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = locked.get(path, headers={"Authorization": f"Bearer {API_TOKEN}x"})
        refused(wrong, 401, "unauthorized")
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        refused(locked.get(path, headers={"Authorization": f"Basic {API_TOKEN}"}), 401, "unauthorized")
        ok(locked.get(path, headers={"Authorization": f"Bearer {API_TOKEN}"}))
    # another tenant's KB is still a 404 with the token, and the document is open without one
    refused(
        locked.get(f"/kbs/{wiki.other_kb_id}/pages", headers={"Authorization": f"Bearer {API_TOKEN}"}), 404, "not_found"
    )
    spec = ok(locked.get("/openapi.json"))
    assert spec["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


def test_kbwiki_serve_reads_the_token_from_its_setting(clean_db, wiki, database_url, tmp_path):
    with _kbwiki_serve(database_url, tmp_path, KBWIKI_API_TOKEN=API_TOKEN) as (url, _log):
        bare = httpx.get(f"{url}/api/v1/kbs", timeout=HTTP_TIMEOUT_S)
        signed = httpx.get(
            f"{url}/api/v1/kbs", headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=HTTP_TIMEOUT_S
        )
        spec = httpx.get(f"{url}/api/v1/openapi.json", timeout=HTTP_TIMEOUT_S)
    refused(bare, 401, "unauthorized")
    assert [kb["name"] for kb in ok(signed)["items"]] == ["web-demo"] and spec.status_code == 200


def test_open_without_a_token(api):
    assert api.get("/kbs", headers={"Authorization": "Bearer anything"}).status_code == 200


# -- the OpenAPI document ---------------------------------------------------------------------------


def test_openapi_document_is_valid_and_lists_every_route(api):
    spec = ok(api.get("/openapi.json"))
    validate(spec)  # raises on a document that is not valid OpenAPI 3
    assert spec["openapi"].startswith("3.") and spec["servers"] == [{"url": "/api/v1"}]
    assert set(spec["paths"]) == ROUTES
    for path, operations in spec["paths"].items():
        assert set(operations) == {"get"}, path
        responses = operations["get"]["responses"]
        assert "422" not in responses and {"200", "400", "404", "503"} <= set(responses), path
        assert responses["404"]["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/ErrorOut"}
    assert spec["paths"]["/kbs/{kb}/pages"]["get"]["operationId"] == "list_pages"
    params = {p["name"] for p in spec["paths"]["/kbs/{kb}/search"]["get"]["parameters"]}
    assert params == {"kb", "q", "type", "cursor", "limit"}
    assert "HTTPBearer" not in spec.get("components", {}).get("securitySchemes", {})  # no token set
    assert api.get("/docs").status_code == 404  # no Swagger UI: its scripts come from a CDN the CSP refuses
