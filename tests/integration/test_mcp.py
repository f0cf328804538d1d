"""The MCP server (``kbwiki.mcp_server``) through the SDK's own client, over both transports: a
real ``kbwiki mcp`` subprocess on stdio, and ``/mcp`` of the web app served by uvicorn over
streamable HTTP; a real PostgreSQL database holding ``build_wiki``'s two tenants."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import anyio
import httpx
import pytest

from kbwiki.mcp_server import READ_CHARS
from kbwiki.web.app import create_app
from repos.knowledge import KnowledgeBaseRepository
from repos.pages import WikiPageRepository
from tests.support.mcp_client import http_client, stdio_client, structured, text
from tests.support.reader import grow
from tests.support.web import build_wiki, free_port, serving
from wiki.models import Page, SourceRef

TOOLS = {"list_kbs", "search", "read_page", "list_pages", "backlinks", "sources"}
TOKEN = "test-api-token-0123456789"


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


@pytest.fixture(params=["stdio", "http"])
def connect(request, clean_db, wiki, database_url, tmp_path):
    """``connect()``: an async context manager giving a client of tenant 1's server over the
    transport of the test's parameter; ``connect.stderr()`` what a stdio server wrote on stderr."""
    stack = contextlib.ExitStack()
    errlog = stack.enter_context(open(tmp_path / "stderr.log", "w"))
    if request.param == "http":
        base = stack.enter_context(serving(create_app(clean_db, tenant_id=1)))

        def factory():
            return http_client(f"{base}/mcp")
    else:

        def factory():
            return stdio_client(database_url, 1, errlog)

    factory.stderr = lambda: (tmp_path / "stderr.log").read_text()
    factory.transport = request.param
    with stack:
        yield factory


def run(connect, scenario):
    """Run ``scenario(client)`` (async) on a fresh connection."""

    async def main():
        async with connect() as client:
            return await scenario(client)

    return anyio.run(main)


def error_text(result) -> str:
    assert result.is_error, f"expected a tool error, got {result.structured_content}"
    return text(result)


def test_tools_and_every_result_shape(connect, wiki):
    async def scenario(client):
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert all(t.annotations.read_only_hint and t.description and t.output_schema for t in tools.values())
        assert "kb" in tools["search"].input_schema["required"]
        return {
            "kbs": await client.call_tool("list_kbs", {}),
            "search": await client.call_tool("search", {"kb": wiki.kb_id, "query": "beta"}),
            "text": await client.call_tool("search", {"kb": wiki.kb_id, "query": "zebrafish"}),
            "page": await client.call_tool("read_page", {"kb": wiki.kb_id, "slug": "alpha-engine"}),
            "pages": await client.call_tool("list_pages", {"kb": wiki.kb_id, "page_type": "entity"}),
            "backlinks": await client.call_tool("backlinks", {"kb": wiki.kb_id, "slug": "beta-store"}),
            "sources": await client.call_tool("sources", {"kb": wiki.kb_id, "slug": "alpha-engine"}),
        }

    out = {name: structured(result) for name, result in run(connect, scenario).items()}
    # only the server's tenant: tenant 2's "secret" is not listed
    assert [(k["id"], k["name"]) for k in out["kbs"]["items"]] == [(wiki.kb_id, "web-demo")]
    assert out["kbs"]["items"][0]["pages"]["entity"] == 3 and out["kbs"]["next_cursor"] is None
    assert out["search"]["items"][0] == {
        "slug": "beta-store",
        "title": "Beta Store",
        "page_type": "entity",
        "matched": "title",
        "snippet": "",
    }
    hit = out["text"]["items"][0]
    assert hit["slug"] == "beta-store" and hit["matched"] == "text" and "<<Zebrafish>>" in hit["snippet"]
    page = out["page"]
    assert page["slug"] == "alpha-engine" and page["title"] == "Alpha Engine" and page["page_type"] == "entity"
    assert page["content"].startswith("Alpha Engine is a storage engine") and page["next_offset"] is None
    assert page["content_chars"] == len(page["content"]) and page["version"] == 1 and "AE" in page["aliases"]
    assert page["out_links"] == ["beta-store", "doc-storage-engines-guide"]
    # cited: the document's title and source URI
    assert page["sources"] == [
        {"knowledge_id": wiki.doc_id, "title": "Storage engines guide", "source_uri": "guide.md"}
    ]
    assert page["sources_total"] == 1 and page["sources_cursor"] is None
    assert [p["slug"] for p in out["pages"]["items"]] == ["alpha-engine", "beta-store", "北京大兴"]
    assert {p["slug"] for p in out["backlinks"]["items"]} == {"alpha-engine", "doc-storage-engines-guide", "北京大兴"}
    assert out["sources"] == {
        "kb": wiki.kb_id,
        "slug": "alpha-engine",
        "items": [
            {
                "knowledge_id": wiki.doc_id,
                "title": "Storage engines guide",
                "source_uri": "guide.md",
                "position": 1,
                "status": "pending",
                "evidence": ["Alpha Engine writes to Beta Store."],
            }
        ],
        "next_cursor": None,
    }
    if connect.transport == "stdio":  # its messages went to stderr: stdout carried the protocol alone
        assert "kbwiki: serving tenant 1 over MCP on stdio" in connect.stderr()


def test_paging_with_cursors_and_offsets(connect, wiki, clean_db):
    grow(clean_db, wiki, pages=57, documents=0)
    long = "\n".join(f"Line {i} of a long page about [[beta-store|Beta Store]]." for i in range(700))
    assert len(long) > 2 * READ_CHARS
    kbs = KnowledgeBaseRepository(clean_db)
    kb = kbs.get_or_create(1, "web-demo")
    for name in ("a-kb", "z-kb"):
        kbs.get_or_create(1, name)
    WikiPageRepository(clean_db).save_many(
        [
            Page(
                tenant_id=1,
                knowledge_base_id=kb.id,
                slug="long-page",
                title="Long page",
                page_type="concept",
                content=long,
                source_refs=[SourceRef(knowledge_id=f"doc-{i}", title=f"Doc {i}") for i in range(60)],
            )
        ]
    )

    async def scenario(client):
        async def every(tool, args, limit):
            items, cursor, calls = [], None, 0
            while True:
                got = structured(await client.call_tool(tool, {**args, "limit": limit, "cursor": cursor}))
                items += got["items"]
                calls += 1
                assert len(got["items"]) <= limit
                if not (cursor := got["next_cursor"]):
                    return items, calls

        listed = await every("list_kbs", {}, 1)
        linking = await every("backlinks", {"kb": wiki.kb_id, "slug": "beta-store"}, 2)
        pages, page_calls = await every("list_pages", {"kb": wiki.kb_id}, 10)
        hits, hit_calls = await every("search", {"kb": wiki.kb_id, "query": "thing"}, 7)
        cited, source_calls = await every("sources", {"kb": wiki.kb_id, "slug": "long-page"}, 25)
        chunks, offset = [], 0
        while offset is not None:
            got = structured(
                await client.call_tool("read_page", {"kb": wiki.kb_id, "slug": "long-page", "offset": offset})
            )
            assert got["offset"] == offset and len(got["content"]) <= READ_CHARS
            assert (got["note"] != "") == (got["next_offset"] is not None)
            chunks.append(got)
            offset = got["next_offset"]
        return listed, linking, pages, page_calls, hits, hit_calls, cited, source_calls, chunks

    listed, linking, pages, page_calls, hits, hit_calls, cited, source_calls, chunks = run(connect, scenario)
    assert [k["name"] for k in listed[0]] == ["a-kb", "web-demo", "z-kb"] and listed[1] == 3
    assert [p["slug"] for p in linking[0]] == ["alpha-engine", "doc-storage-engines-guide", "long-page", "北京大兴"]
    assert linking[1] == 2
    slugs = [p["slug"] for p in pages]
    assert len(slugs) == 6 + 57 + 1 == len(set(slugs)) and page_calls == 7  # every page once, A-Z
    assert [p["title"].lower() for p in pages] == sorted(p["title"].lower() for p in pages)
    assert len(hits) == len({h["slug"] for h in hits}) >= 57 and hit_calls > 1
    assert [s["position"] for s in cited] == list(range(1, 61)) and source_calls == 3
    assert cited[0]["source_uri"] is None  # "doc-0" is no document of the KB
    assert "".join(c["content"] for c in chunks) == long and len(chunks) == -(-len(long) // READ_CHARS)
    assert all(c["content"].endswith("\n") for c in chunks[:-1])  # cut after a line: no link split
    assert chunks[0]["sources_total"] == 60 and len(chunks[0]["sources"]) == 50 and chunks[0]["sources_cursor"]


def test_another_tenants_kb_and_unknown_pages_are_not_found(connect, wiki):
    other = wiki.other_kb_id  # tenant 2's KB "secret", with a page "alpha-engine" of its own

    async def scenario(client):
        return [
            await client.call_tool("search", {"kb": other, "query": "secret"}),
            await client.call_tool("read_page", {"kb": other, "slug": "alpha-engine"}),
            await client.call_tool("list_pages", {"kb": other}),
            await client.call_tool("backlinks", {"kb": other, "slug": "alpha-engine"}),
            await client.call_tool("sources", {"kb": other, "slug": "alpha-engine"}),
            await client.call_tool("read_page", {"kb": "no-such-kb", "slug": "alpha-engine"}),
            await client.call_tool("read_page", {"kb": wiki.kb_id, "slug": "no-such-page"}),
            await client.call_tool("backlinks", {"kb": wiki.kb_id, "slug": "no-such-page"}),
            await client.call_tool("sources", {"kb": wiki.kb_id, "slug": "no-such-page"}),
        ]

    errors = [error_text(r) for r in run(connect, scenario)]
    assert all("not found" in e for e in errors), errors
    assert all("list_kbs gives the KB ids" in e for e in errors[:6])
    assert not any("Secret" in e or "Traceback" in e for e in errors)


def test_bad_cursors_and_arguments_are_tool_errors(connect, wiki):
    async def scenario(client):
        search = structured(await client.call_tool("search", {"kb": wiki.kb_id, "query": "a", "limit": 1}))
        assert search["next_cursor"]
        return [
            await client.call_tool("list_pages", {"kb": wiki.kb_id, "cursor": "not-a-cursor"}),
            # a cursor of another listing
            await client.call_tool("list_pages", {"kb": wiki.kb_id, "cursor": search["next_cursor"]}),
            await client.call_tool("sources", {"kb": wiki.kb_id, "slug": "alpha-engine", "cursor": "%%%"}),
            await client.call_tool("read_page", {"kb": wiki.kb_id, "slug": "alpha-engine", "offset": 10**6}),
        ], [
            await client.call_tool("list_pages", {"kb": wiki.kb_id, "limit": 0}),
            await client.call_tool("read_page", {"kb": wiki.kb_id}),
        ]

    bad, invalid = run(connect, scenario)
    texts = [error_text(r) for r in bad]
    assert all("bad input" in t for t in texts), texts
    assert "past the page's end" in texts[-1]
    assert all(error_text(r) and "Traceback" not in error_text(r) for r in invalid)


@pytest.fixture()
def token_server(clean_db, wiki):
    with serving(create_app(clean_db, tenant_id=1, api_token=TOKEN)) as base:
        yield f"{base}/mcp"


def test_http_needs_the_api_token_when_it_is_set(token_server, wiki):
    async def with_token():
        async with http_client(token_server, TOKEN) as client:
            return structured(await client.call_tool("list_kbs", {}))

    assert [k["name"] for k in anyio.run(with_token)["items"]] == ["web-demo"]

    async def without(token):
        async with http_client(token_server, token) as client:
            await client.call_tool("list_kbs", {})

    for token in (None, "wrong-token-0123456789"):
        with pytest.raises(Exception) as refused:  # noqa: B017  (the SDK raises its own kinds, in a group)
            anyio.run(without, token)
        assert "this server needs its API token" in repr(refused.value)  # our 401's message, through the SDK
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    r = httpx.post(token_server, json=body, headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert "KBWIKI_API_TOKEN" in r.json()["error"]["message"]


def test_http_refuses_other_origins_hosts_and_streams(clean_db, wiki):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    with serving(create_app(clean_db, tenant_id=1)) as base:
        evil = httpx.post(f"{base}/mcp", json=body, headers={**accept, "Origin": "https://evil.example"})
        rebound = httpx.post(f"{base}/mcp", json=body, headers={**accept, "Host": "evil.example"})
        local = httpx.post(f"{base}/mcp", json=body, headers={**accept, "Origin": "http://localhost:6274"})
        stream = httpx.get(f"{base}/mcp", headers={"Accept": "text/event-stream"}, timeout=30)
    assert evil.status_code == 403 and rebound.status_code == 400
    # stateless: no event stream is opened (it would stay open for nothing), no session to delete
    assert stream.status_code == 405 and stream.headers["allow"] == "POST"
    assert local.status_code == 200 and {t["name"] for t in local.json()["result"]["tools"]} == TOOLS


def test_kbwiki_serve_mounts_mcp_with_its_token(clean_db, wiki, database_url, tmp_path):
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "KBWIKI_HOME": str(tmp_path / "home"), "KBWIKI_API_TOKEN": TOKEN}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbwiki.cli", "serve", "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                refused = httpx.post(url, json={}, timeout=30)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "kbwiki serve did not answer within 60 s"
                time.sleep(0.1)

        async def with_token():
            async with http_client(url, TOKEN) as client:
                return structured(await client.call_tool("read_page", {"kb": wiki.kb_id, "slug": "beta-store"}))

        assert refused.status_code == 401
        assert anyio.run(with_token)["title"] == "Beta Store"  # the lifespan ran under uvicorn: the tools answer
    finally:
        proc.terminate()
        proc.wait(10)
