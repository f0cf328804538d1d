"""The web face under test: a small wiki in two tenants and the app served by uvicorn on a free port."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import uvicorn

from repos.dead_letters import TaskDeadLetterRepository
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from repos.pages import WikiPageRepository
from repos.pending_ops import TaskPendingOpsRepository
from wiki.models import Page, SourceRef

HOSTILE_TITLE = "<script>alert(1)</script>"
HOSTILE_BODY = (
    "Look: <img src=x onerror=\"document.title='pwned'\"> and [click](javascript:alert(1))"
    " and <script>alert(2)</script>"
)


@dataclass
class WikiFixture:
    """What :func:`build_wiki` wrote: KB ids, a document id and dead-letter ids per tenant."""

    kb_id: str
    other_kb_id: str
    doc_id: str
    dead_letter_id: int
    other_dead_letter_id: int
    slugs: dict[str, str] = field(default_factory=dict)


def build_wiki(pool) -> WikiFixture:
    """Tenant 1's KB ``web-demo`` (a summary, Latin and CJK entity pages linking each other, a
    hostile page, an index) with one dead letter, and tenant 2's KB ``secret`` with a page and a
    dead letter of its own."""
    kbs, docs, pages, dead = (
        KnowledgeBaseRepository(pool),
        DocumentRepository(pool),
        WikiPageRepository(pool),
        TaskDeadLetterRepository(pool),
    )
    kb = kbs.get_or_create(1, "web-demo")
    doc, _ = docs.upsert(
        kb,
        title="Storage engines guide",
        source_uri="guide.md",
        content="Alpha Engine writes to Beta Store. 北京大兴国际机场位于北京。",
    )
    failed, _ = docs.upsert(kb, title="Broken doc", source_uri="broken.md", content="x" * 50)
    docs.set_status([failed.id], "failed", error="ValueError: cannot parse\nTraceback ...")
    ref = [SourceRef(knowledge_id=doc.id, title=doc.title)]
    facts = {
        doc.id: {
            "doc_title": doc.title,
            "summary_slug": "doc-storage-engines-guide",
            "description": "",
            "evidence": ["Alpha Engine writes to Beta Store."],
        }
    }

    def page(slug, title, page_type, content, aliases=(), **kw):
        return Page(
            tenant_id=1,
            knowledge_base_id=kb.id,
            slug=slug,
            title=title,
            page_type=page_type,
            content=content,
            aliases=list(aliases),
            source_refs=ref,
            **kw,
        )

    pages.save_many(
        [
            page(
                "doc-storage-engines-guide",
                "Storage engines guide",
                "summary",
                "How [[alpha-engine|Alpha Engine]] and [[beta-store|Beta Store]] work, near [[北京大兴|北京大兴]].\n",
                summary="How storage engines work.",
            ),
            page(
                "alpha-engine",
                "Alpha Engine",
                "entity",
                "Alpha Engine is a storage engine that writes to [[beta-store|Beta Store]].\n\n"
                "## What the sources say\n\n- Alpha Engine writes to Beta Store."
                " ([[doc-storage-engines-guide|Storage engines guide]])\n",
                aliases=["AE", "alpha db"],
                facts=facts,
            ),
            page(
                "beta-store",
                "Beta Store",
                "entity",
                "Beta Store is a durable key-value store used by [[alpha-engine|Alpha Engine]]. Zebrafish mention.\n",
            ),
            page("北京大兴", "北京大兴", "entity", "北京大兴国际机场位于北京南部，连接[[beta-store|Beta Store]]。\n"),
            page("hostile", HOSTILE_TITLE, "concept", HOSTILE_BODY + "\n\nSee [[alpha-engine|Alpha]].\n"),
            page("index", "Index", "index", "Wiki of **web-demo**.\n\n- [[alpha-engine|Alpha Engine]]\n"),
        ]
    )
    letter = dead.insert(
        task_type="wiki:ingest",
        tenant_id=1,
        scope="knowledge_base",
        scope_id=kb.id,
        related_id=failed.id,
        payload={"op": "ingest", "dedup_key": failed.id},
        last_error="RuntimeError: extractor exploded\nTraceback (most recent call last): ...",
        fail_count=5,
    )
    TaskPendingOpsRepository(pool).enqueue(
        tenant_id=1, task_type="wiki:ingest", scope="knowledge_base", scope_id=kb.id, op="ingest", dedup_key=doc.id
    )
    other = kbs.get_or_create(2, "secret")
    pages.save_many(
        [
            Page(
                tenant_id=2,
                knowledge_base_id=other.id,
                slug="alpha-engine",
                title="Secret Alpha",
                page_type="entity",
                content="Tenant two's secret.\n",
            )
        ]
    )
    other_letter = dead.insert(
        task_type="wiki:ingest",
        tenant_id=2,
        scope="knowledge_base",
        scope_id=other.id,
        payload={},
        last_error="secret error",
        fail_count=1,
    )
    return WikiFixture(kb.id, other.id, doc.id, letter.id, other_letter.id)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(app, deadline_s: float = 20, trusted_proxies: list[str] | None = None) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a thread on a free port; yields its base URL. X-Forwarded-For
    and -Proto are believed from ``trusted_proxies`` only (as ``kbwiki serve`` does; None: no one)."""
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=free_port(),
            log_level="warning",
            lifespan="on",  # create_app's lifespan runs the MCP session manager (/mcp)
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=trusted_proxies or None,
        )
    )
    thread = threading.Thread(target=server.run, name="web-under-test", daemon=True)
    thread.start()
    end = time.monotonic() + deadline_s
    while not server.started:
        if time.monotonic() > end or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(10)


def add_hub(pool, kb_id: str, spokes: int = 20, leaves: int = 8) -> None:
    """Tenant 1's pages ``hub``, ``spoke-<i>`` (each linking the hub and its ``leaves`` pages) and
    ``leaf-<i>-<j>`` in the KB: the hub has ``spokes`` in-links, and its graph holds more than
    ``GRAPH_MAX_NODES`` pages when ``spokes`` and ``leaves`` are the defaults."""

    def page(slug: str, title: str, page_type: str, content: str) -> Page:
        return Page(tenant_id=1, knowledge_base_id=kb_id, slug=slug, title=title, page_type=page_type, content=content)

    pages = [page("hub", "Hub", "concept", "The hub.\n")]
    for i in range(spokes):
        links = " ".join(f"[[leaf-{i}-{j}|leaf {j}]]" for j in range(leaves))
        pages.append(page(f"spoke-{i:02d}", f"Spoke {i}", "entity", f"[[hub|Hub]] {links}\n"))
        pages += [page(f"leaf-{i}-{j}", f"Leaf {i}.{j}", "summary", "A leaf.\n") for j in range(leaves)]
    WikiPageRepository(pool).bulk_insert(pages)


def add_cited_hub(pool, kb_id: str, documents: int, uri: str = "s/{:03}.md", title: str = "D{}") -> list:
    """``documents`` new documents of tenant 1's KB (source ``uri`` and ``title`` formatted with
    their number) and the concept page ``hub`` citing them all, in that order; returns them."""
    kb = KnowledgeBaseRepository(pool).get_active(1, kb_id)
    docs = DocumentRepository(pool)
    made = [
        docs.upsert(kb, title=title.format(i), source_uri=uri.format(i), content=f"t {i}")[0] for i in range(documents)
    ]
    hub = Page(
        tenant_id=1,
        knowledge_base_id=kb_id,
        slug="hub",
        title="Hub",
        page_type="concept",
        content="Hub.",
        source_refs=[SourceRef(knowledge_id=d.id, title=d.title) for d in made],
    )
    WikiPageRepository(pool).save(hub)
    return made
