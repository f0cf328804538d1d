"""The web face's reading aids over real HTTP and a real PostgreSQL database: a document's full
text in parts, the graph's legend and the caps its JSON reports, the search drop-down's script."""

from __future__ import annotations

import re

import httpx
import pytest

from kbwiki.web.app import create_app
from kbwiki.web.graph_style import NODE_STYLES
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from repos.web import GRAPH_MAX_NODES, GRAPH_PER_NODE, TEXT_PART_CHARS
from tests.support.web import add_hub, build_wiki, serving
from wiki.models import PageType

HTTP_TIMEOUT_S = 60.0


@pytest.fixture()
def wiki(clean_db):
    return build_wiki(clean_db)


@pytest.fixture()
def client(clean_db, wiki):
    with serving(create_app(clean_db, tenant_id=1)) as base, httpx.Client(base_url=base, timeout=HTTP_TIMEOUT_S) as c:
        yield c


def _document(pool, tenant_id: int, kb_name: str, content: str, source_uri: str = "long.md") -> str:
    kb = KnowledgeBaseRepository(pool).get_or_create(tenant_id, kb_name)
    doc, _ = DocumentRepository(pool).upsert(kb, title="Long document", source_uri=source_uri, content=content)
    return doc.id


def test_full_text_holds_what_the_document_view_cuts_and_shows_it_escaped(client, wiki, clean_db):
    content = "<script>alert(3)</script> <b>bold</b>\n" + "word " * 600 + "TAIL-MARKER"
    doc_id = _document(clean_db, 1, "web-demo", content)
    view = client.get(f"/kb/{wiki.kb_id}/doc/{doc_id}")
    assert view.status_code == 200 and "TAIL-MARKER" not in view.text  # the document view shows 2,000
    assert f"The first 2,000 of {len(content):,} characters" in view.text
    assert f'id="full-text" href="/kb/{wiki.kb_id}/doc/{doc_id}/text"' in view.text

    text = client.get(f"/kb/{wiki.kb_id}/doc/{doc_id}/text")
    assert text.status_code == 200
    assert "TAIL-MARKER" in text.text and f"Characters 1–{len(content):,} of {len(content):,}." in text.text
    assert "&lt;script&gt;alert(3)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt;" in text.text  # text, never markup
    assert "<script>alert" not in text.text and "<b>bold" not in text.text
    assert "script-src 'self'" in text.headers["content-security-policy"]
    assert 'class="pager"' not in text.text  # one part


def test_a_short_document_has_no_full_text_link_but_its_text_view_answers(client, wiki):
    view = client.get(f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}")
    assert "<h2>Text</h2>" in view.text and 'id="full-text"' not in view.text
    text = client.get(f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}/text")
    assert text.status_code == 200 and "Alpha Engine writes to Beta Store." in text.text


def test_a_huge_document_is_read_in_parts_of_bounded_size(client, wiki, clean_db):
    # 25,000 numbered lines of 10 characters: 250,000 characters, two and a half parts
    content = "".join(f"{i:09d}\n" for i in range(25_000))
    doc_id = _document(clean_db, 1, "web-demo", content)
    url = f"/kb/{wiki.kb_id}/doc/{doc_id}/text"
    per_line = TEXT_PART_CHARS // 10

    first = client.get(url)
    body = re.search(r'<pre class="text" id="document-text">(.*?)</pre>', first.text, re.S).group(1)
    assert body == content[:TEXT_PART_CHARS]  # exactly the first part, nothing more
    assert len(first.text) < TEXT_PART_CHARS + 10_000
    assert f"Characters 1–{TEXT_PART_CHARS:,} of 250,000." in first.text and "part 1 of 3" in first.text
    assert 'rel="next" href="?part=1"' in first.text and 'rel="prev"' not in first.text

    last = client.get(url, params={"part": "2"})
    assert f"{24_999:09d}" in last.text and f"{2 * per_line - 1:09d}\n" not in last.text
    assert f"Characters {2 * TEXT_PART_CHARS + 1:,}–250,000 of 250,000." in last.text
    assert 'rel="prev" href="?part=1"' in last.text and 'rel="next"' not in last.text

    assert client.get(url, params={"part": "3"}).status_code == 404  # past the end
    assert client.get(url, params={"part": "999999999"}).status_code == 404  # no integer overflow
    assert "Characters 1–" in client.get(url, params={"part": "x"}).text  # not a number: the first part


def test_another_tenants_or_kbs_document_text_is_404(client, wiki, clean_db):
    secret = _document(clean_db, 2, "secret", "Tenant two's secret text.", source_uri="secret.md")
    elsewhere = _document(clean_db, 1, "other-kb", "Another KB's text.", source_uri="other.md")
    assert client.get(f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}/text").status_code == 200  # ours: the control
    assert client.get(f"/kb/{wiki.other_kb_id}/doc/{secret}/text").status_code == 404
    assert client.get(f"/kb/{wiki.kb_id}/doc/{secret}/text").status_code == 404  # the KB is ours, not the doc
    assert client.get(f"/kb/{wiki.kb_id}/doc/{elsewhere}/text").status_code == 404  # another KB of ours
    assert client.get(f"/kb/{wiki.kb_id}/doc/no-such-doc/text").status_code == 404
    assert "secret" not in client.get(f"/kb/{wiki.kb_id}/doc/{secret}/text").text


def test_graph_json_says_where_its_caps_cut(client, wiki, clean_db):
    small = client.get(f"/kb/{wiki.kb_id}/graph.json/beta-store").json()
    assert small["capped"] == {"pages": False, "links": False}
    assert not any(n["links_capped"] for n in small["nodes"])
    assert small["limits"] == {"hops": 2, "per_node": GRAPH_PER_NODE, "max_nodes": GRAPH_MAX_NODES}

    add_hub(clean_db, wiki.kb_id, spokes=20, leaves=8)  # 1 + 12 spokes + 96 leaves > 80 pages
    hub = client.get(f"/kb/{wiki.kb_id}/graph.json/hub").json()
    assert hub["capped"] == {"pages": True, "links": True}
    assert len(hub["nodes"]) == GRAPH_MAX_NODES
    capped = {n["id"] for n in hub["nodes"] if n["links_capped"]}
    assert capped == {"hub"}  # 20 in-links, 12 read; a spoke's 9 out-links all fit
    assert sorted(e["source"] for e in hub["edges"] if e["target"] == "hub") == [f"spoke-{i:02d}" for i in range(12)]


def test_exactly_per_node_links_is_not_capped(client, wiki, clean_db):
    add_hub(clean_db, wiki.kb_id, spokes=GRAPH_PER_NODE, leaves=0)
    graph = client.get(f"/kb/{wiki.kb_id}/graph.json/hub").json()
    assert graph["capped"] == {"pages": False, "links": False}
    assert sum(e["target"] == "hub" for e in graph["edges"]) == GRAPH_PER_NODE


def test_graph_view_has_a_legend_of_types_marks_and_caps(client, wiki):
    r = client.get(f"/kb/{wiki.kb_id}/graph/beta-store")
    legend = r.text.split('id="graph-legend"')[1].split("</aside>")[0]
    for page_type in PageType:  # every type the wiki makes, with what graph.js draws it as
        style = NODE_STYLES[page_type.value]
        assert f'data-type="{page_type.value}" data-colour="{style.colour}" data-shape="{style.shape}"' in legend
    assert len({s.shape for s in NODE_STYLES.values()}) == len(NODE_STYLES)  # not by colour alone
    assert "A → B: page A links to page B" in legend and "the page this graph is centred on" in legend
    assert f"at most {GRAPH_PER_NODE} out-links and {GRAPH_PER_NODE} in-links" in legend
    assert f"at most {GRAPH_MAX_NODES} pages" in legend
    # the cap notes are there, hidden until graph.js reads "capped" from the JSON
    assert re.search(r'<p id="graph-capped-links" class="cap-note" hidden>', legend)
    assert re.search(r'<p id="graph-capped-pages" class="cap-note" hidden>', legend)
    assert "#graph-legend li[data-type]" in client.get("/static/graph.js").text  # drawn as the legend says


def test_every_page_loads_the_search_script_from_this_server(client, wiki):
    page = client.get(f"/kb/{wiki.kb_id}/page/alpha-engine").text
    assert '<script src="/static/search.js" defer></script>' in page
    script = client.get("/static/search.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert "aria-activedescendant" in script.text


def test_a_deleted_documents_views_are_not_found(client, clean_db, wiki):
    # the attacker's trial: a deleted document's whole text stayed readable at /doc/<id>/text (its
    # id is in the public history of a page it wrote), though the read API answered 404
    assert client.get(f"/kb/{wiki.kb_id}/doc/{wiki.doc_id}/text").status_code == 200
    DocumentRepository(clean_db).set_status([wiki.doc_id], "deleted")
    for path in (f"/doc/{wiki.doc_id}", f"/doc/{wiki.doc_id}/text"):
        assert client.get(f"/kb/{wiki.kb_id}{path}").status_code == 404, path
