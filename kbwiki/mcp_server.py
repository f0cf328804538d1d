"""The wiki as an MCP server (Model Context Protocol, on the official ``mcp`` SDK's ``MCPServer``):
the tools an agent calls to find, read and cite one tenant's pages.

Tools (all read-only, every answer bounded and cited by slug and source URI):

- ``list_kbs``: the tenant's KBs with their ids (what every other tool's ``kb`` takes);
- ``search``: pages matching a query (titles and aliases first, then text), with snippets;
- ``read_page``: a page's Markdown, ``READ_CHARS`` characters a call (``offset`` reads on), its
  out-links and its first ``kbwiki.reader.PAGE_SOURCES`` sources (document titles, source URIs);
- ``list_pages``: the KB's pages A-Z, of one type or all;
- ``backlinks``: the pages linking to a page;
- ``sources``: a page's source documents with the sentences it quotes from each (its evidence).

Listings page with ``cursor`` in and ``next_cursor`` out (opaque; None on the last page). A KB,
page or cursor the tenant does not have (unknown, deleted, another tenant's) is a tool error
(``is_error``) saying "not found" or "bad input"; nothing else reaches the client but the SDK's
"Error executing tool NAME" (the traceback goes to the server's log).

Two transports serve one :func:`build_server`: stdio (``kbwiki mcp``, ``kbwiki.mcp_cmd``) for a
desktop agent that starts the server, and streamable HTTP at ``/mcp`` of ``kbwiki serve``
(:class:`McpEndpoint`, mounted by ``kbwiki.web.app.create_app``): stateless, JSON answers,
behind the web face's Host allow-list, with the Origin checked against the same names and the
``KBWIKI_API_TOKEN`` bearer token required when it is set.

The data comes from ``kbwiki.reader.Reader`` (the read API's facade), scoped to the server's tenant.
"""

from __future__ import annotations

import functools
import hmac
import inspect
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Annotated, Literal, TypeVar
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import ToolAnnotations
from psycopg_pool import ConnectionPool
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from kbwiki.outage import RETRY_TEXT, SERVER_AWAY
from kbwiki.reader import Reader
from repos.web import WebRepository
from wiki.errors import BadInput, NotFound, UnknownKnowledgeBase
from wiki.models import Fact

#: The server's name in the MCP handshake (``serverInfo``).
SERVER_NAME = "kbwiki"
#: Items a listing tool returns per call: by default, and at most.
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
#: Characters of a page's Markdown one ``read_page`` call returns at most (about 3,000 tokens);
#: ``next_offset`` says where the next call reads on.
READ_CHARS = 12_000
#: Out-links ``read_page`` lists (its sources: ``kbwiki.reader.PAGE_SOURCES``, the rest through ``sources``).
OUT_LINKS = 100
#: Sentences ``sources`` quotes per document (the page's evidence from it), and characters each.
EVIDENCE_SENTENCES = 5
EVIDENCE_CHARS = 500
#: Bytes of a request body ``/mcp`` reads (a tool call's arguments are a query, a slug, a cursor).
MAX_BODY_BYTES = 64 * 1024


INSTRUCTIONS = (
    "kbwiki: a wiki built from a knowledge base (KB) of documents; every page cites the documents"
    " it was made from. Call list_kbs first: every other tool takes a KB id from it. Find pages with"
    " search (or list_pages), read one with read_page (its Markdown links other pages as"
    " [[slug|display]]), follow links with read_page on a linked slug or backlinks, and cite with"
    " sources: each document's title, source URI and the sentences the page quotes from it."
    " Listings return next_cursor: pass it back as cursor for the next page."
)

PageType = Literal["summary", "entity", "concept", "index", "disambiguation"]
KbId = Annotated[str, Field(description="The KB's id, as list_kbs gives it.", min_length=1, max_length=200)]
Slug = Annotated[str, Field(description="A page's slug, as search, list_pages or a link gives it.", min_length=1)]
Cursor = Annotated[
    str | None, Field(description="next_cursor of the previous call, for the next page; omit for the first.")
]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT, description=f"Items per call (1-{MAX_LIMIT}).")]
OfType = Annotated[PageType | None, Field(description="Only pages of this type; omit for every type.")]


class KbItem(BaseModel):
    """A KB: its id (what the other tools take), name, live pages per page type, documents per
    status, and the last change of either."""

    id: str
    name: str
    pages: dict[str, int]
    documents: dict[str, int]
    last_activity: datetime


class KbList(BaseModel):
    items: list[KbItem]
    next_cursor: str | None = None


class PageRef(BaseModel):
    """A page, named: its slug (what read_page takes), title and type."""

    slug: str
    title: str
    page_type: str


class PageList(BaseModel):
    kb: str
    items: list[PageRef]
    next_cursor: str | None = None


class Hit(PageRef):
    """A search hit: the page, whether its title (or an alias) or its text matched ("title" or
    "text"), and for a text match a snippet with the matched words between << and >>."""

    matched: str
    snippet: str = ""


class SearchResult(BaseModel):
    kb: str
    query: str
    items: list[Hit]
    next_cursor: str | None = None


class SourceDoc(BaseModel):
    """A document a page cites: its id, title as cited, and source URI (its path in the KB's
    folder; null when the document was deleted since)."""

    knowledge_id: str
    title: str
    source_uri: str | None = None


class Source(SourceDoc):
    """A page's source: the document (its position among the page's sources, from 1, and its
    status now) and its evidence: up to 5 sentences of it the page quotes."""

    position: int
    status: str | None = None
    evidence: list[str] = Field(default_factory=list)


class PageRead(BaseModel):
    """Part of a page: up to 12,000 characters of its Markdown from offset (content_chars in
    all; next_offset: where the next read starts, null once it is all read), its out-links (slugs,
    the first 100) and its sources (the first 50; sources_cursor pages on through the sources tool)."""

    kb: str
    slug: str
    title: str
    page_type: str
    version: int
    aliases: list[str]
    offset: int
    content: str
    content_chars: int
    next_offset: int | None = None
    out_links: list[str]
    out_links_total: int
    sources: list[SourceDoc]
    sources_total: int
    sources_cursor: str | None = None
    note: str = ""


class SourceList(BaseModel):
    kb: str
    slug: str
    items: list[Source]
    next_cursor: str | None = None


F = TypeVar("F", bound=Callable)


def tool_errors(fn: F) -> F:
    """``fn`` with kbwiki's refusals as tool errors the agent can act on: not found (an unknown,
    deleted or other tenant's KB or page), bad input (a cursor of another listing, an offset past
    the end), the database away. Anything else passes to the SDK, which logs it and tells the
    client only that the tool failed."""

    @functools.wraps(fn)
    def answer(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except UnknownKnowledgeBase as exc:
            raise ToolError(f"not found: {exc} (list_kbs gives the KB ids)") from None
        except NotFound as exc:
            raise ToolError(f"not found: {exc}") from None
        except BadInput as exc:
            raise ToolError(f"bad input: {exc}") from None
        except SERVER_AWAY:
            raise ToolError(RETRY_TEXT) from None

    return answer  # type: ignore[return-value]


def content_window(content: str, offset: int, size: int = READ_CHARS) -> tuple[str, int | None]:
    """``content[offset:...]``, at most ``size`` characters, ending after a line break when one
    falls in its second half (a link or sentence is then not cut), and where the next window
    starts (None at the end). Raises ``BadInput`` for an offset past the end."""
    if offset > len(content):
        raise BadInput(f"offset {offset} is past the page's end ({len(content)} characters)")
    end = offset + size
    if end >= len(content):
        return content[offset:], None
    cut = content.rfind("\n", offset + size // 2, end)
    end = cut + 1 if cut >= 0 else end
    return content[offset:end], end


def build_server(pool: ConnectionPool, tenant_id: int) -> MCPServer:
    """The MCP server of tenant ``tenant_id``'s wiki, reading from ``pool``: the tools of this
    module, each a sync function the SDK runs in a worker thread."""
    reader = Reader(pool, tenant_id)
    web = WebRepository(pool)
    # WARNING: the SDK calls logging.basicConfig at this level in a process that set none up
    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")

    def list_kbs(cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> KbList:
        """List the knowledge bases (KBs) of this wiki, by name: each one's id (what the other
        tools take as kb), name, pages per type and documents per status."""
        found = reader.kbs(after=cursor, limit=limit)
        items = [
            KbItem(id=k.id, name=k.name, pages=k.pages, documents=k.documents, last_activity=k.last_activity)
            for k in found.items
        ]
        return KbList(items=items, next_cursor=found.next_cursor)

    def search(
        kb: KbId,
        query: Annotated[str, Field(description="Words to find (the last one may be a prefix).", max_length=200)],
        page_type: OfType = None,
        cursor: Cursor = None,
        limit: Limit = DEFAULT_LIMIT,
    ) -> SearchResult:
        """Search a KB's pages: titles and aliases first (exact, prefix, then substring), then
        pages whose text holds the words, ranked (100 of each kind at most; next_cursor pages on). Each
        hit gives the page's slug (for read_page), title, type, and for a text match a snippet."""
        found = reader.search(kb, query, page_type=page_type, after=cursor, limit=limit)
        items = [
            Hit(slug=h.page.slug, title=h.page.title, page_type=h.page.page_type, matched=h.kind, snippet=h.snippet)
            for h in found.items
        ]
        return SearchResult(kb=kb, query=query, items=items, next_cursor=found.next_cursor)

    def read_page(
        kb: KbId,
        slug: Slug,
        offset: Annotated[
            int, Field(ge=0, description="Character of the page's Markdown to read from: next_offset of a former call.")
        ] = 0,
    ) -> PageRead:
        """Read a page of a KB: its Markdown (12,000 characters a call: when next_offset is
        set, call again with offset=next_offset for the rest), title, type, version, aliases,
        the slugs it links to (its links are written [[slug|display]]) and the documents it cites
        (title and source URI; all of them, with the sentences quoted, through sources)."""
        page = reader.page(kb, slug)
        content, next_offset = content_window(page.content, offset)
        note = (
            f"content is {len(page.content):,} characters: this is {offset:,} to {offset + len(content):,};"
            f" call read_page with offset={next_offset} for the rest"
            if next_offset is not None
            else ""
        )
        return PageRead(
            kb=kb,
            slug=page.slug,
            title=page.title,
            page_type=str(page.page_type),
            version=page.version,
            aliases=page.aliases[:50],
            offset=offset,
            content=content,
            content_chars=len(page.content),
            next_offset=next_offset,
            out_links=page.out_links[:OUT_LINKS],
            out_links_total=len(page.out_links),
            sources=[
                SourceDoc(knowledge_id=s.knowledge_id, title=s.title, source_uri=s.source_uri) for s in page.sources
            ],
            sources_total=page.sources_total,
            sources_cursor=page.sources_cursor,
            note=note,
        )

    def list_pages(kb: KbId, page_type: OfType = None, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> PageList:
        """List a KB's pages A-Z by title (of one type, or all): slug, title and type of each."""
        found = reader.pages(kb, page_type=page_type, after=cursor, limit=limit)
        items = [PageRef(slug=p.slug, title=p.title, page_type=p.page_type) for p in found.items]
        return PageList(kb=kb, items=items, next_cursor=found.next_cursor)

    def backlinks(kb: KbId, slug: Slug, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> PageList:
        """List the pages that link to a page (its backlinks), by slug: slug, title and type of each."""
        found = reader.backlinks(kb, slug, after=cursor, limit=limit)
        items = [PageRef(slug=p.slug, title=p.title, page_type=p.page_type) for p in found.items]
        return PageList(kb=kb, items=items, next_cursor=found.next_cursor)

    def sources(kb: KbId, slug: Slug, cursor: Cursor = None, limit: Limit = DEFAULT_LIMIT) -> SourceList:
        """List the documents a page cites, in its order, with its evidence from each: the
        document's id, title, source URI (its path in the KB; null when deleted since), status,
        and up to 5 sentences of it the page quotes. Cite a page by these."""
        found = reader.sources(kb, slug, after=cursor, limit=limit)
        cited = web.page(tenant_id, kb, slug) if found.items else None  # its facts hold the evidence
        facts = cited.facts if cited else {}
        items = [
            Source(
                position=s.position,
                knowledge_id=s.knowledge_id,
                title=s.title,
                source_uri=s.source_uri,
                status=s.status,
                evidence=[e[:EVIDENCE_CHARS] for e in facts.get(s.knowledge_id, Fact()).evidence[:EVIDENCE_SENTENCES]],
            )
            for s in found.items
        ]
        return SourceList(kb=kb, slug=slug, items=items, next_cursor=found.next_cursor)

    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    for tool in (list_kbs, search, read_page, list_pages, backlinks, sources):
        # the docstring without its indentation is what the agent reads
        server.add_tool(tool_errors(tool), description=inspect.cleandoc(tool.__doc__ or ""), annotations=read_only)
    return server


def _bearer_ok(authorization: str | None, token: str) -> bool:
    """Whether an ``Authorization`` header carries ``Bearer <token>`` (compared in constant time)."""
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def origin_allowed(origin: str, allowed_hosts: Sequence[str]) -> bool:
    """Whether a browser's ``Origin`` names a host of ``allowed_hosts`` (the web face's Host
    patterns: a name, ``*.suffix`` or ``*``), whatever its scheme and port. ``null`` (a sandboxed
    page, a file) names none."""
    try:
        host = urlsplit(origin).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = f"[{host}]" if ":" in host else host
    return any(
        pattern == "*" or host == pattern.lower() or (pattern.startswith("*.") and host.endswith(pattern[1:].lower()))
        for pattern in allowed_hosts
    )


class McpEndpoint:
    """The ASGI endpoint of ``/mcp``: the SDK's streamable-HTTP session manager for ``server``,
    stateless (no session to keep between requests: every tool call stands alone) with JSON
    answers, behind two checks of its own:

    - ``token`` (``KBWIKI_API_TOKEN``) set: the request must carry ``Authorization: Bearer
      <token>``, else 401;
    - a browser's ``Origin`` must name a host of ``allowed_hosts`` (``KBWIKI_WEB_ALLOWED_HOSTS``:
      the names the app's Host check allows), else 403, so a page of another site cannot drive
      a tool from a visitor's browser.

    Only POST is served (405 otherwise). The SDK's own Host/Origin check is off: the app's
    ``TrustedHostMiddleware`` checks Host with the same list (the SDK's takes exact names only,
    not ``*.example.org``). :meth:`lifespan` must run for as long as the app serves
    (``create_app``'s lifespan)."""

    def __init__(self, server: MCPServer, token: str | None, allowed_hosts: Sequence[str]) -> None:
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=MAX_BODY_BYTES,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager = server.session_manager
        self.token = token
        self.allowed_hosts = list(allowed_hosts)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """The session manager's run: its task group, which serves every request."""
        return self.manager.run()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        if self.token and not _bearer_ok(headers.get("authorization"), self.token):
            refused = _refusal(401, "this server needs its API token: Authorization: Bearer <KBWIKI_API_TOKEN>")
            refused.headers["WWW-Authenticate"] = 'Bearer realm="kbwiki"'
            await refused(scope, receive, send)
            return
        origin = headers.get("origin")
        if origin is not None and not origin_allowed(origin, self.allowed_hosts):
            await _refusal(403, "requests from this origin are not allowed")(scope, receive, send)
            return
        if scope["method"] != "POST":
            # stateless: no stream for the server to speak first on (GET would hold one open
            # forever) and no session to end (DELETE); the protocol allows 405 for both
            refused = _refusal(405, "only POST: this server keeps no session and opens no event stream")
            refused.headers["Allow"] = "POST"
            await refused(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)


def _refusal(status: int, message: str) -> JSONResponse:
    """A JSON-RPC error without a request id (the body was not read), as the SDK answers its own refusals."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}, status)
