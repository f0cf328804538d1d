"""The web face's routes: KB list and home, page, search, graph, document and its full text,
lint report, operations and ``/metrics``. One tenant per app (:func:`create_app`'s ``tenant_id``).

Every KB-level route first finds the KB among the tenant's live ones and answers 404 otherwise,
so a URL for another tenant's KB, page, document or dead letter is a 404. Endpoints that read the
database are plain functions (Starlette runs them in its thread pool; the pool is psycopg's).
Every response carries the headers of ``kbwiki.web.guards`` (a Content-Security-Policy that
allows scripts from this server only: page HTML is sanitised by ``kbwiki.web.markdown`` and the
CSP is the second fence), requests naming a Host outside the allow-list are refused (DNS
rebinding), and only a signed-in operator sees error details (tracebacks, dead-letter payloads):
everyone else gets headlines, on any bind address, since a TLS proxy on loopback makes every
internet visitor a loopback client.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from psycopg_pool import ConnectionPool
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from kbwiki.api.app import PREFIX as API_PREFIX
from kbwiki.api.app import create_api
from kbwiki.command import command_deps
from kbwiki.mcp_server import McpEndpoint, build_server
from kbwiki.outage import RETRY_AFTER_S, RETRY_TEXT, SERVER_AWAY, OutageLog
from kbwiki.web.graph_style import NODE_STYLES
from kbwiki.web.guards import BodyLimit, RejectNul, SecurityHeaders
from kbwiki.web.metrics import KbwikiCollector
from kbwiki.web.ops import COOKIE, COOKIE_PATH, SESSION_S, OpsGuard, operator_form
from kbwiki.web.revisions import ROUTES as REVISION_ROUTES
from kbwiki.web.revisions import store_revert
from kbwiki.web.state import (
    Requeue,
    TtlCache,
    WebState,
    kb_url,
    page_html,
    render,
    session,
    the_kb,
    the_page,
    web_state,
)
from repos.dead_letters import TaskDeadLetterRepository
from repos.lint import LintRepository
from repos.pages import DEFAULT_REVISIONS_KEEP, WikiPageRepository
from repos.revisions import PageRevisionRepository
from repos.web import (
    GRAPH_HOPS,
    GRAPH_MAX_NODES,
    GRAPH_PER_NODE,
    MAX_LIST,
    SEARCH_LIMIT,
    TEXT_PART_CHARS,
    WebRepository,
)
from repos.web_sessions import WebSessionRepository
from stages.requeue import requeue_dead_letter
from wiki.cursor import decode_cursor, encode_cursor
from wiki.dedup import name_key
from wiki.errors import BadInput, DeadLetterNotFound, RequeueRefused, error_headline
from wiki.models import ITEM_TYPES, Fact, KnowledgeBase, PageType, page_type_or_none
from wiki.plural import counted, noun

HERE = Path(__file__).parent
#: Recent summaries and most-cited pages per type on a KB's home.
HOME_LIST = 20
#: Pages per page of the A-Z list, and the letters of its letter bar (a letter starts the list at
#: the first title from it, in PostgreSQL's lower(title) order).
AZ_PAGE = 100
AZ_LETTERS = "abcdefghijklmnopqrstuvwxyz"
#: Documents a page's "Mentioned in" list shows per page of the list.
MENTIONED_PER_PAGE = 50
#: Seconds page counts (a count over a KB's pages) are reused by the KB list and home.
COUNTS_CACHE_S = 10.0
#: Host names a server bound to loopback answers to (``KBWIKI_WEB_ALLOWED_HOSTS`` unset): any
#: other Host is a page that rebound its DNS name to this machine, refused with 400.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")  # an IPv6 Host is bracketed, as in a URL
#: What ``/ops?m=CODE&id=N`` may say: fixed texts, so a link cannot put words in the page's mouth.
MESSAGES = {
    "purged": "Dead letter {id} purged.",
    "reinserted": "Dead letter {id} reinserted: its op is back in its lane.",
    "resent": "Dead letter {id} resent: its message is back on its queue.",
    "wrong-token": "Wrong token.",
    "signed-out": "Signed out.",
}


def _int(value: str) -> int:
    """A query parameter as an integer, 0 when it is none."""
    return int(value) if value.isdigit() and len(value) < 10 else 0


def _page_type(request: Request) -> str | None:
    """The ``type`` query parameter: a page type, None when empty; ``BadInput`` (400) for another word."""
    return page_type_or_none(request.query_params.get("type"))


def default_requeue() -> Requeue:
    """Requeue through the process-wide deps (builds the broker on first use)."""

    def requeue(dead_letter_id: int, tenant_id: int) -> str:
        return requeue_dead_letter(dead_letter_id, command_deps(), tenant_id=tenant_id)

    return requeue


#: Characters of client-supplied text a log line keeps (an address is at most 45).
LOGGED_CHARS = 100


def loggable(text: str) -> str:
    """Client-supplied ``text`` made safe for a log line: every character that is not printable
    (control and escape characters, C1 controls, line and paragraph separators) becomes ``?``,
    and at most ``LOGGED_CHARS`` characters are kept, so a client cannot forge lines or drive the
    operator's terminal."""
    return "".join(c if c.isprintable() else "?" for c in text[:LOGGED_CHARS])


class WebApp(Starlette):
    """Starlette with :class:`SecurityHeaders` outside its error middleware, so the 500 page
    carries the headers too."""

    def build_middleware_stack(self):
        return SecurityHeaders(super().build_middleware_stack())


# -- reading ------------------------------------------------------------------------------


def kb_list(request: Request) -> Response:
    s = web_state(request)
    page = _int(request.query_params.get("page", "0"))
    kbs = s.web.kbs(s.tenant_id, limit=MAX_LIST + 1, offset=page * MAX_LIST)  # one more: is there a next page?
    return render(
        request,
        "kbs.html",
        kbs=kbs[:MAX_LIST],
        page=page,
        more=len(kbs) > MAX_LIST,
        counts=s.counts.get("tenant", lambda: s.web.pages_by_type(s.tenant_id)),
    )


def kb_home(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    index = s.web.page(s.tenant_id, kb.id, "index")
    return render(
        request,
        "kb_home.html",
        kb=kb,
        counts=s.counts.get(kb.id, lambda: s.pages.counts_by_type(kb.id)),
        index_html=page_html(s, kb, index.content) if index else "",
        recent=s.pages.recent(kb.id, "summary", HOME_LIST),
        most_cited={t: s.pages.most_cited(kb.id, t, HOME_LIST) for t in ("entity", "concept")},
    )


def page_view(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    page = the_page(s, kb, request.path_params["slug"])
    sources = [(ref, page.facts.get(ref.knowledge_id, Fact())) for ref in page.source_refs[:200]]
    backlinks = s.web.backlinks(s.tenant_id, kb.id, page.slug)
    mentioned, mentioned_page, mentions = 0, 0, []
    if page.page_type in ITEM_TYPES:
        mentioned_page = max(0, _int(request.query_params.get("mentioned", "0")))
        mentioned, mentions = s.web.mentioned_in(
            s.tenant_id, kb.id, name_key(page.title), MENTIONED_PER_PAGE, mentioned_page * MENTIONED_PER_PAGE
        )
    elif page.page_type == "summary" and page.source_refs:  # the pages listing it under "Mentioned in"
        listing = s.web.pages_naming(s.tenant_id, kb.id, page.source_refs[0].knowledge_id)
        backlinks = sorted({p.slug: p for p in [*backlinks, *listing]}.values(), key=lambda p: p.slug)
    return render(
        request,
        "page.html",
        kb=kb,
        page=page,
        html=page_html(s, kb, page.content),
        backlinks=backlinks,
        sources=sources,
        more_sources=max(0, len(page.source_refs) - len(sources)),
        mentioned=mentioned,
        mentions=mentions,
        mentioned_page=mentioned_page,
        mentioned_pages=-(-mentioned // MENTIONED_PER_PAGE),
    )


def page_list(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    page_type = _page_type(request)
    after_token = request.query_params.get("after")
    start = request.query_params.get("from", "").strip().lower()[:40]  # the letter bar: titles from here
    after = decode_cursor(after_token, "az", (str, str)) if after_token else (start, "") if start else None
    rows, next_after = s.web.pages_az(s.tenant_id, kb.id, page_type=page_type, after=after, limit=AZ_PAGE)
    return render(
        request,
        "pages.html",
        kb=kb,
        rows=rows,
        page_type=page_type,
        page_types=[t.value for t in PageType],
        letters=AZ_LETTERS,
        start=start,
        first=after is None,
        next_cursor=encode_cursor("az", *next_after) if next_after else None,
    )


def search(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    q = request.query_params.get("q", "")
    if request.headers.get("HX-Request"):  # the drop-down under the search box: the first hits of any type
        response = render(request, "search_results.html", kb=kb, q=q, hits=_hits(s, kb, q, SEARCH_LIMIT))
    else:
        page_type = _page_type(request)
        after_token = request.query_params.get("after")
        after = decode_cursor(after_token, "search", (int, float, str)) if after_token else None
        hits = _hits(s, kb, q, SEARCH_LIMIT + 1, after=after, page_type=page_type)
        more, hits = len(hits) > SEARCH_LIMIT, hits[:SEARCH_LIMIT]
        response = render(
            request,
            "search.html",
            kb=kb,
            q=q,
            hits=hits,
            first=after is None,
            next_cursor=encode_cursor("search", *hits[-1].key) if more else None,
            page_type=page_type,
            page_types=[t.value for t in PageType],
        )
    response.headers["Vary"] = "HX-Request"  # one URL, two bodies: a cache must keep both
    return response


def _hits(s: WebState, kb: KnowledgeBase, q: str, limit: int, **kw) -> list:
    return s.web.search(s.tenant_id, kb.id, q, limit, **kw) if q.strip() else []


def backlinks_json(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    slug = request.path_params["slug"]
    the_page(s, kb, slug)  # 404 for no such page
    return JSONResponse(
        [{"slug": p.slug, "title": p.title, "type": p.page_type} for p in s.web.backlinks(s.tenant_id, kb.id, slug)]
    )


def graph_view(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    page = the_page(s, kb, request.path_params["slug"])
    return render(
        request,
        "graph.html",
        kb=kb,
        page=page,
        styles=NODE_STYLES,
        hops=GRAPH_HOPS,
        per_node=GRAPH_PER_NODE,
        max_nodes=GRAPH_MAX_NODES,
    )


def graph_json(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    slug = request.path_params["slug"]
    graph = s.web.graph(s.tenant_id, kb.id, slug)
    if not graph.nodes:
        raise HTTPException(404, "no such page")
    return JSONResponse(
        {
            "center": slug,
            "nodes": [
                {
                    "id": p.slug,
                    "title": p.title,
                    "type": p.page_type,
                    "url": kb_url(kb.id, "page", p.slug),
                    "links_capped": p.slug in graph.links_capped,
                }
                for p in graph.nodes.values()
            ],
            "edges": [{"source": a, "target": b} for a, b in sorted(graph.edges)],
            # where the caps cut, for the legend: pages left out, pages with links left out
            "capped": {"pages": graph.pages_capped, "links": bool(graph.links_capped)},
            "limits": {"hops": GRAPH_HOPS, "per_node": GRAPH_PER_NODE, "max_nodes": GRAPH_MAX_NODES},
        }
    )


def document_view(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    doc = s.web.document(s.tenant_id, kb.id, request.path_params["knowledge_id"])
    if doc is None:
        raise HTTPException(404, "no such document")
    citing = s.web.pages_citing(s.tenant_id, kb.id, doc.id)
    summary = next((p for p in citing if p.page_type == "summary"), None)
    evidence_of = request.query_params.get("page")
    evidence = []
    if evidence_of and (cited := s.web.page(s.tenant_id, kb.id, evidence_of)) is not None:
        evidence = cited.facts.get(doc.id, Fact()).evidence
    return render(
        request,
        "document.html",
        kb=kb,
        doc=doc,
        summary=summary,
        supports=[p for p in citing if p is not summary],
        evidence_of=evidence_of,
        evidence=evidence,
        # browsers send the session cookie (path /ops) to /ops only: here they get the headline
        redacted=session(request) is None,
    )


def document_text(request: Request) -> Response:
    s = web_state(request)
    # the text in parts of TEXT_PART_CHARS characters (?part=N, from 0): a document can be
    # megabytes; shown escaped in a <pre>, like every value the templates print
    kb = the_kb(request)
    part = _int(request.query_params.get("part", "0"))
    doc = s.web.document_text(s.tenant_id, kb.id, request.path_params["knowledge_id"], part * TEXT_PART_CHARS)
    if doc is None:
        raise HTTPException(404, "no such document")
    if part and doc.start >= doc.chars:
        raise HTTPException(404, "no such part of the text")
    return render(
        request,
        "document_text.html",
        kb=kb,
        doc=doc,
        part=part,
        parts=max(1, -(-doc.chars // TEXT_PART_CHARS)),
        part_chars=TEXT_PART_CHARS,
    )


def lint_view(request: Request) -> Response:
    s = web_state(request)
    kb = the_kb(request)
    return render(request, "lint.html", kb=kb, report=s.lint.latest_report(kb.id))


# -- operations ---------------------------------------------------------------------------


def ops_view(request: Request) -> Response:
    s = web_state(request)
    cookie = session(request)
    message = MESSAGES.get(request.query_params.get("m", ""), "")
    kbs = {kb.id: kb for kb in s.web.kbs(s.tenant_id, limit=10_000)}
    return render(
        request,
        "ops.html",
        kbs=kbs,
        lanes=s.web.lanes(s.tenant_id),
        active=s.web.active_batches(s.tenant_id),
        documents=s.web.documents_by_status(s.tenant_id),
        groups=s.web.dead_letter_groups(s.tenant_id),
        letters=s.dead_letters.list(tenant_id=s.tenant_id, limit=50),
        guard=s.guard,
        signed_in=cookie is not None,
        csrf=s.guard.csrf_value(cookie) if cookie else "",
        message=message.format(id=_int(request.query_params.get("id", ""))),
        redacted=cookie is None,
    )


def dead_letter_view(request: Request) -> Response:
    s = web_state(request)
    row = s.dead_letters.get(int(request.path_params["id"]), tenant_id=s.tenant_id)
    if row is None:
        raise HTTPException(404, "no such dead letter")
    cookie = session(request)
    return render(
        request,
        "dead_letter.html",
        row=row,
        signed_in=cookie is not None,
        csrf=s.guard.csrf_value(cookie) if cookie else "",
        redacted=cookie is None,
    )


async def ops_login(request: Request) -> Response:
    s = web_state(request)
    # the socket's address, or X-Forwarded-For's when a KBWIKI_WEB_TRUSTED_PROXIES proxy sent it
    address = loggable(request.client.host) if request.client else "unknown"
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        # a form another site's page posts from the operator's own browser: refused before it
        # counts, or ten of them would lock the operator out for a minute
        raise HTTPException(403, "Sign in from this site's own page.")
    if not s.guard.sign_in_allowed(address):
        print(f"kbwiki: ops sign-in from {address} refused: too many failed sign-ins", file=sys.stderr, flush=True)
        raise HTTPException(429, "Too many failed sign-ins: try again in a minute.", headers={"Retry-After": "60"})
    form = await request.form()
    if not s.guard.token_ok(str(form.get("token", ""))):
        s.guard.sign_in_failed(address)
        print(f"kbwiki: failed ops sign-in from {address}", file=sys.stderr, flush=True)
        return RedirectResponse("/ops?m=wrong-token", status_code=303)
    print(f"kbwiki: ops sign-in from {address}", file=sys.stderr, flush=True)
    response = RedirectResponse("/ops", status_code=303)
    response.set_cookie(
        COOKIE,
        await run_in_threadpool(s.guard.open_session),
        max_age=SESSION_S,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def ops_logout(request: Request) -> Response:
    s = web_state(request)
    cookie = request.cookies.get(COOKIE)
    # a signed-in session ends only with its own form's CSRF token: another site cannot sign
    # the operator out; without an open session there is nothing to end, only a cookie to drop
    if await run_in_threadpool(s.guard.signed_in, cookie):
        form = await request.form()
        if not await run_in_threadpool(s.guard.action_allowed, cookie, form.get("csrf")):
            raise HTTPException(403, "sign out with the page's sign-out button")
        await run_in_threadpool(s.guard.close_session, cookie)
    response = RedirectResponse("/ops?m=signed-out", status_code=303)
    response.delete_cookie(COOKIE, path=COOKIE_PATH)
    return response


async def ops_action(request: Request) -> Response:
    s = web_state(request)
    await operator_form(s.guard, request)  # a signed-in operator's form, its CSRF field checked
    dead_letter_id = int(request.path_params["id"])
    action = request.path_params["action"]
    if action not in ("requeue", "purge"):
        raise HTTPException(404, "no such action")
    if action == "requeue":
        try:
            outcome = await run_in_threadpool(s.requeue, dead_letter_id, s.tenant_id)
        except DeadLetterNotFound:
            raise HTTPException(404, "no such dead letter") from None
        except RequeueRefused as exc:
            raise HTTPException(409, f"Dead letter {dead_letter_id} was not requeued: {exc}") from None
        code = outcome if outcome in MESSAGES else "reinserted"
    else:
        n = await run_in_threadpool(lambda: s.dead_letters.purge(tenant_id=s.tenant_id, ids=[dead_letter_id]))
        if not n:
            raise HTTPException(404, "no such dead letter")
        code = "purged"
    return RedirectResponse(f"/ops?m={code}&id={dead_letter_id}", status_code=303)


def metrics(request: Request) -> Response:
    s = web_state(request)
    return Response(generate_latest(s.registry), media_type=CONTENT_TYPE_LATEST)


async def not_found(request: Request, exc: HTTPException) -> Response:
    response = render(request, "error.html", status_code=exc.status_code, status=exc.status_code, detail=exc.detail)
    response.headers.update(exc.headers or {})  # a 405's Allow
    return response


async def bad_input(request: Request, exc: BadInput) -> Response:
    return render(request, "error.html", status_code=400, status=400, detail=str(exc))


async def server_error(request: Request, exc: Exception) -> Response:
    # the traceback goes to the log (Starlette logs it); the reader sees one line
    return render(
        request, "error.html", status_code=500, status=500, detail="Something went wrong on the server's side."
    )


outage = OutageLog("pages answer 503")


async def unavailable(request: Request, exc: Exception) -> Response:
    web_state(request).outage.seen(exc)
    response = render(
        request,
        "error.html",
        status_code=503,
        status=503,
        detail=RETRY_TEXT[0].upper() + RETRY_TEXT[1:] + ".",
    )
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def create_app(
    pool: ConnectionPool,
    tenant_id: int,
    ops_token: str | None = None,
    requeue: Requeue | None = None,
    allowed_hosts: Sequence[str] | None = None,
    api_token: str | None = None,
    revisions_keep: int = DEFAULT_REVISIONS_KEEP,
) -> Starlette:
    """The app serving ``tenant_id``'s KBs from ``pool``. ``ops_token`` enables the operations
    page's actions (None: read-only); ``requeue`` is how a dead letter is requeued
    (:func:`default_requeue` when None). ``allowed_hosts``: the Host names answered
    (``TrustedHostMiddleware`` patterns; None: ``LOOPBACK_HOSTS``). Error details (tracebacks,
    payloads) are shown to signed-in operators only, whatever the bind address. The read API
    (``kbwiki.api``) is mounted at ``/api/v1`` behind the same middleware, and ``/mcp`` is the MCP
    server (``kbwiki.mcp_server``); ``api_token`` is the bearer token both require (None: open, as
    the pages are). The app's lifespan runs the MCP session manager: a server must run it.
    ``revisions_keep``: the revisions a page reverted here keeps (``Settings.page_revisions_keep``)."""
    web = WebRepository(pool)
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(kb_url=kb_url, tenant_id=tenant_id)
    # {{ n | counted("summary") }}: "1 summary"; {{ error | headline }}: the line saying what went wrong
    templates.env.filters.update(counted=counted, noun=noun, headline=lambda error: error_headline(error or ""))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(KbwikiCollector(web, tenant_id))
    guard = OpsGuard(ops_token, tenant_id, WebSessionRepository(pool))
    mcp = McpEndpoint(build_server(pool, tenant_id), api_token, allowed_hosts or LOOPBACK_HOSTS)
    state = WebState(
        tenant_id=tenant_id,
        web=web,
        pages=WikiPageRepository(pool),
        lint=LintRepository(pool),
        dead_letters=TaskDeadLetterRepository(pool),
        guard=guard,
        requeue=requeue or default_requeue(),
        templates=templates,
        counts=TtlCache(COUNTS_CACHE_S),  # counting a 40k-document KB's pages is a scan of its rows
        registry=registry,
        outage=OutageLog("pages answer 503"),
        revisions=PageRevisionRepository(pool),
        revert=store_revert(pool, revisions_keep),
    )

    routes = [
        Route("/", kb_list),
        Route("/kb/{kb_id}", kb_home),
        Route("/kb/{kb_id}/page/{slug}", page_view),
        Route("/kb/{kb_id}/graph/{slug}", graph_view),
        Route("/kb/{kb_id}/graph.json/{slug}", graph_json),
        Route("/kb/{kb_id}/backlinks.json/{slug}", backlinks_json),
        Route("/kb/{kb_id}/search", search),
        Route("/kb/{kb_id}/pages", page_list),
        Route("/kb/{kb_id}/doc/{knowledge_id}", document_view),
        Route("/kb/{kb_id}/doc/{knowledge_id}/text", document_text),
        Route("/kb/{kb_id}/lint", lint_view),
        Route("/ops", ops_view),
        Route("/ops/dead-letters/{id:row_id}", dead_letter_view),
        Route("/ops/login", ops_login, methods=["POST"]),
        Route("/ops/logout", ops_logout, methods=["POST"]),
        Route("/ops/dead-letters/{id:row_id}/{action:str}", ops_action, methods=["POST"]),
        Route("/metrics", metrics),
        Route("/mcp", mcp),
        *REVISION_ROUTES,  # a page's history, diffs and revert (kbwiki.web.revisions)
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
        Mount(API_PREFIX, app=create_api(pool, tenant_id, api_token)),
    ]

    app = WebApp(
        routes=routes,
        lifespan=lambda app: mcp.lifespan(),
        # outermost first: the Host is checked, then the URL, then the body's size, before any route
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts or LOOPBACK_HOSTS), www_redirect=False),
            Middleware(RejectNul),
            Middleware(BodyLimit),
        ],
        exception_handlers={
            HTTPException: not_found,
            BadInput: bad_input,
            500: server_error,
            **dict.fromkeys(SERVER_AWAY, unavailable),
        },
    )
    app.state.web = state
    return app
