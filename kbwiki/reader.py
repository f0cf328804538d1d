"""One tenant's wiki, read: the facade the read API (``kbwiki.api``) and the MCP server share.

:class:`Reader` answers for one tenant only (the server's): every method goes through
``repos.web.WebRepository``, ``repos.listing.ListingRepository`` or ``repos.lint.LintRepository``
with that tenant's id, after finding the KB among the tenant's live ones, so an unknown, deleted
or other tenant's KB, page or document is the same :class:`~wiki.errors.NotFound` (its kinds
``UnknownKnowledgeBase``, ``UnknownPage``, ``UnknownDocument``), never another tenant's data.

Every read is bounded: ``limit`` is clamped to 1..``MAX_LIMIT`` (search: 1..``RANK_WINDOW``),
listings are keyset pages (search: after the last hit's place in its ranked order), and each
answer is a pydantic model (:class:`Paged` for listings). Cursors are opaque strings of
``wiki.cursor``: a cursor of another listing, or one that is not a cursor, raises
``BadInput``, as does an unknown page type or document status.
"""

from __future__ import annotations

from datetime import datetime
from typing import Generic, TypeVar

from psycopg_pool import ConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from repos.lint import LintRepository
from repos.listing import DocumentListing, ListingRepository
from repos.web import MAX_LIST, RANK_WINDOW, PageSource, SearchHit, WebRepository
from wiki.cursor import decode_cursor, encode_cursor
from wiki.errors import BadInput, UnknownDocument, UnknownKnowledgeBase, UnknownPage, error_headline
from wiki.links import out_link_slugs
from wiki.lint import LintReport
from wiki.models import Fact, KnowledgeBase, PageLite, PageType, page_type_or_none

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_HOPS",
    "MAX_LIMIT",
    "PAGE_SOURCES",
    "DocumentEvidence",
    "DocumentListing",
    "Edge",
    "GraphOut",
    "KbOut",
    "LintOut",
    "PageOut",
    "PageSource",
    "Paged",
    "Reader",
    "SearchHit",
]

T = TypeVar("T")

#: Rows a listing page holds by default, and at most (``limit`` is clamped to 1..this).
DEFAULT_LIMIT = 50
MAX_LIMIT = MAX_LIST
#: Search hits a page holds by default (at most ``RANK_WINDOW``: search pages no further).
SEARCH_DEFAULT_LIMIT = 20
#: Source refs a page's answer carries (the rest through :meth:`Reader.sources`).
PAGE_SOURCES = 50
#: Characters of a document's content its evidence answer carries.
CONTENT_HEAD_CHARS = 2000
#: Pages citing or naming a document an evidence answer lists at most (each list).
EVIDENCE_PAGES = MAX_LIST
#: Hops a neighbourhood graph reaches at most (``hops`` is clamped to 1..this).
MAX_HOPS = 3


class Paged(BaseModel, Generic[T]):
    """One page of a listing: ``items`` in the listing's order and ``next_cursor``, the opaque
    cursor of the next page (pass it back as ``after``), None on the last page."""

    items: list[T]
    next_cursor: str | None = None


class KbOut(BaseModel):
    """One live KB of the tenant: ``documents`` live documents per status, ``pages`` live pages
    per page type, ``last_activity`` the latest change of either (else when it was made),
    ``paused`` why its model work is paused (``config``, ``credit``, ``budget``) or None."""

    id: str
    name: str
    documents: dict[str, int]
    pages: dict[str, int]
    last_activity: datetime
    paused: str | None = None


class DocumentEvidence(BaseModel):
    """One document of a KB and what the wiki made of it: ``content_head`` its first
    ``CONTENT_HEAD_CHARS`` characters, ``error`` the headline of why it failed ("" when it did
    not), ``citing`` the live pages citing it (its summary page first, then by slug), ``naming``
    the entity and concept pages of names it names (their "Mentioned in" lists it), up to
    ``EVIDENCE_PAGES`` each. With ``page``: ``evidence`` the sentences of the document that page
    quotes (empty when it quotes none or is not a live page)."""

    id: str
    title: str
    source_uri: str
    status: str
    error: str = ""
    content_head: str
    citing: list[PageLite]
    naming: list[PageLite]
    page: str | None = None
    evidence: list[str] = Field(default_factory=list)


class PageOut(BaseModel):
    """One live page: ``content`` is its Markdown, links written ``[[slug|display]]``;
    ``out_links`` the distinct slugs it links to (sorted; some may name no live page);
    ``sources`` its first ``PAGE_SOURCES`` source refs with their documents' URIs and statuses,
    ``sources_total`` how many it has, ``sources_cursor`` the cursor of the rest (for
    :meth:`Reader.sources`), None when ``sources`` holds them all."""

    model_config = ConfigDict(use_enum_values=True)

    slug: str
    title: str
    page_type: PageType
    status: str
    aliases: list[str]
    content: str
    summary: str
    version: int
    updated_at: datetime | None
    out_links: list[str]
    sources: list[PageSource]
    sources_total: int
    sources_cursor: str | None = None


class Edge(BaseModel):
    """A link between two pages of a graph: ``from`` links to ``to`` (slugs)."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    from_: str = Field(alias="from")
    to: str


class GraphOut(BaseModel):
    """The pages within ``hops`` links of ``centre`` (either direction) and the links among them.
    ``capped``: a cap cut the graph (a page left out at ``GRAPH_MAX_NODES`` pages, or a page with
    more than ``GRAPH_PER_NODE`` links in one direction), so pages or links farther out are missing."""

    centre: str
    hops: int
    nodes: list[PageLite]
    edges: list[Edge]
    capped: bool


class LintOut(BaseModel):
    """The KB's latest stored lint report (``kbwiki lint``), None when none was run yet."""

    knowledge_base_id: str
    report: LintReport | None = None


def _clamp(limit: int, most: int = MAX_LIMIT) -> int:
    return min(max(int(limit), 1), most)


class Reader:
    """Bounded reads of tenant ``tenant_id``'s live KBs (see the module's docstring)."""

    def __init__(self, pool: ConnectionPool, tenant_id: int) -> None:
        self.tenant_id = int(tenant_id)
        self.web = WebRepository(pool)
        self.listing = ListingRepository(pool)
        self.lints = LintRepository(pool)

    def _kb(self, kb_id: str) -> KnowledgeBase:
        kb = self.web.kb(self.tenant_id, kb_id)
        if kb is None:
            raise UnknownKnowledgeBase(f"no knowledge base {kb_id!r}")
        return kb

    # -- KBs and documents --------------------------------------------------------------------
    def kbs(self, after: str | None = None, limit: int = DEFAULT_LIMIT) -> Paged[KbOut]:
        """The tenant's live KBs by name, ``limit`` a page. Raises ``BadInput`` for a bad cursor."""
        limit = _clamp(limit)
        keyset = (self.tenant_id, *decode_cursor(after, "kbs", (str,))) if after else None
        rows = self.listing.knowledge_bases(tenant_id=self.tenant_id, after=keyset, limit=limit + 1)
        more, rows = len(rows) > limit, rows[:limit]
        items = [KbOut.model_validate(r.model_dump()) for r in rows]
        return Paged[KbOut](items=items, next_cursor=encode_cursor("kbs", rows[-1].name) if more else None)

    def documents(
        self, kb_id: str, status: str | None = None, after: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> Paged[DocumentListing]:
        """The KB's documents in (source URI, id) order, of ``status`` only unless it is None
        (``repos.listing.LISTED_STATUSES``; deleted documents are never listed), each with the
        number of live pages citing it. Raises ``UnknownKnowledgeBase``; ``BadInput`` for an
        unknown status or a bad cursor."""
        kb = self._kb(kb_id)
        limit = _clamp(limit)
        keyset = decode_cursor(after, "documents", (str, str)) if after else None
        rows = self.listing.documents(kb.id, status=status, after=keyset, limit=limit + 1)
        more, rows = len(rows) > limit, rows[:limit]
        cursor = encode_cursor("documents", rows[-1].source_uri, rows[-1].id) if more else None
        return Paged[DocumentListing](items=rows, next_cursor=cursor)

    def evidence(self, kb_id: str, knowledge_id: str, page: str | None = None) -> DocumentEvidence:
        """Document ``knowledge_id`` of the KB with the pages citing and naming it, and with
        ``page`` (a slug) the sentences that page quotes from it. Raises ``UnknownKnowledgeBase``,
        ``UnknownDocument`` (unknown or deleted)."""
        kb = self._kb(kb_id)
        doc = self.web.document(self.tenant_id, kb.id, knowledge_id)
        if doc is None:
            raise UnknownDocument(f"no document {knowledge_id!r} in knowledge base {kb.id!r}")
        evidence: list[str] = []
        if page is not None and (cited := self.web.page(self.tenant_id, kb.id, page)) is not None:
            evidence = cited.facts.get(doc.id, Fact()).evidence
        return DocumentEvidence(
            id=doc.id,
            title=doc.title,
            source_uri=doc.source_uri,
            status=doc.status,
            error=error_headline(doc.error or ""),  # tracebacks are for operators
            content_head=doc.content[:CONTENT_HEAD_CHARS],
            citing=self.web.pages_citing(self.tenant_id, kb.id, doc.id, EVIDENCE_PAGES),
            naming=self.web.pages_naming(self.tenant_id, kb.id, doc.id, EVIDENCE_PAGES),
            page=page,
            evidence=evidence,
        )

    # -- pages --------------------------------------------------------------------------------
    def pages(
        self, kb_id: str, page_type: str | None = None, after: str | None = None, limit: int = DEFAULT_LIMIT
    ) -> Paged[PageLite]:
        """The KB's live pages A-Z (by lowercased title, then slug), of ``page_type`` only unless
        it is None. Raises ``UnknownKnowledgeBase``; ``BadInput`` for an unknown page type or a
        bad cursor."""
        page_type = page_type_or_none(page_type)
        kb = self._kb(kb_id)
        keyset = decode_cursor(after, "pages", (str, str)) if after else None
        items, last = self.web.pages_az(self.tenant_id, kb.id, page_type=page_type, after=keyset, limit=_clamp(limit))
        return Paged[PageLite](items=items, next_cursor=encode_cursor("pages", *last) if last else None)

    def page(self, kb_id: str, slug: str) -> PageOut:
        """The live page ``slug``. Raises ``UnknownKnowledgeBase``, ``UnknownPage``."""
        kb = self._kb(kb_id)
        page = self.web.page(self.tenant_id, kb.id, slug)
        found = self.web.sources(self.tenant_id, kb.id, slug, limit=PAGE_SOURCES) if page else None
        if page is None or found is None:
            raise UnknownPage(f"no page {slug!r} in knowledge base {kb.id!r}")
        sources, next_position = found
        return PageOut(
            slug=page.slug,
            title=page.title,
            page_type=page.page_type,
            status=page.status,
            aliases=page.aliases,
            content=page.content,
            summary=page.summary,
            version=page.version,
            updated_at=page.updated_at,
            out_links=sorted(out_link_slugs(page.content)),
            sources=sources,
            sources_total=len(page.source_refs),
            sources_cursor=encode_cursor("sources", next_position) if next_position else None,
        )

    def backlinks(self, kb_id: str, slug: str, after: str | None = None, limit: int = DEFAULT_LIMIT) -> Paged[PageLite]:
        """The live pages linking to page ``slug`` (not itself), by slug. Raises
        ``UnknownKnowledgeBase``, ``UnknownPage``; ``BadInput`` for a bad cursor."""
        kb = self._kb(kb_id)
        limit = _clamp(limit)
        (start,) = decode_cursor(after, "backlinks", (str,)) if after else (None,)
        if not self.web.lite(self.tenant_id, kb.id, [slug]):
            raise UnknownPage(f"no page {slug!r} in knowledge base {kb.id!r}")
        rows = self.web.backlinks(self.tenant_id, kb.id, slug, limit + 1, after=start)
        more, rows = len(rows) > limit, rows[:limit]
        return Paged[PageLite](items=rows, next_cursor=encode_cursor("backlinks", rows[-1].slug) if more else None)

    def sources(self, kb_id: str, slug: str, after: str | None = None, limit: int = DEFAULT_LIMIT) -> Paged[PageSource]:
        """The documents page ``slug`` cites, in its source refs' order (each with the document's
        URI and status now, None for one gone since). Raises ``UnknownKnowledgeBase``,
        ``UnknownPage``; ``BadInput`` for a bad cursor."""
        kb = self._kb(kb_id)
        (position,) = decode_cursor(after, "sources", (int,)) if after else (0,)
        found = self.web.sources(self.tenant_id, kb.id, slug, after=position, limit=_clamp(limit))
        if found is None:
            raise UnknownPage(f"no page {slug!r} in knowledge base {kb.id!r}")
        items, next_position = found
        cursor = encode_cursor("sources", next_position) if next_position else None
        return Paged[PageSource](items=items, next_cursor=cursor)

    def graph(self, kb_id: str, slug: str, hops: int = 2) -> GraphOut:
        """The neighbourhood of page ``slug``: ``hops`` clamped to 1..``MAX_HOPS``. Raises
        ``UnknownKnowledgeBase``, ``UnknownPage``."""
        kb = self._kb(kb_id)
        hops = _clamp(hops, MAX_HOPS)
        graph = self.web.graph(self.tenant_id, kb.id, slug, hops=hops)
        if not graph.nodes:
            raise UnknownPage(f"no page {slug!r} in knowledge base {kb.id!r}")
        return GraphOut(
            centre=slug,
            hops=hops,
            nodes=sorted(graph.nodes.values(), key=lambda p: p.slug),
            edges=[Edge(from_=a, to=b) for a, b in sorted(graph.edges)],
            capped=graph.pages_capped or bool(graph.links_capped),
        )

    # -- search and lint ----------------------------------------------------------------------
    def search(
        self,
        kb_id: str,
        q: str,
        page_type: str | None = None,
        after: str | None = None,
        limit: int = SEARCH_DEFAULT_LIMIT,
    ) -> Paged[SearchHit]:
        """Pages matching ``q`` (``repos.web.WebRepository.search``: titles and aliases first, then
        page text, CJK too), of ``page_type`` only unless it is None. The cursor is the last hit's
        place in the ranked order (a keyset: no hit comes twice in a walk); the ranking reads at
        most ``RANK_WINDOW`` title and ``RANK_WINDOW`` text matches. A query of no word finds
        nothing. Raises ``UnknownKnowledgeBase``; ``BadInput`` for an unknown page type or a bad
        cursor."""
        page_type = page_type_or_none(page_type)
        kb = self._kb(kb_id)
        limit = _clamp(limit, RANK_WINDOW)
        start = decode_cursor(after, "search", (int, float, str)) if after else None
        if start is not None and start[0] not in (0, 1):
            raise BadInput("not a cursor of this listing")
        hits = self.web.search(self.tenant_id, kb.id, q, limit + 1, after=start, page_type=page_type)
        more, hits = len(hits) > limit, hits[:limit]
        return Paged[SearchHit](items=hits, next_cursor=encode_cursor("search", *hits[-1].key) if more else None)

    def lint(self, kb_id: str) -> LintOut:
        """The KB's latest lint report (None when none is stored). Raises ``UnknownKnowledgeBase``."""
        kb = self._kb(kb_id)
        return LintOut(knowledge_base_id=kb.id, report=self.lints.latest_report(kb.id))
