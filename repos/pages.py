"""Wiki pages and the link graph (``wiki_pages``, ``wiki_links``).

Every query is scoped to one KB and backed by an index; none reads a whole KB's pages. Out-links
of a page are rewritten in the same transaction as its content, so in-links and orphans are
plain queries over ``wiki_links``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from repos.db import advisory_xact_lock, borrow, keyset_rows
from repos.revisions import LOCK_PAGES_SQL, SAVE_PAGES_SQL, SAVE_PARAMS, PageRevisionRepository
from wiki.dedup import link_phrases, name_key
from wiki.errors import BadInput
from wiki.links import out_link_slugs
from wiki.models import ITEM_TYPES, Page, PageLite, PageStatus, facts_json

LITE_COLUMNS = "slug, title, page_type, status, aliases"
MAX_RECENT = 1000

# Similar-title lookups use wiki.dedup.TRGM_THRESHOLD (pg_trgm's `%`, set per connection by
# repos.db): a high threshold lets the GIN index drop nearly every row before the recheck, which is
# what kept the lookup flat from 1k to 40k documents.

# The planner prices `%` like a cheap comparison and picks a sequential scan of the key table up
# to tens of thousands of rows (24 ms at 12k keys, growing with the KB); the GIN index answers in
# a few ms at any size. The setting lasts until the end of the lookup's transaction.
TRGM_INDEX_ONLY = "SET LOCAL enable_seqscan = off"

# For each text of a batch (newline-joined: psycopg dumps a large text[] slowly), its best-scoring
# keys (title or alias) per page on the narrow wiki_title_keys table (migration 0006): one
# statement whatever the batch's size, each text one probe of the GIN trigram index.
SIMILAR_TITLES_SQL = (
    "SELECT q.text AS query, p.slug, p.title, p.page_type, p.status, p.aliases"
    " FROM unnest(string_to_array(%(texts)s, E'\\n')) WITH ORDINALITY AS q(text, i)"
    " CROSS JOIN LATERAL ("
    "  SELECT slug, max(similarity(key, q.text)) AS score FROM wiki_title_keys"
    "  WHERE key %% q.text AND knowledge_base_id = %(kb)s"
    "  GROUP BY slug ORDER BY score DESC, slug LIMIT %(k)s) m"
    " JOIN wiki_pages p ON p.knowledge_base_id = %(kb)s AND p.slug = m.slug AND p.deleted_at IS NULL"
    " ORDER BY q.i, m.score DESC, m.slug"
)
# The live entity/concept pages whose title keys are among a newline-joined set of phrases
# (see WikiPageRepository.title_matches).
TITLE_MATCHES_SQL = (
    "WITH m AS MATERIALIZED (SELECT k.key, k.slug FROM unnest(string_to_array(%(phrases)s, E'\\n')) AS q(key)"
    "  JOIN wiki_title_keys k ON k.key = q.key AND k.knowledge_base_id = %(kb)s)"
    f" SELECT DISTINCT m.key AS matched_key, {', '.join('p.' + c.strip() for c in LITE_COLUMNS.split(','))}"
    " FROM m JOIN wiki_pages p ON p.slug = m.slug"
    " WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL AND p.slug = ANY(ARRAY(SELECT slug FROM m))"
)
# For each normalized slug (a dead link's target without hyphens, underscores and case), the live
# pages other than the index whose slug without hyphens equals it or is trigram-similar to it, most
# similar first (migration 0050's indexes: the B-tree for equality, the GIN for similarity).
SIMILAR_SLUGS_SQL = (
    f"SELECT q.key AS query, {', '.join('m.' + c.strip() for c in LITE_COLUMNS.split(','))}"
    " FROM unnest(string_to_array(%(keys)s, E'\\n')) WITH ORDINALITY AS q(key, i)"
    " CROSS JOIN LATERAL ("
    f"  SELECT {LITE_COLUMNS}, similarity(replace(slug, '-', ''), q.key) AS score FROM wiki_pages"
    "   WHERE knowledge_base_id = %(kb)s AND deleted_at IS NULL AND page_type <> 'index'"
    "   AND (replace(slug, '-', '') = q.key OR replace(slug, '-', '') %% q.key)"
    "   ORDER BY replace(slug, '-', '') = q.key DESC, score DESC, slug LIMIT %(k)s) m"
    " ORDER BY q.i, m.slug"
)
#: pg_trgm similarity a slug needs to be a link-repair candidate. Lower than the title lookup's:
#: repair keeps pairs whose bigram Jaccard is >= 0.8, and those score down to 0.4 in trigram
#: similarity ("daxing" / "axing"); measured on 200,000 random edits of slug words.
SLUG_TRGM_THRESHOLD = 0.3
# The live pages other than the index whose content holds one of the phrases (full-text phrase
# queries on migration 0051's index), in slug order after a keyset cursor.
PAGES_MENTIONING_SQL = (
    "SELECT slug FROM wiki_pages WHERE knowledge_base_id = %(kb)s AND deleted_at IS NULL AND page_type <> 'index'"
    " AND to_tsvector('simple'::regconfig, wiki_mention_text(content)) @@ ("
    "  SELECT string_agg('(' || q::text || ')', ' | ')::tsquery"
    "  FROM unnest(string_to_array(%(phrases)s, E'\\n')) AS u(p),"
    "   LATERAL phraseto_tsquery('simple'::regconfig, wiki_mention_text(p)) AS q WHERE q::text <> '')"
    " AND slug > %(after)s ORDER BY slug LIMIT %(limit)s"
)
# The entity or concept pages cited by the most documents (migration 0052's index).
MOST_CITED_SQL = (
    f"SELECT {LITE_COLUMNS}, jsonb_array_length(source_refs) AS sources FROM wiki_pages"
    " WHERE knowledge_base_id = %s AND page_type = %s AND deleted_at IS NULL"
    " ORDER BY jsonb_array_length(source_refs) DESC, slug LIMIT %s"
)
# For each document id of a batch, the live pages citing it: containment on the jsonb_path_ops GIN
# index. Each probe is fenced (OFFSET 0) from the KB's filter: a KB the planner's statistics do not
# know yet (a new KB in a database of older ones) was estimated at one page, and the probe became a
# scan of every page of the KB for every document (0.4-1.1 s a batch at 1,000 pages instead of a few
# ms); a knowledge id belongs to one KB, so the filter after the probe drops nothing the KB cites.
SLUGS_BY_SOURCE_SQL = (
    "SELECT k.kid, p.slug FROM unnest(string_to_array(%(kids)s, E'\\n')) AS k(kid)"
    " CROSS JOIN LATERAL ("
    "  SELECT slug, knowledge_base_id, deleted_at FROM wiki_pages"
    "  WHERE source_refs @> jsonb_build_array(jsonb_build_object('knowledge_id', k.kid)) OFFSET 0) p"
    " WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL"
    " ORDER BY k.kid, p.slug"
)
BY_NAME_KEYS_SQL = (
    f"SELECT name_key, {LITE_COLUMNS} FROM wiki_pages WHERE knowledge_base_id = %(kb)s"
    " AND name_key = ANY(%(keys)s) AND deleted_at IS NULL AND status <> 'archived'"
    " AND page_type IN ('entity', 'concept') ORDER BY slug"
)
DELETE_LINKS_SQL = "DELETE FROM wiki_links WHERE knowledge_base_id = %s AND from_slug = ANY(%s)"
DELETE_KEYS_SQL = "DELETE FROM wiki_title_keys WHERE knowledge_base_id = %s AND slug = ANY(%s)"


def title_keys(page: Page) -> list[str]:
    """The lookup keys of a page: lower(title) and lower(alias) of the aliases mentions are linked
    by (``wiki.dedup.link_phrases``), for live item pages only."""
    if page.page_type not in ITEM_TYPES or page.status == PageStatus.archived:
        return []
    return sorted({k.lower() for k in link_phrases(page.title, page.aliases, page.page_type) if k.strip()})


def page_name_key(page: Page) -> str | None:
    """The ``wiki_pages.name_key`` of a page: ``wiki.dedup.name_key`` of its title for an
    entity/concept page (the key every item joining it has), None for summaries and the index."""
    return name_key(page.title) if page.page_type in ITEM_TYPES else None


#: The ``wiki_pages`` columns a page write sets from the page (``_page_columns``), besides its writer.
PAGE_COLUMNS = (
    "tenant_id, knowledge_base_id, slug, title, page_type, status, content, summary, aliases, source_refs, facts,"
    " name_key, lead, lead_key"
)
_JSON_COLUMNS = {"aliases", "source_refs", "facts"}


def _page_columns(p: Page) -> dict:
    """{column: value} of ``PAGE_COLUMNS`` for ``p``, in that order; JSON columns as lists and dicts."""
    values = (p.tenant_id, p.knowledge_base_id, p.slug, p.title, p.page_type, p.status, p.content, p.summary)
    refs = [r.model_dump() for r in p.source_refs]
    values += (p.aliases, refs, facts_json(p.facts), page_name_key(p), p.lead, p.lead_key)
    return dict(zip((c.strip() for c in PAGE_COLUMNS.split(",")), values, strict=True))


#: Earlier versions kept per page unless the repository is told otherwise (``Settings.page_revisions_keep``).
DEFAULT_REVISIONS_KEEP = 20


class WikiPageRepository:
    """Reads and writes live pages of a KB and their out-links; every write keeps the version it
    replaces (``repos.revisions``), the newest ``revisions_keep`` per page."""

    def __init__(self, pool: ConnectionPool, revisions_keep: int = DEFAULT_REVISIONS_KEEP) -> None:
        self.pool = pool
        self.revisions_keep = revisions_keep

    # -- the link graph's writer lock -----------------------------------------------------------
    @staticmethod
    def lock_link_graph(kb_id: str, conn: Connection, shared: bool = False) -> None:
        """Hold the KB's link-graph lock until ``conn``'s transaction ends.

        A transaction that only adds links and writes pages takes it ``shared``; one that deletes
        or moves pages takes it exclusive (a transaction holding it shared may ask again,
        exclusive: it then waits only for the other holders). Every writer takes it before any
        row lock, and shared holders never wait for a row (cross-link locks with SKIP LOCKED), so
        it never closes a deadlock. A link to a page is then either committed before the page is
        deleted or moved (and the deleting writer sees it and has it repaired) or checked against
        the pages live after that writer committed. Without it, a cross-link that read a page's
        target before a reduce batch moved it wrote a dead link; taken exclusive by every writer,
        cross-link runs and reduce batches queued behind each other (1.3 sessions waiting on it on
        average during linux-doc ingestion).
        """
        advisory_xact_lock(conn, f"wiki-link-graph:{kb_id}", shared=shared)

    # -- reads ---------------------------------------------------------------------------------
    def get(self, kb_id: str, slug: str, conn: Connection | None = None, for_update: bool = False) -> Page | None:
        """The live page at ``slug``, or None; ``for_update`` locks the row in the caller's transaction."""
        return self.get_many(kb_id, [slug], conn=conn, for_update=for_update).get(slug)

    def get_many(
        self,
        kb_id: str,
        slugs: Iterable[str],
        conn: Connection | None = None,
        for_update: bool = False,
        skip_locked: bool = False,
    ) -> dict[str, Page]:
        """The live pages among ``slugs`` (full rows), keyed by slug: one statement.

        ``for_update`` locks them in the caller's transaction, in slug order, so two writers
        locking overlapping sets wait for each other instead of deadlocking; with
        ``skip_locked`` the pages another transaction holds are left out instead of waited for.
        """
        slugs = sorted(set(slugs))
        if not slugs:
            return {}
        lock = " ORDER BY slug FOR UPDATE" + (" SKIP LOCKED" if skip_locked else "") if for_update else ""
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                "SELECT * FROM wiki_pages WHERE knowledge_base_id = %s AND slug = ANY(%s) AND deleted_at IS NULL"
                + lock,
                (kb_id, slugs),
            ).fetchall()
        return {r["slug"]: Page.model_validate(r) for r in rows}

    def lite_by_slugs(self, kb_id: str, slugs: Iterable[str]) -> dict[str, PageLite]:
        """Narrow rows (no content) of the live pages among ``slugs``, keyed by slug."""
        return {r["slug"]: PageLite.model_validate(r) for r in self._live_rows(kb_id, slugs, LITE_COLUMNS)}

    def summaries(self, kb_id: str, slugs: Iterable[str]) -> dict[str, str]:
        """The one-line summaries of the live pages among ``slugs``, keyed by slug (no content read)."""
        return {r["slug"]: r["summary"] or "" for r in self._live_rows(kb_id, slugs, "slug, summary")}

    def existing_slugs(self, kb_id: str, slugs: Iterable[str], conn: Connection | None = None) -> set[str]:
        """Which of ``slugs`` are live pages."""
        return {r["slug"] for r in self._live_rows(kb_id, slugs, "slug", conn)}

    def _live_rows(self, kb_id: str, slugs: Iterable[str], columns: str, conn: Connection | None = None) -> list[dict]:
        """``columns`` of the live pages among ``slugs`` (no order), in one statement; [] for no slugs."""
        slugs = list(set(slugs))
        if not slugs:
            return []
        with borrow(self.pool, conn) as c:
            return c.execute(
                f"SELECT {columns} FROM wiki_pages WHERE knowledge_base_id = %s AND slug = ANY(%s)"
                " AND deleted_at IS NULL",
                (kb_id, slugs),
            ).fetchall()

    def by_name_keys(self, kb_id: str, keys: Iterable[str]) -> dict[str, list[PageLite]]:
        """The live, not archived entity/concept pages whose title has each ``wiki.dedup.name_key``
        among ``keys``, keyed by name key, smallest slug first (one page per key unless pages
        were written by an older rule). One statement, one probe per key on the (KB, name key)
        index whatever the KB's size."""
        keys = sorted(set(keys) - {""})
        if not keys:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(BY_NAME_KEYS_SQL, {"kb": kb_id, "keys": keys}).fetchall()
        out: dict[str, list[PageLite]] = {}
        for r in rows:
            out.setdefault(r.pop("name_key"), []).append(PageLite.model_validate(r))
        return out

    def similar_titles(self, kb_id: str, text: str, k: int = 5) -> list[PageLite]:
        """:meth:`similar_titles_many` for one text."""
        return self.similar_titles_many(kb_id, [text], k).get(text.lower(), [])

    def similar_titles_many(self, kb_id: str, texts: Iterable[str], k: int = 5) -> dict[str, list[PageLite]]:
        """For each text, up to ``k`` live entity/concept pages whose title or an alias is
        trigram-similar to it (similarity ≥ ``TRGM_THRESHOLD``), most similar first; archived pages
        excluded. Keyed by the lowercased text (every text gets a key, [] when nothing is similar).

        One statement on the GIN trigram index of ``wiki_title_keys``, one index probe per text, so
        a batch costs one round trip; the caller decides which candidates name the same thing.
        Texts holding a newline are looked up without it (they cannot be a title key anyway).
        """
        keys = sorted({" ".join(t.lower().split()) for t in texts} - {""})
        out: dict[str, list[PageLite]] = {t.lower(): [] for t in texts}
        if not keys:
            return out
        with self.pool.connection() as conn:
            conn.execute(TRGM_INDEX_ONLY)
            rows = conn.execute(SIMILAR_TITLES_SQL, {"kb": kb_id, "texts": "\n".join(keys), "k": k}).fetchall()
        found: dict[str, list[PageLite]] = {}
        for r in rows:
            found.setdefault(r.pop("query"), []).append(PageLite.model_validate(r))
        for text in out:
            out[text] = found.get(" ".join(text.split()), [])
        return out

    def title_matches(self, kb_id: str, phrases: Iterable[str]) -> list[tuple[str, PageLite]]:
        """(key, page) for every live entity/concept page with a title key (lower(title) or
        lower(alias), as ``wiki_title_keys`` stores them) among ``phrases`` (lowercased): one probe
        per phrase on the B-tree of ``wiki_title_keys``.

        Phrases go as one newline-joined string (psycopg dumps a 5,000-element array at 40 ms) and
        are joined as rows, not compared with ``= ANY``: the planner folds that array into a constant
        and spent 20-140 ms planning 12,000 phrases. The matched keys (a few hundred) then fetch
        their pages through the live-slug index; a plain join hashed every page of the KB.
        """
        phrases = sorted({p for p in phrases if "\n" not in p})
        if not phrases:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(TITLE_MATCHES_SQL, {"phrases": "\n".join(phrases), "kb": kb_id}).fetchall()
        return [(r.pop("matched_key"), PageLite.model_validate(r)) for r in rows]

    def similar_slugs_many(self, kb_id: str, keys: Iterable[str], k: int = 5) -> dict[str, list[PageLite]]:
        """For each normalized slug key (``normalize_slug`` of a dead link's target), up to ``k``
        live pages other than the index whose slug without hyphens equals the key (first) or is
        trigram-similar to it (similarity >= ``SLUG_TRGM_THRESHOLD``), keyed by the key ([] when
        none). One statement; the caller decides which candidate, if any, the link goes to.
        Keys holding a newline are not looked up.
        """
        keys = sorted({key for key in keys if key and "\n" not in key})
        out: dict[str, list[PageLite]] = {key: [] for key in keys}
        if not keys:
            return out
        with self.pool.connection() as conn:
            conn.execute(TRGM_INDEX_ONLY)
            conn.execute(f"SET LOCAL pg_trgm.similarity_threshold = {SLUG_TRGM_THRESHOLD}")
            rows = conn.execute(SIMILAR_SLUGS_SQL, {"kb": kb_id, "keys": "\n".join(keys), "k": k}).fetchall()
        for r in rows:
            out[r.pop("query")].append(PageLite.model_validate(r))
        return out

    def pages_mentioning(
        self, kb_id: str, phrases: Iterable[str], after: str = "", limit: int | None = None
    ) -> list[str]:
        """Slugs (sorted, all > ``after``, at most ``limit``: None for all) of the live pages other than the index
        whose content holds one of ``phrases`` as a phrase: its words in order, compared as
        PostgreSQL's 'simple' text search configuration reads them (case-insensitive; CJK
        character by character). A superset of the pages whose prose mentions a phrase (the
        index also sees code, links and headings); the caller's linkify decides.

        One statement on migration 0051's full-text index; page through with ``after`` = the last
        slug returned. Phrases holding a newline, or no word, are not looked up.
        """
        phrases = sorted({p for p in phrases if p.strip() and "\n" not in p})
        if not phrases:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(
                PAGES_MENTIONING_SQL, {"kb": kb_id, "phrases": "\n".join(phrases), "after": after, "limit": limit}
            ).fetchall()
        return [r["slug"] for r in rows]

    def most_cited(self, kb_id: str, page_type: str, limit: int = 20) -> list[tuple[PageLite, int]]:
        """(page, number of source refs) of the ``limit`` live pages of ``page_type`` cited by the
        most documents, most first, ties by slug: a top-N walk of migration 0052's index."""
        with self.pool.connection() as conn:
            rows = conn.execute(MOST_CITED_SQL, (kb_id, page_type, max(1, min(limit, MAX_RECENT)))).fetchall()
        return [(PageLite.model_validate({k: v for k, v in r.items() if k != "sources"}), r["sources"]) for r in rows]

    def slugs_by_source(self, kb_id: str, knowledge_id: str, conn: Connection | None = None) -> list[str]:
        """:meth:`slugs_by_sources` for one document."""
        return self.slugs_by_sources(kb_id, [knowledge_id], conn=conn).get(knowledge_id, [])

    def slugs_by_sources(
        self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None
    ) -> dict[str, list[str]]:
        """For each document id, the slugs (sorted) of the live pages citing it: containment on the
        source_refs jsonb_path_ops GIN index (migration 0130 made every source ref an object). One
        statement for all the ids.

        Raises ``BadInput`` (a ValueError) for an id holding a newline (ids are the knowledge table's keys).
        """
        ids = sorted(set(knowledge_ids))
        if any("\n" in kid for kid in ids):
            raise BadInput("a knowledge id cannot hold a newline")
        out: dict[str, list[str]] = {kid: [] for kid in ids}
        if not ids:
            return out
        with borrow(self.pool, conn) as c:
            rows = c.execute(SLUGS_BY_SOURCE_SQL, {"kb": kb_id, "kids": "\n".join(ids)}).fetchall()
        for r in rows:
            out[r["kid"]].append(r["slug"])
        return out

    def in_link_sources(self, kb_id: str, to_slugs: list[str], conn: Connection | None = None) -> list[str]:
        """Slugs of pages that link to any of ``to_slugs``."""
        if not to_slugs:
            return []
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                "SELECT DISTINCT from_slug FROM wiki_links WHERE knowledge_base_id = %s AND to_slug = ANY(%s)",
                (kb_id, to_slugs),
            ).fetchall()
        return [r["from_slug"] for r in rows]

    def summaries_titled(self, kb_id: str, titles: Iterable[str]) -> list[tuple[str, str, str]]:
        """(slug, title, knowledge id) of the live summaries whose title is one of ``titles`` up to
        case, sorted: one range of migration 0220's (KB, type, lower(title)) index per title."""
        lowered = sorted({t.lower() for t in titles})
        if not lowered:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT slug, title, source_refs->0->>'knowledge_id' AS kid FROM wiki_pages"
                " WHERE knowledge_base_id = %s AND page_type = 'summary' AND deleted_at IS NULL"
                " AND lower(title) = ANY(%s) ORDER BY slug",
                (kb_id, lowered),
            ).fetchall()
        return [(r["slug"], r["title"], r["kid"] or "") for r in rows]

    def first_by_title(self, kb_id: str, page_type: str, limit: int = 200) -> list[Page]:
        """The first ``limit`` (capped at 1000) live pages of a type A-Z, in (lower(title), slug)
        order: a range of migration 0220's index whatever the KB's size, and an order that is a
        function of the pages alone (not of when they were written)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM wiki_pages WHERE knowledge_base_id = %s AND page_type = %s AND deleted_at IS NULL"
                " ORDER BY lower(title), slug LIMIT %s",
                (kb_id, page_type, max(1, min(limit, MAX_RECENT))),
            ).fetchall()
        return [Page.model_validate(r) for r in rows]

    def recent(self, kb_id: str, page_type: str, limit: int = 200) -> list[Page]:
        """The most recently updated live pages of a type; ``limit`` is capped at 1000."""
        return [Page.model_validate(r) for r in self._recent_rows(kb_id, page_type, limit, "*")]

    def recent_slugs(self, kb_id: str, page_type: str, limit: int = 200) -> list[str]:
        """The slugs of :meth:`recent`, in its order, without reading the pages."""
        return [r["slug"] for r in self._recent_rows(kb_id, page_type, limit, "slug")]

    def _recent_rows(self, kb_id: str, page_type: str, limit: int, columns: str) -> list[dict]:
        with self.pool.connection() as conn:
            return conn.execute(
                f"SELECT {columns} FROM wiki_pages WHERE knowledge_base_id = %s AND page_type = %s"
                " AND deleted_at IS NULL ORDER BY updated_at DESC, id DESC LIMIT %s",
                (kb_id, page_type, max(1, min(limit, MAX_RECENT))),
            ).fetchall()

    def counts_by_type(self, kb_id: str) -> dict[str, int]:
        """Live pages per page type."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT page_type, count(*) AS n FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL"
                " GROUP BY page_type",
                (kb_id,),
            ).fetchall()
        return {r["page_type"]: r["n"] for r in rows}

    def link_stats(self, kb_id: str) -> dict[str, int]:
        """``links`` (out-links of live pages), ``dead_links`` (to no live page) and ``orphans``
        (live pages other than the index with no in-link)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                """
                SELECT
                  (SELECT count(*) FROM wiki_links WHERE knowledge_base_id = %(kb)s) AS links,
                  (SELECT count(*) FROM wiki_links l WHERE l.knowledge_base_id = %(kb)s AND NOT EXISTS (
                      SELECT 1 FROM wiki_pages p WHERE p.knowledge_base_id = %(kb)s AND p.slug = l.to_slug
                      AND p.deleted_at IS NULL)) AS dead_links,
                  (SELECT count(*) FROM wiki_pages p WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL
                      AND p.page_type <> 'index' AND NOT EXISTS (
                      SELECT 1 FROM wiki_links l WHERE l.knowledge_base_id = %(kb)s AND l.to_slug = p.slug
                      AND l.from_slug <> p.slug)) AS orphans
                """,
                {"kb": kb_id},
            ).fetchone()
        return dict(row)

    def iter_pages(self, kb_id: str, window: int = 200):
        """Yield every live page in id order, reading ``window`` rows per query (keyset cursor)."""
        query = (
            "SELECT * FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL AND id > %s"
            " ORDER BY id LIMIT %s"
        )
        for row in keyset_rows(self.pool, query, (kb_id,), 0, window):
            yield Page.model_validate(row)

    # -- writes --------------------------------------------------------------------------------
    def save(self, page: Page, conn: Connection | None = None, written_by: str = "") -> Page:
        """Insert or update one live page: :meth:`save_many`; returns it with its stored version."""
        saved = self.save_many([page], conn=conn, written_by=written_by)[page.slug]
        return page.model_copy(update={"version": saved})

    def save_many(
        self,
        pages: Iterable[Page],
        conn: Connection | None = None,
        out_links: Mapping[str, set[str]] | None = None,
        written_by: str = "",
        writers: Mapping[str, str] | None = None,
    ) -> dict[str, int]:
        """Insert or update the live pages of one KB at their slugs (version + 1 on update) and
        rewrite their out-links and title keys, in one transaction and six statements whatever
        their number. Returns {slug: stored version}. ``out_links``: {slug: ``out_link_slugs`` of
        its content} for pages whose links the caller already parsed (the others are parsed here).

        Each replaced version whose content or source refs change is kept as a revision, and the
        page's revisions beyond ``revisions_keep`` go, in the same statement as the upsert
        (``repos.revisions.SAVE_PAGES_SQL``). ``written_by``: who writes them (a
        ``wiki.revisions.written_by`` label, stored with the version); ``writers``: {slug: label}
        for pages written by someone else than ``written_by``.

        Raises ``BadInput`` (a ValueError) when the pages belong to several KBs or two share a slug.
        """
        pages = list(pages)
        if not pages:
            return {}
        kb_ids = {p.knowledge_base_id for p in pages}
        slugs = [p.slug for p in pages]
        if len(kb_ids) > 1 or len(set(slugs)) < len(slugs):
            raise BadInput("save_many takes pages of one KB with distinct slugs")
        kb_id = kb_ids.pop()
        rows = [{**_page_columns(p), "written_by": (writers or {}).get(p.slug, written_by)} for p in pages]
        out_links = out_links or {}
        links = sorted(
            {
                (p.slug, t)
                for p in pages
                for t in (out_links[p.slug] if p.slug in out_links else out_link_slugs(p.content))
                if t != p.slug
            }
        )
        keys = sorted({(p.slug, key) for p in pages for key in title_keys(p)})
        with borrow(self.pool, conn) as c:
            if self.revisions_keep:
                c.execute(LOCK_PAGES_SQL, (kb_id, sorted(slugs)))
            params = {"rows": Jsonb(rows), "keep": self.revisions_keep, **SAVE_PARAMS}
            versions = {r["slug"]: r["version"] for r in c.execute(SAVE_PAGES_SQL, params).fetchall()}
            c.execute(DELETE_LINKS_SQL, (kb_id, slugs))
            if links:
                c.execute(
                    "INSERT INTO wiki_links (knowledge_base_id, from_slug, to_slug)"
                    " SELECT %s, unnest(%s::text[]), unnest(%s::text[]) ON CONFLICT DO NOTHING",
                    (kb_id, [f for f, _ in links], [t for _, t in links]),
                )
            c.execute(DELETE_KEYS_SQL, (kb_id, slugs))
            if keys:
                c.execute(
                    "INSERT INTO wiki_title_keys (knowledge_base_id, slug, key)"
                    " SELECT %s, unnest(%s::text[]), unnest(%s::text[])",
                    (kb_id, [s for s, _ in keys], [k for _, k in keys]),
                )
        return versions

    def forget_documents(self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None) -> int:
        """Delete the kept revisions of the KB's pages that cite one of ``knowledge_ids``
        (``repos.revisions.PageRevisionRepository.forget_documents``): a deleted document's text
        stays in no page's history. Returns the revisions deleted."""
        return PageRevisionRepository(self.pool).forget_documents(kb_id, knowledge_ids, conn=conn)

    def delete(self, kb_id: str, slug: str, conn: Connection | None = None) -> bool:
        """Soft-delete the live page (:meth:`delete_many`); returns whether a page was deleted."""
        return bool(self.delete_many(kb_id, [slug], conn=conn))

    def delete_many(self, kb_id: str, slugs: Iterable[str], conn: Connection | None = None) -> list[str]:
        """Soft-delete the live pages among ``slugs`` and drop their out-links and title keys, in
        three statements; returns the slugs deleted (sorted)."""
        slugs = sorted(set(slugs))
        if not slugs:
            return []
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                "UPDATE wiki_pages SET deleted_at = now() WHERE knowledge_base_id = %s AND slug = ANY(%s)"
                " AND deleted_at IS NULL RETURNING slug",
                (kb_id, slugs),
            ).fetchall()
            c.execute(DELETE_LINKS_SQL, (kb_id, slugs))
            c.execute(DELETE_KEYS_SQL, (kb_id, slugs))
        return sorted(r["slug"] for r in rows)

    def delete_kb(self, kb_id: str, conn: Connection | None = None) -> int:
        """Delete every page, revision and link of a KB (KB deletion); returns the live pages
        deleted (rows of earlier deleted versions go too, uncounted, as ``status`` never counted them)."""
        with borrow(self.pool, conn) as c:
            # pages first, in id order: a concurrent save() locks its page row before its links,
            # so taking links first deadlocked against it (seen: delete-kb while workers ran)
            rows = c.execute(
                "SELECT deleted_at IS NULL AS live FROM wiki_pages WHERE knowledge_base_id = %s ORDER BY id FOR UPDATE",
                (kb_id,),
            ).fetchall()
            # in one statement through (page_id, version), before the pages: the foreign key's
            # cascade would delete them one page at a time
            c.execute(
                "DELETE FROM wiki_page_revisions v USING wiki_pages p"
                " WHERE p.knowledge_base_id = %s AND v.page_id = p.id",
                (kb_id,),
            )
            c.execute("DELETE FROM wiki_pages WHERE knowledge_base_id = %s", (kb_id,))
            n = sum(r["live"] for r in rows)
            c.execute("DELETE FROM wiki_title_keys WHERE knowledge_base_id = %s", (kb_id,))
            c.execute("DELETE FROM wiki_links WHERE knowledge_base_id = %s", (kb_id,))
            return n

    def bulk_insert(self, pages: Iterable[Page]) -> int:
        """Insert many new pages and their out-links with COPY (imports, benchmarks, test fixtures).

        Pages must not exist yet (a live slug conflict raises ``psycopg.errors.UniqueViolation``
        and nothing is written). Returns the number of pages inserted.
        """
        n = 0
        with self.pool.connection() as conn, conn.cursor() as cur:
            with cur.copy(f"COPY wiki_pages ({PAGE_COLUMNS}) FROM STDIN") as copy:
                links, keys = [], []
                for p in pages:
                    row = _page_columns(p)
                    copy.write_row([Jsonb(v) if c in _JSON_COLUMNS else v for c, v in row.items()])
                    links += [(p.knowledge_base_id, p.slug, t) for t in out_link_slugs(p.content) if t != p.slug]
                    keys += [(p.knowledge_base_id, p.slug, key) for key in title_keys(p)]
                    n += 1
            with cur.copy("COPY wiki_links (knowledge_base_id, from_slug, to_slug) FROM STDIN") as copy:
                for row in dict.fromkeys(links):
                    copy.write_row(row)
            with cur.copy("COPY wiki_title_keys (knowledge_base_id, slug, key) FROM STDIN") as copy:
                for row in dict.fromkeys(keys):
                    copy.write_row(row)
        return n

    def cited_only_by(self, kb_id: str, slugs: Iterable[str], knowledge_ids: Iterable[str]) -> set[str]:
        """The live pages among ``slugs`` whose every source ref is one of ``knowledge_ids``.

        One statement; the refs are compared in PostgreSQL, so a hub page citing thousands of
        documents costs no transfer (only the matching slugs come back).
        """
        slugs, ids = list(set(slugs)), list(set(knowledge_ids))
        if not slugs:
            return set()
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT slug FROM wiki_pages p WHERE knowledge_base_id = %s AND slug = ANY(%s) AND deleted_at IS NULL"
                " AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p.source_refs) r"
                "  WHERE NOT (r->>'knowledge_id' = ANY(%s)))",
                (kb_id, slugs, ids),
            ).fetchall()
        return {r["slug"] for r in rows}
