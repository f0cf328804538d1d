"""The web face over real HTTP (uvicorn on a free port) and a real PostgreSQL database."""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

import httpx
import pytest

from kbwiki.web.app import create_app
from repos.dead_letters import TaskDeadLetterRepository
from repos.knowledge import DocumentRepository
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from tests.support.web import HOSTILE_TITLE, build_wiki, serving

TOKEN = "test-ops-token-0123456789"

HTTP_TIMEOUT_S = 60.0


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


@pytest.fixture()
def requeued():
    return []


@pytest.fixture()
def client(clean_db, wiki, requeued):
    def requeue(dead_letter_id: int, tenant_id: int) -> str:
        requeued.append((dead_letter_id, tenant_id))
        return "reinserted"

    with serving(create_app(clean_db, tenant_id=1, ops_token=TOKEN, requeue=requeue)) as base:
        # a loaded CI machine can take seconds per request: the tests check answers, not speed (bench/web.py does)
        with httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S) as c:
            yield c


def test_kb_list_and_home(client, wiki):
    r = client.get("/")
    assert r.status_code == 200 and "web-demo" in r.text and "secret" not in r.text
    assert "1 summary, 3 entities, 1 concept<" in r.text  # not "1 summaries", "1 concepts"
    home = client.get(f"/kb/{wiki.kb_id}")
    assert home.status_code == 200
    assert "entity: 3" in home.text and "Storage engines guide" in home.text
    assert f'href="/kb/{wiki.kb_id}/page/alpha-engine"' in home.text  # the index page's link


def test_page_view_links_backlinks_aliases_sources(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/page/alpha-engine")
    assert r.status_code == 200
    assert f'<a href="/kb/{wiki.kb_id}/page/beta-store" class="wikilink"' in r.text
    backlinks = r.text.split("Backlinks")[1]
    for slug in ("beta-store", "hostile", "index", "doc-storage-engines-guide"):
        assert f"/page/{slug}" in backlinks
    assert '<span class="alias">AE</span>' in r.text and "version 1" in r.text
    assert f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}?page=alpha-engine" in r.text
    assert "Content-Security-Policy" in r.headers and "script-src 'self'" in r.headers["Content-Security-Policy"]


def test_backlinks_json(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/backlinks.json/beta-store")
    assert {b["slug"] for b in r.json()} == {"alpha-engine", "北京大兴", "doc-storage-engines-guide"}
    assert client.get(f"/kb/{wiki.other_kb_id}/backlinks.json/alpha-engine").status_code == 404


def test_cjk_slug_page(client, wiki):
    summary = client.get(f"/kb/{wiki.kb_id}/page/doc-storage-engines-guide").text
    href = f"/kb/{wiki.kb_id}/page/{quote('北京大兴', safe='')}"
    assert f'href="{href}"' in summary  # links carry the slug percent-encoded
    r = client.get(href)
    assert r.status_code == 200 and '<h1 id="page-title">北京大兴</h1>' in r.text


def test_hostile_title_and_body_render_inert(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/page/hostile")
    assert r.status_code == 200
    assert HOSTILE_TITLE not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    html = r.text.lower()
    assert "<script>alert" not in html
    assert not re.search(r"<img[^>]*onerror", html)  # the <img> is text, never a tag
    assert not any(href.startswith("javascript") for href in re.findall(r'href="([^"]*)"', html))
    # search results carry the title escaped too
    hits = client.get(f"/kb/{wiki.kb_id}/search", params={"q": "script"}, headers={"HX-Request": "true"})
    assert "<script>" not in hits.text


def test_document_view(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}", params={"page": "alpha-engine"})
    assert r.status_code == 200
    assert "Alpha Engine writes to Beta Store." in r.text  # the evidence the page cites
    assert "/page/doc-storage-engines-guide" in r.text and "/page/beta-store" in r.text
    assert 'status <span class="status pending">pending</span>' in r.text


def test_search_titles_aliases_text_latin_and_cjk(client, wiki):
    def slugs(q):
        r = client.get(f"/kb/{wiki.kb_id}/search", params={"q": q}, headers={"HX-Request": "true"})
        assert r.status_code == 200 and "<html" not in r.text  # a fragment for htmx
        return [unquote(slug) for slug in re.findall(r"/page/([^\"]+)\"", r.text)]

    assert slugs("alpha")[0] == "alpha-engine"  # title before the pages that mention it
    assert slugs("alpha db")[0] == "alpha-engine"  # an alias
    assert slugs("zebraf") == ["beta-store"]  # text, the last word as a prefix
    assert slugs("北京")[0] == "北京大兴"  # 2 characters: a title prefix, then the text
    assert "北京大兴" in slugs("国际机场")  # CJK inside page text
    assert slugs("nothing-like-this") == []
    full = client.get(f"/kb/{wiki.kb_id}/search", params={"q": "beta"})
    assert "<html" in full.text and "/page/beta-store" in full.text


def test_graph_json_and_view(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/graph.json/beta-store")
    data = r.json()
    ids = {n["id"] for n in data["nodes"]}
    assert data["center"] == "beta-store"
    assert {"alpha-engine", "北京大兴", "hostile", "index"} <= ids  # hostile and index: two hops
    assert {"source": "alpha-engine", "target": "beta-store"} in data["edges"]
    assert client.get(f"/kb/{wiki.kb_id}/graph/beta-store").status_code == 200
    assert client.get(f"/kb/{wiki.kb_id}/graph.json/no-such-page").status_code == 404


def test_another_tenants_urls_are_404(client, wiki):
    assert client.get(f"/kb/{wiki.other_kb_id}").status_code == 404
    assert client.get(f"/kb/{wiki.other_kb_id}/page/alpha-engine").status_code == 404
    assert client.get(f"/kb/{wiki.other_kb_id}/graph.json/alpha-engine").status_code == 404
    assert client.get(f"/kb/{wiki.other_kb_id}/search", params={"q": "secret"}).status_code == 404
    assert client.get(f"/ops/dead-letters/{wiki.other_dead_letter_id}").status_code == 404
    assert "secret error" not in client.get("/ops").text
    assert "secret" not in client.get("/metrics").text
    # its dead letter cannot be purged either, even signed in
    client.post("/ops/login", data={"token": TOKEN})
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ops").text).group(1)
    r = client.post(f"/ops/dead-letters/{wiki.other_dead_letter_id}/purge", data={"csrf": csrf})
    assert r.status_code == 404


def test_lint_view(client, wiki, clean_db):
    from tests.support.reader import store_lint_report

    r = client.get(f"/kb/{wiki.kb_id}/lint")
    assert r.status_code == 200 and "No report yet" in r.text
    report = store_lint_report(clean_db, wiki)
    r = client.get(f"/kb/{wiki.kb_id}/lint")
    assert f"health score <strong>{report.score}</strong>" in r.text
    for issue_type, n in report.counts.items():
        assert f"<td>{issue_type}</td><td>{n}</td>" in r.text


def test_ops_page_read_only_until_signed_in(client, wiki, clean_db, requeued):
    page = client.get("/ops")
    assert "RuntimeError: extractor exploded" in page.text and "wiki:ingest" in page.text
    assert 'name="csrf"' not in page.text  # no action without a session
    r = client.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={"csrf": "x"})
    assert r.status_code == 403
    assert client.post("/ops/login", data={"token": "wrong-token-wrong-token"}).headers.get("set-cookie") is None
    login = client.post("/ops/login", data={"token": TOKEN})
    cookie = login.headers["set-cookie"].lower()
    assert "samesite=strict" in cookie and "httponly" in cookie
    csrf = re.search(r'name="csrf" value="([^"]+)"', client.get("/ops").text).group(1)
    # a signed-in browser tricked into posting without the form's field is refused
    assert client.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={}).status_code == 403
    r = client.post(f"/ops/dead-letters/{wiki.dead_letter_id}/requeue", data={"csrf": csrf})
    assert r.status_code == 303 and requeued == [(wiki.dead_letter_id, 1)]
    r = client.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={"csrf": csrf})
    assert r.status_code == 303 and "purged" in client.get(r.headers["location"]).text
    assert TaskDeadLetterRepository(clean_db).get(wiki.dead_letter_id, tenant_id=1) is None


def test_ops_and_metrics_leave_out_a_letter_whose_document_is_done(client, wiki, clean_db):
    DocumentRepository(clean_db).set_status([wiki.doc_id], "done")
    late = TaskDeadLetterRepository(clean_db).insert(  # a map message that ran out of retries in an outage
        task_type="wiki_map",
        tenant_id=1,
        scope="knowledge_base",
        scope_id=wiki.kb_id,
        related_id=wiki.doc_id,
        last_error="PoolTimeout: couldn't get a connection after 30.00 sec",
        fail_count=4,
    )
    ops = client.get("/ops").text
    assert "PoolTimeout" not in ops and f'id="dl-{late.id}"' not in ops
    assert "RuntimeError: extractor exploded" in ops  # the open one still shows
    assert 'kbwiki_dead_letters{task_type="wiki_map"}' not in client.get("/metrics").text
    shown = client.get(f"/ops/dead-letters/{late.id}").text
    assert "<th>resolved</th>" in shown and "document_done" in shown


def test_ops_without_token_is_read_only(clean_db, wiki):
    with (
        serving(create_app(clean_db, tenant_id=1, ops_token=None)) as base,
        httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S) as c,
    ):
        assert "Read-only" in c.get("/ops").text
        assert c.post("/ops/login", data={"token": ""}).headers.get("set-cookie") is None
        assert c.post(f"/ops/dead-letters/{wiki.dead_letter_id}/purge", data={"csrf": ""}).status_code == 403


def test_metrics(client, wiki):
    r = client.get("/metrics")
    assert r.status_code == 200
    assert 'kbwiki_pages{kb="web-demo",page_type="entity"} 3.0' in r.text
    assert 'kbwiki_dead_letters{task_type="wiki:ingest"} 1.0' in r.text
    assert 'kbwiki_documents{kb="web-demo",status="failed"} 1.0' in r.text
    assert 'kbwiki_lane_rows{kb="web-demo",lane="wiki:ingest"} 1.0' in r.text
    age = float(re.search(r'kbwiki_lane_oldest_age_seconds\{kb="web-demo",lane="wiki:ingest"\} (\S+)', r.text).group(1))
    assert 0 <= age < 600


def test_exact_title_first_among_many_substring_matches(client, wiki, clean_db):
    from repos.pages import WikiPageRepository
    from wiki.models import Page

    pages = [
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug=f"restore-{i}",
            title=f"Restore {i}",
            page_type="concept",
            content="Restore things.\n",
        )
        for i in range(300)
    ]
    pages.append(
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug="store",
            title="Store",
            page_type="concept",
            content="A store.\n",
        )
    )
    WikiPageRepository(clean_db).bulk_insert(pages)
    r = client.get(f"/kb/{wiki.kb_id}/search", params={"q": "Store"}, headers={"HX-Request": "true"})
    found = re.findall(r"/page/([^\"]+)\"", r.text)
    assert found[0] == "store"  # exact, though 300 more titles hold the word
    assert "beta-store" in found[:3]  # then substrings by similarity: "beta store" is closer than "restore 12"
    assert len(found) <= 20


def test_kbwiki_serve_command_serves_its_tenant(clean_db, wiki, database_url, tmp_path):
    import os
    import subprocess
    import sys
    import time

    from tests.support.web import free_port

    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url, "KBWIKI_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbwiki.cli", "serve", "--port", str(port), "--tenant", "2"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/", timeout=HTTP_TIMEOUT_S)
                break
            except httpx.TransportError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "kbwiki serve did not answer within 60 s"
                time.sleep(0.1)
        assert "secret" in r.text and "web-demo" not in r.text
        assert httpx.get(f"http://127.0.0.1:{port}/kb/{wiki.kb_id}").status_code == 404
    finally:
        proc.terminate()
        proc.wait(10)


def test_kbwiki_serve_on_a_busy_port_is_one_line_and_exit_1(database_url, tmp_path):
    import os
    import socket
    import subprocess
    import sys

    env = {**os.environ, "DATABASE_URL": database_url, "KBWIKI_HOME": str(tmp_path / "home")}
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "kbwiki.cli", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines() == [
        f"Error: port {port} on 127.0.0.1 is in use (another server listens there): stop it or choose another --port"
    ]
    assert not (tmp_path / "home").exists()  # nothing was started


def test_requeue_button_puts_the_document_back_in_its_lane(clean_db, wiki, deps):  # noqa: F811 (the fixture)
    from repos.knowledge import DocumentRepository
    from repos.pending_ops import TaskPendingOpsRepository
    from stages.requeue import requeue_dead_letter

    failed_id = TaskDeadLetterRepository(clean_db).get(wiki.dead_letter_id, tenant_id=1).related_id
    app = create_app(
        clean_db,
        tenant_id=1,
        ops_token=TOKEN,
        requeue=lambda i, t: requeue_dead_letter(i, deps, tenant_id=t),
    )
    with serving(app) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S) as c:
        c.post("/ops/login", data={"token": TOKEN})
        csrf = re.search(r'name="csrf" value="([^"]+)"', c.get("/ops").text).group(1)
        r = c.post(f"/ops/dead-letters/{wiki.dead_letter_id}/requeue", data={"csrf": csrf})
        assert "reinserted" in c.get(r.headers["location"]).text
    assert TaskDeadLetterRepository(clean_db).get(wiki.dead_letter_id, tenant_id=1) is None
    lane = TaskPendingOpsRepository(clean_db).peek("wiki:ingest", "knowledge_base", wiki.kb_id)
    assert failed_id in {op.dedup_key for op in lane}
    assert DocumentRepository(clean_db).get(failed_id).status == "pending"


def test_hub_graph_and_backlinks_are_capped(client, wiki, clean_db):
    from repos.pages import WikiPageRepository
    from repos.web import GRAPH_MAX_NODES, GRAPH_PER_NODE, MAX_LIST
    from wiki.models import Page

    # 300 pages link the hub; each also links 30 pages of its own (the second hop)
    pages = [
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug=f"spoke-{i}",
            title=f"Spoke {i}",
            page_type="concept",
            content="[[hub|Hub]] " + " ".join(f"[[leaf-{i}-{j}|x]]" for j in range(30)),
        )
        for i in range(300)
    ]
    pages.append(
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug="hub",
            title="Hub",
            page_type="concept",
            content="The hub.\n",
        )
    )
    pages.append(
        Page(
            tenant_id=1,
            knowledge_base_id=wiki.kb_id,
            slug="many",
            title="Many",
            page_type="concept",
            content=" ".join(f"[[spoke-{i}|s{i}]]" for i in range(250)) + " [[gone|Gone]]",
        )
    )
    WikiPageRepository(clean_db).bulk_insert(pages)
    many = client.get(f"/kb/{wiki.kb_id}/page/many").text
    assert many.count('class="wikilink"') == 250 and many.count('class="wikilink dead"') == 1
    graph = client.get(f"/kb/{wiki.kb_id}/graph.json/hub").json()
    assert len(graph["nodes"]) <= GRAPH_MAX_NODES
    assert sum(e["target"] == "hub" for e in graph["edges"]) == GRAPH_PER_NODE  # in-links read per node
    assert len(client.get(f"/kb/{wiki.kb_id}/backlinks.json/hub").json()) == MAX_LIST
    assert "Backlinks (200+)" in client.get(f"/kb/{wiki.kb_id}/page/hub").text
