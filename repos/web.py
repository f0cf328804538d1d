"""What the web face (``kbwiki.web``) reads: one tenant's KBs, pages, link neighbourhoods, search,
documents, lanes and dead letters.

Every method takes the tenant and (but for the KB list and the tenant-wide operations reads) a KB
id, and every statement holds ``tenant_id = %s``: a URL naming another tenant's KB, page or dead
letter finds nothing. Every read is bounded (``LIMIT``, per-node caps) and served from an index:
pages by the live-slug unique index, links by ``wiki_links``' primary key (out-links) and
``idx_wiki_links_to_slug`` (in-links), titles by the trigram GIN indexes of ``wiki_pages`` and
``wiki_title_keys``, page text by migration 0051's full-text index.
"""

from __future__ import annotations

import re
from datetime import datetime

from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.pages import LITE_COLUMNS
from wiki.lanes import SCOPE_KB
from wiki.models import DocStatus, Document, KnowledgeBase, Page, PageLite
from wiki.slugs import CJK_CLASS, has_cjk

#: Rows a list on a page shows at most (backlinks, pages a document supports, dead letters).
MAX_LIST = 200
#: Search results per kind (titles, text) and in all.
SEARCH_LIMIT = 20
#: Full-text matches ranked per search: the GIN index returns them unordered, so ranking reads
#: (and ranks) at most this many, never every page of a common word.
RANK_WINDOW = 100
#: Neighbours read per node of the graph (each direction), nodes in the graph at most, and the
#: links followed from the centre.
GRAPH_PER_NODE = 12
GRAPH_MAX_NODES = 80
GRAPH_HOPS = 2
#: Characters of a document's text its page shows (the beginning), and per part of the full text
#: (``/kb/<id>/doc/<id>/text?part=N``): 100,000 characters is about 100-400 KB of HTML, which a
#: browser lays out at once, and a document cut to the default ``KBWIKI_MAX_DOCUMENT_CHARS``
#: (400,000) reads in 4 parts.
DOCUMENT_HEAD_CHARS = 2000
TEXT_PART_CHARS = 100_000
#: PostgreSQL's ``substr`` takes an ``integer`` offset; no text value holds more characters (1 GB).
_MAX_TEXT_OFFSET = 2**30

_SPACED_CJK = re.compile(f"(?<=[{CJK_CLASS}>]) (?=[{CJK_CLASS}<])")
_LITE = ", ".join(f"p.{c.strip()}" for c in LITE_COLUMNS.split(","))

# For each slug, up to %(per)s out-links to live pages and %(per)s in-links (only live pages have
# out-links), not to itself, with the other page's narrow row: the PK, the to_slug index and the
# live-slug index. The caller asks one row more than it draws, to know where the cap cut.
_NEIGHBOURS_SQL = f"""
SELECT s.slug AS node, n.outgoing, {_LITE} FROM unnest(%(slugs)s::text[]) AS s(slug)
CROSS JOIN LATERAL (
    (SELECT l.to_slug AS other, true AS outgoing FROM wiki_links l
     JOIN wiki_pages t ON t.knowledge_base_id = l.knowledge_base_id AND t.slug = l.to_slug AND t.deleted_at IS NULL
     WHERE l.knowledge_base_id = %(kb)s AND l.from_slug = s.slug AND l.to_slug <> s.slug
     ORDER BY l.to_slug LIMIT %(per)s)
    UNION ALL
    (SELECT l.from_slug, false FROM wiki_links l
     WHERE l.to_slug = s.slug AND l.knowledge_base_id = %(kb)s AND l.from_slug <> s.slug
     ORDER BY l.from_slug LIMIT %(per)s)
) n
JOIN wiki_pages p ON p.knowledge_base_id = %(kb)s AND p.slug = n.other AND p.deleted_at IS NULL
WHERE p.tenant_id = %(tenant)s
"""

# A search of one page type (``%(type)s``) or of all (NULL).
_OF_TYPE = "(%(type)s::text IS NULL OR p.page_type = %(type)s)"

# Titles and aliases: item pages' keys (wiki_title_keys) and every page's title (wiki_pages).
# Prefix matches (exact ones included) come from the B-trees (key, KB) and (KB, lower(title)) in
# key order, so an exact title is found however many titles contain the query; substring matches
# from the trigram GIN indexes (only for queries of 3+ characters: shorter ones have no trigram).
# Each source is read up to %(window)s rows; exact > prefix > substring, then trigram similarity.
_TITLE_SEARCH_SQL = f"""
WITH found AS (
    (SELECT slug, key FROM wiki_title_keys WHERE key >= %(q)s AND key < %(q)s || chr(1114111)
       AND knowledge_base_id = %(kb)s ORDER BY key LIMIT %(window)s)
    UNION ALL
    (SELECT slug, key FROM wiki_title_keys WHERE %(trgm)s AND knowledge_base_id = %(kb)s AND key LIKE %(like)s
     LIMIT %(window)s)
    UNION ALL
    (SELECT slug, lower(title) FROM wiki_pages WHERE knowledge_base_id = %(kb)s AND deleted_at IS NULL
       AND lower(title) >= %(q)s AND lower(title) < %(q)s || chr(1114111) ORDER BY lower(title) LIMIT %(window)s)
    UNION ALL
    (SELECT slug, lower(title) FROM wiki_pages WHERE %(trgm)s AND knowledge_base_id = %(kb)s AND deleted_at IS NULL
       AND lower(title) LIKE %(like)s LIMIT %(window)s)
), hits AS (
    SELECT slug, max(CASE WHEN key = %(q)s THEN 3 WHEN key LIKE %(prefix)s THEN 2 ELSE 1 END
                     + similarity(key, %(q)s)) AS score
    FROM found GROUP BY slug
)
SELECT {_LITE}, h.score FROM hits h
JOIN wiki_pages p ON p.knowledge_base_id = %(kb)s AND p.slug = h.slug AND p.deleted_at IS NULL
WHERE p.tenant_id = %(tenant)s AND {_OF_TYPE}
ORDER BY h.score DESC, p.slug LIMIT %(window)s
"""

# The start of a page's text for a snippet: wiki links as their display text, heading marks dropped.
_PLAIN = (
    r"regexp_replace(regexp_replace(left(p.content, 4000), '\[\[(?:[^]|]*\|)?([^]]*)\]\]', '\1', 'g'),"
    r" '^#+ ', '', 'gn')"
)
_TSQUERY = (
    "(CASE WHEN %(phrase)s THEN phraseto_tsquery('simple'::regconfig, wiki_mention_text(%(q)s))"
    " ELSE to_tsquery('simple'::regconfig, %(tsq)s) END)"
)
# Page text: migration 0051's index (CJK characters spaced out by wiki_mention_text, so a CJK
# query is a phrase of characters). The first RANK_WINDOW matches the scan meets are ranked (which
# ones can change with the plan: a page of hits is read after its key, never by offset, so a walk
# never sees a hit twice); title hits (%(titles)s) are left out, then the hits after the key
# (%(after_score)s, %(after_slug)s) in (score DESC, slug by code point) order, %(limit)s of them, get
# a snippet.
_TEXT_SEARCH_SQL = f"""
WITH q AS MATERIALIZED (SELECT {_TSQUERY} AS query),
m AS (SELECT p.id FROM wiki_pages p
      WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL AND {_OF_TYPE}
        AND to_tsvector('simple'::regconfig, wiki_mention_text(p.content)) @@ {_TSQUERY}
      LIMIT %(window)s),
ranked AS (SELECT p.id, p.slug,
                 ts_rank_cd(to_tsvector('simple'::regconfig, wiki_mention_text(p.content)), q.query)::float8 AS score
           FROM m JOIN wiki_pages p ON p.id = m.id, q
           WHERE p.slug <> ALL(%(titles)s)),
r AS (SELECT id, score FROM ranked
      WHERE %(after_score)s::float8 IS NULL OR score < %(after_score)s
         OR (score = %(after_score)s AND slug COLLATE "C" > %(after_slug)s)
      ORDER BY score DESC, slug COLLATE "C" LIMIT %(limit)s)
SELECT {_LITE}, r.score,
       ts_headline('simple'::regconfig,
                   CASE WHEN %(phrase)s THEN wiki_mention_text({_PLAIN}) ELSE {_PLAIN} END, q.query,
                   'MaxWords=18, MinWords=6, StartSel=<<, StopSel=>>, HighlightAll=false') AS snippet
FROM r JOIN wiki_pages p ON p.id = r.id, q
WHERE p.tenant_id = %(tenant)s
ORDER BY r.score DESC, p.slug COLLATE "C"
"""


# A dead letter's error headline for grouping: its first line, UUIDs and hexadecimal ids (8+
# digits, one of them 0-9) as <id>, other runs of digits as <n>.
_HEADLINE_SQL = (
    "regexp_replace(regexp_replace(regexp_replace(left(split_part(last_error, E'\\n', 1), 300),"
    " '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}', '<id>', 'gi'),"
    " '\\m(?=[0-9a-f]*[0-9])[0-9a-f]{8,}\\M', '<id>', 'gi'), '[0-9]+', '<n>', 'g')"
)


class LaneRow(BaseModel):
    """Rows of one lane of one KB and the age of its oldest row (seconds)."""

    knowledge_base_id: str
    task_type: str
    rows: int
    claimed: int
    oldest_age_s: float


class DeadLetterGroup(BaseModel):
    """Dead letters of one task type with one error headline (the error's first line)."""

    task_type: str
    headline: str
    n: int
    last_id: int
    last_failed_at: datetime


#: A search hit's place in the ranked order (:attr:`SearchHit.key`): a keyset cursor of search.
SearchKey = tuple[int, float, str]


class SearchHit(BaseModel):
    """A search result: the page, how it matched (``title`` or ``text``), its score and a snippet
    (``<<`` and ``>>`` around the matched words, plain text otherwise)."""

    page: PageLite
    kind: str
    score: float
    snippet: str = ""

    @property
    def key(self) -> SearchKey:
        """Its place in the ranked order, ascending: (0 for a title hit, 1 for a text hit, minus
        its score, its slug)."""
        return (0 if self.kind == "title" else 1, -self.score, self.page.slug)


class PageSource(BaseModel):
    """One source ref of a page: its position among the page's refs (1-based), the document's id
    and title as cited, and the document's source URI and status now (None when it is gone)."""

    position: int
    knowledge_id: str
    title: str
    source_uri: str | None = None
    status: str | None = None


class Neighbourhood(BaseModel):
    """A page's link neighbourhood as drawn: ``nodes`` {slug: page} (the centre among them),
    ``edges`` {(from slug, to slug)} among them, and where the caps cut: ``links_capped`` the
    slugs of the pages with more out-links or more in-links than were read (``per_node``),
    ``pages_capped`` whether a page was left out because the graph had ``max_nodes`` pages."""

    nodes: dict[str, PageLite]
    edges: set[tuple[str, str]]
    links_capped: set[str] = set()
    pages_capped: bool = False


class DocumentHead(Document):
    """A document with the first ``DOCUMENT_HEAD_CHARS`` characters of its text as ``content``
    and the length of the whole text as ``chars`` (characters, not bytes)."""

    chars: int


class DocumentText(BaseModel):
    """A part of a document's text: ``text`` holds the characters from offset ``start`` (0-based,
    in characters) on, at most the part size asked; ``chars`` is the whole text's length."""

    id: str
    title: str
    source_uri: str = ""
    status: str = DocStatus.pending
    chars: int
    start: int
    text: str


class WebRepository:
    """Bounded, tenant-scoped reads for the web face."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    # -- KBs ----------------------------------------------------------------------------------
    def kbs(self, tenant_id: int, limit: int = MAX_LIST, offset: int = 0) -> list[KnowledgeBase]:
        """The tenant's live KBs by name (at most ``limit``, after the first ``offset``; ids break
        ties so pages never overlap)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM knowledge_bases WHERE tenant_id = %s AND deleted_at IS NULL"
                " ORDER BY name, id LIMIT %s OFFSET %s",
                (tenant_id, limit, offset),
            ).fetchall()
        return [KnowledgeBase.model_validate(r) for r in rows]

    def kb(self, tenant_id: int, kb_id: str) -> KnowledgeBase | None:
        """The tenant's live KB ``kb_id``, or None (unknown, deleted or another tenant's)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT * FROM knowledge_bases WHERE id = %s AND tenant_id = %s AND deleted_at IS NULL",
                (kb_id, tenant_id),
            ).fetchone()
        return KnowledgeBase.model_validate(row) if row else None

    # -- pages --------------------------------------------------------------------------------
    def page(self, tenant_id: int, kb_id: str, slug: str) -> Page | None:
        """The live page ``slug`` of the tenant's KB, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT * FROM wiki_pages WHERE knowledge_base_id = %s AND slug = %s"
                " AND deleted_at IS NULL AND tenant_id = %s",
                (kb_id, slug, tenant_id),
            ).fetchone()
        return Page.model_validate(row) if row else None

    def backlinks(
        self, tenant_id: int, kb_id: str, slug: str, limit: int = MAX_LIST, *, after: str | None = None
    ) -> list[PageLite]:
        """Up to ``limit`` live pages linking to ``slug`` (not itself), by slug, those after the
        slug ``after`` only unless it is None (a keyset cursor: a range of migration 0220's
        ``idx_wiki_links_kb_to_from``, so a hub's page of backlinks sorts nothing)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LITE} FROM wiki_links l JOIN wiki_pages p ON p.knowledge_base_id = l.knowledge_base_id"
                " AND p.slug = l.from_slug AND p.deleted_at IS NULL"
                " WHERE l.to_slug = %s AND l.knowledge_base_id = %s AND l.from_slug <> l.to_slug AND p.tenant_id = %s"
                " AND (%s::text IS NULL OR l.from_slug > %s) ORDER BY l.from_slug LIMIT %s",
                (slug, kb_id, tenant_id, after, after, limit),
            ).fetchall()
        return [PageLite.model_validate(r) for r in rows]

    def pages_az(
        self,
        tenant_id: int,
        kb_id: str,
        *,
        page_type: str | None = None,
        after: tuple[str, str] | None = None,
        limit: int = MAX_LIST,
    ) -> tuple[list[PageLite], tuple[str, str] | None]:
        """One page of the KB's live pages A-Z: up to ``limit`` (clamped to 1..``MAX_LIST``) in
        (lower(title), slug) order after the cursor ``after``, of ``page_type`` only unless it is
        None; and the cursor of the next page ((lower(title), slug) of this page's last row), None
        on the last one. One range of migration 0220's indexes, whatever the KB's size."""
        limit = min(max(int(limit), 1), MAX_LIST)
        where, params = (
            ["p.knowledge_base_id = %(kb)s", "p.deleted_at IS NULL", "p.tenant_id = %(tenant)s"],
            {
                "kb": kb_id,
                "tenant": tenant_id,
                "limit": limit + 1,
            },
        )
        if page_type is not None:
            where.append("p.page_type = %(type)s")
            params["type"] = page_type
        if after is not None:
            where.append("(lower(p.title), p.slug) > (%(after_title)s, %(after_slug)s)")
            params["after_title"], params["after_slug"] = after
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LITE}, lower(p.title) AS title_key FROM wiki_pages p WHERE {' AND '.join(where)}"
                " ORDER BY lower(p.title), p.slug LIMIT %(limit)s",
                params,
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        cursor = (rows[-1]["title_key"], rows[-1]["slug"]) if more else None
        return [PageLite.model_validate(r) for r in rows], cursor

    def sources(
        self, tenant_id: int, kb_id: str, slug: str, *, after: int = 0, limit: int = MAX_LIST
    ) -> tuple[list[PageSource], int | None] | None:
        """The documents a live page cites, in its source refs' order: up to ``limit`` (clamped to
        1..``MAX_LIST``) after position ``after`` (1-based), each with the document's source URI
        and status (None for one gone since), and the position to pass for the next page (None on
        the last). None when ``slug`` is not a live page of the tenant's KB."""
        limit = min(max(int(limit), 1), MAX_LIST)
        # one statement: the page's row always comes (its refs' columns NULL when none is left), so
        # a page with no refs past ``after`` is told from no page
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT r.n AS position, r.ref->>'knowledge_id' AS knowledge_id, r.ref->>'title' AS title,"
                " k.source_uri, k.status FROM wiki_pages p"
                " LEFT JOIN LATERAL (SELECT ref, n"
                "  FROM jsonb_array_elements(p.source_refs) WITH ORDINALITY AS e(ref, n)"
                "  WHERE e.n > %s ORDER BY e.n LIMIT %s) r ON true"
                " LEFT JOIN knowledges k ON k.id = r.ref->>'knowledge_id' AND k.knowledge_base_id = p.knowledge_base_id"
                " AND k.status <> 'deleted'"
                " WHERE p.knowledge_base_id = %s AND p.slug = %s AND p.deleted_at IS NULL AND p.tenant_id = %s"
                " ORDER BY r.n",
                (after, limit + 1, kb_id, slug, tenant_id),
            ).fetchall()
        if not rows:
            return None
        rows = [r for r in rows if r["position"] is not None]
        more = len(rows) > limit
        rows = rows[:limit]
        return [PageSource.model_validate(r) for r in rows], (rows[-1]["position"] if more else None)

    def lite(self, tenant_id: int, kb_id: str, slugs: list[str]) -> dict[str, PageLite]:
        """Narrow rows of the live pages among ``slugs`` (at most ``MAX_LIST`` asked), keyed by slug."""
        slugs = sorted(set(slugs))[:MAX_LIST]
        if not slugs:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LITE} FROM wiki_pages p WHERE p.knowledge_base_id = %s"
                " AND p.slug = ANY(%s) AND p.deleted_at IS NULL AND p.tenant_id = %s",
                (kb_id, slugs, tenant_id),
            ).fetchall()
        return {r["slug"]: PageLite.model_validate(r) for r in rows}

    def graph(
        self,
        tenant_id: int,
        kb_id: str,
        slug: str,
        hops: int = GRAPH_HOPS,
        per_node: int = GRAPH_PER_NODE,
        max_nodes: int = GRAPH_MAX_NODES,
    ) -> Neighbourhood:
        """The pages within ``hops`` links of ``slug`` (either direction) and the links among them.
        Each node contributes at most ``per_node`` out-links and as many in-links (the first by
        the other page's slug), and the graph stops growing at ``max_nodes`` pages (nearest
        first), so a hub costs the same as a leaf; links to no live page and to the page itself
        are skipped before the caps count. The answer says which pages had links cut and whether
        pages were left out. One statement for the page and one per hop (the neighbours' rows
        come with their links, one more per node and direction than drawn, to see the cut); no
        nodes when ``slug`` is not a live page of the tenant's KB."""
        centre = self.lite(tenant_id, kb_id, [slug])
        if not centre:
            return Neighbourhood(nodes={}, edges=set())
        graph = Neighbourhood(nodes=dict(centre), edges=set())
        frontier = [slug]
        with self.pool.connection() as conn:
            for _ in range(hops):
                rows = conn.execute(
                    _NEIGHBOURS_SQL, {"slugs": frontier, "kb": kb_id, "per": per_node + 1, "tenant": tenant_id}
                ).fetchall()
                frontier = []
                # one order whatever the plan: by node, out-links first, then the slugs LIMIT kept
                rows.sort(key=lambda r: (r["node"], not r["outgoing"], r["slug"]))
                drawn: dict[tuple[str, bool], int] = {}
                for r in rows:
                    node, outgoing, other = r.pop("node"), r.pop("outgoing"), r["slug"]
                    if drawn.get((node, outgoing), 0) == per_node:
                        graph.links_capped.add(node)  # the extra row: this node has more
                        continue
                    drawn[(node, outgoing)] = drawn.get((node, outgoing), 0) + 1
                    if other not in graph.nodes:
                        if len(graph.nodes) < max_nodes:
                            graph.nodes[other] = PageLite.model_validate(r)
                            frontier.append(other)
                        else:
                            graph.pages_capped = True
                    if other in graph.nodes:
                        graph.edges.add((node, other) if outgoing else (other, node))
                if not frontier:
                    break
        return graph

    # -- search -------------------------------------------------------------------------------
    def search(
        self,
        tenant_id: int,
        kb_id: str,
        query: str,
        limit: int = SEARCH_LIMIT,
        *,
        after: SearchKey | None = None,
        page_type: str | None = None,
    ) -> list[SearchHit]:
        """Pages matching ``query``, at most ``limit``, in one ranked order: title and alias
        matches first (exact, prefix, then substring, by trigram similarity; at most
        ``RANK_WINDOW``), then pages whose text holds its words (the last one as a prefix, for
        search as you type; CJK text as a phrase of characters) ranked by ``ts_rank_cd`` among the
        first ``RANK_WINDOW`` matches; each page once, of ``page_type`` only unless it is None.
        ``after``: the :attr:`SearchHit.key` of the previous page's last hit (a keyset: a walk of
        the pages sees no hit twice, whatever plan each call gets). A query of no word finds nothing.
        Three statements at most (titles, text ranks with snippets), each over bounded windows."""
        q = " ".join(query.lower().split())[:200]
        if not q or limit <= 0:
            return []
        params = {
            "kb": kb_id,
            "tenant": tenant_id,
            "q": q,
            "like": "%" + _like_escape(q) + "%",
            "prefix": _like_escape(q) + "%",
            "window": RANK_WINDOW,
            "trgm": len(q) >= 3,
            "type": page_type,
        }
        words = [w for w in (_ts_word(w) for w in q.split()) if w]
        cjk = has_cjk(q)
        params["phrase"] = cjk
        params["tsq"] = " & ".join(words[:-1] + [words[-1] + ":*"]) if words else ""
        with self.pool.connection() as conn:
            rows = conn.execute(_TITLE_SEARCH_SQL, params).fetchall()
            # in key order (the slug's code points break ties, as the keyset compares them here)
            titles = sorted(
                (SearchHit(page=PageLite.model_validate(r), kind="title", score=float(r["score"])) for r in rows),
                key=lambda h: h.key,
            )
            hits = [h for h in titles if after is None or h.key > after][:limit]
            if len(hits) < limit and (cjk or words):
                text_after = after if after is not None and after[0] == 1 else None
                params.update(
                    titles=[h.page.slug for h in titles],
                    after_score=-text_after[1] if text_after else None,
                    after_slug=text_after[2] if text_after else None,
                    limit=limit - len(hits),
                )
                hits += [
                    SearchHit(
                        page=PageLite.model_validate(r),
                        kind="text",
                        score=float(r["score"]),
                        snippet=_snippet(r["snippet"], cjk),
                    )
                    for r in conn.execute(_TEXT_SEARCH_SQL, params).fetchall()
                ]
        return hits

    # -- documents ----------------------------------------------------------------------------
    def document(self, tenant_id: int, kb_id: str, knowledge_id: str) -> DocumentHead | None:
        """The tenant's KB's live document ``knowledge_id`` (a deleted one is not found: its text is
        gone from every view), its content cut to
        ``DOCUMENT_HEAD_CHARS`` characters and the whole text's length, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT id, tenant_id, knowledge_base_id, title, source_uri, left(content, %s) AS content,"
                " length(content) AS chars, content_hash, status, error FROM knowledges"
                " WHERE id = %s AND knowledge_base_id = %s AND tenant_id = %s"
                " AND deleted_at IS NULL AND status <> 'deleted'",
                (DOCUMENT_HEAD_CHARS, knowledge_id, kb_id, tenant_id),
            ).fetchone()
        return DocumentHead.model_validate(row) if row else None

    def document_text(
        self, tenant_id: int, kb_id: str, knowledge_id: str, start: int = 0, chars: int = TEXT_PART_CHARS
    ) -> DocumentText | None:
        """At most ``chars`` characters of the text of the tenant's KB's document ``knowledge_id``
        (a live one) from character ``start`` on (0-based; past the end: empty), with the
        whole text's length; None when the document is not the KB's. PostgreSQL reads the whole
        value to count it (a document is at most ``KBWIKI_MAX_DOCUMENT_CHARS`` when ingested),
        but only the part is sent."""
        start = min(max(start, 0), _MAX_TEXT_OFFSET)
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT id, title, source_uri, status, length(content) AS chars, %s::int AS start,"
                " substr(content, %s::int + 1, %s::int) AS text FROM knowledges"
                " WHERE id = %s AND knowledge_base_id = %s AND tenant_id = %s"
                " AND deleted_at IS NULL AND status <> 'deleted'",
                (start, start, chars, knowledge_id, kb_id, tenant_id),
            ).fetchone()
        return DocumentText.model_validate(row) if row else None

    def pages_citing(self, tenant_id: int, kb_id: str, knowledge_id: str, limit: int = MAX_LIST) -> list[PageLite]:
        """Up to ``limit`` live pages citing the document (source_refs containment, GIN), by type and slug."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LITE} FROM wiki_pages p WHERE p.knowledge_base_id = %s AND p.deleted_at IS NULL"
                " AND p.source_refs @> jsonb_build_array(jsonb_build_object('knowledge_id', %s::text))"
                " AND p.tenant_id = %s ORDER BY p.page_type <> 'summary', p.slug LIMIT %s",
                (kb_id, knowledge_id, tenant_id, limit),
            ).fetchall()
        return [PageLite.model_validate(r) for r in rows]

    def mentioned_in(
        self, tenant_id: int, kb_id: str, key: str, limit: int = MAX_LIST, offset: int = 0
    ) -> tuple[int, list[tuple[str, str, str]]]:
        """(how many documents name the name key ``key``, and ``limit`` of them from ``offset`` as
        (summary slug, title, knowledge id), those that say most of it first): the counter row and
        a walk of the mention index's best-rows index."""
        with self.pool.connection() as conn:
            count = conn.execute(
                "SELECT c.docs FROM wiki_mention_keys c JOIN knowledge_bases b ON b.id = c.knowledge_base_id"
                " WHERE c.knowledge_base_id = %s AND c.key = %s AND b.tenant_id = %s",
                (kb_id, key, tenant_id),
            ).fetchone()
            rows = conn.execute(
                "SELECT m.summary_slug, k.title, m.knowledge_id FROM wiki_mentions m"
                " JOIN knowledges k ON k.id = m.knowledge_id"
                " WHERE m.knowledge_base_id = %s AND m.key = %s AND k.tenant_id = %s"
                " ORDER BY m.score DESC, m.summary_slug, m.knowledge_id LIMIT %s OFFSET %s",
                (kb_id, key, tenant_id, limit, offset),
            ).fetchall()
        return (count["docs"] if count else 0), [(r["summary_slug"], r["title"], r["knowledge_id"]) for r in rows]

    def pages_naming(self, tenant_id: int, kb_id: str, knowledge_id: str, limit: int = MAX_LIST) -> list[PageLite]:
        """Up to ``limit`` live entity/concept pages of the names the document names (its rows of the
        mention index: the pages that list it under "Mentioned in"), by slug."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_LITE} FROM wiki_mentions m JOIN wiki_pages p ON p.knowledge_base_id = m.knowledge_base_id"
                " AND p.name_key = m.key AND p.deleted_at IS NULL"
                " WHERE m.knowledge_base_id = %s AND m.knowledge_id = %s AND p.tenant_id = %s"
                " AND p.page_type IN ('entity', 'concept') ORDER BY p.slug LIMIT %s",
                (kb_id, knowledge_id, tenant_id, limit),
            ).fetchall()
        return [PageLite.model_validate(r) for r in rows]

    # -- operations ---------------------------------------------------------------------------
    def lanes(self, tenant_id: int) -> list[LaneRow]:
        """Every lane with rows of the tenant's KBs: rows, claimed rows, age of the oldest row."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT scope_id AS knowledge_base_id, task_type, count(*) AS rows,"
                " count(claimed_at) AS claimed,"
                " extract(epoch FROM now() - min(enqueued_at))::float8 AS oldest_age_s"
                " FROM task_pending_ops WHERE tenant_id = %s AND scope = %s"
                " GROUP BY scope_id, task_type ORDER BY scope_id, task_type",
                (tenant_id, SCOPE_KB),
            ).fetchall()
        return [LaneRow.model_validate(r) for r in rows]

    def active_batches(self, tenant_id: int) -> dict[str, dict]:
        """Per KB id of the tenant, the lane batch running now (a fence with a holder):
        ``{"task_type", "holder", "token", "age_s"}``."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT f.scope_id, f.task_type, f.holder, f.token,"
                " extract(epoch FROM now() - f.taken_at)::float8 AS age_s"
                " FROM task_lane_fences f JOIN knowledge_bases k ON k.id = f.scope_id"
                " WHERE k.tenant_id = %s AND f.scope = %s AND f.holder IS NOT NULL"
                # the holder stays on the fence after its batch: running means it still claims rows
                " AND EXISTS (SELECT 1 FROM task_pending_ops o WHERE o.task_type = f.task_type"
                "  AND o.scope = f.scope AND o.scope_id = f.scope_id AND o.claimed_at IS NOT NULL)",
                (tenant_id, SCOPE_KB),
            ).fetchall()
        return {r.pop("scope_id"): dict(r) for r in rows}

    def documents_by_status(self, tenant_id: int) -> dict[str, dict[str, int]]:
        """Per KB id of the tenant, its documents per status."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT knowledge_base_id, status, count(*) AS n FROM knowledges WHERE tenant_id = %s GROUP BY 1, 2",
                (tenant_id,),
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for r in rows:
            out.setdefault(r["knowledge_base_id"], {})[r["status"]] = r["n"]
        return out

    def pages_by_type(self, tenant_id: int) -> dict[str, dict[str, int]]:
        """Per KB id of the tenant, its live pages per page type."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT p.knowledge_base_id, p.page_type, count(*) AS n FROM knowledge_bases k"
                " JOIN wiki_pages p ON p.knowledge_base_id = k.id AND p.deleted_at IS NULL"
                " WHERE k.tenant_id = %s AND k.deleted_at IS NULL GROUP BY 1, 2",
                (tenant_id,),
            ).fetchall()
        out: dict[str, dict[str, int]] = {}
        for r in rows:
            out.setdefault(r["knowledge_base_id"], {})[r["page_type"]] = r["n"]
        return out

    def dead_letter_groups(self, tenant_id: int, limit: int = 50) -> list[DeadLetterGroup]:
        """The tenant's open dead letters (resolved ones are history) grouped by task type and error
        headline (first line of the error, its ids and numbers replaced by ``<id>`` and ``<n>``: the
        same error about two documents is one group), the largest groups first, at most ``limit``
        groups."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT task_type, {_HEADLINE_SQL} AS headline, count(*) AS n,"
                " max(id) AS last_id, max(failed_at) AS last_failed_at FROM task_dead_letters"
                " WHERE tenant_id = %s AND resolved_at IS NULL GROUP BY 1, 2 ORDER BY n DESC, last_id DESC LIMIT %s",
                (tenant_id, limit),
            ).fetchall()
        return [DeadLetterGroup.model_validate(r) for r in rows]

    def dead_letters_by_type(self, tenant_id: int) -> dict[str, int]:
        """The tenant's open dead letters per task type (resolved ones are history)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT task_type, count(*) AS n FROM task_dead_letters WHERE tenant_id = %s AND resolved_at IS NULL"
                " GROUP BY 1",
                (tenant_id,),
            ).fetchall()
        return {r["task_type"]: r["n"] for r in rows}


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _snippet(headline: str, cjk: bool) -> str:
    """``ts_headline``'s output on one line; for a CJK query the spaces ``wiki_mention_text`` put
    around CJK characters (so each is a word to highlight) are taken out again."""
    text = " ".join(headline.split())
    if cjk:
        text = _SPACED_CJK.sub("", text).replace(">><<", "")
    return text


def _ts_word(word: str) -> str:
    """A word as a tsquery lexeme: only letters, digits, '-' and '_' kept, quoted."""
    kept = "".join(ch for ch in word if ch.isalnum() or ch in "-_")
    return f"'{kept}'" if kept else ""
