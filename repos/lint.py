"""What the lint walk reads from PostgreSQL, one bounded query per window, and its reports.

Every query takes at most one window of pages (``WINDOW`` = 200) or the keys derived from it,
is scoped to one KB and is backed by an index: the live-slug unique index, ``wiki_links``' primary
key and ``idx_wiki_links_to``, ``knowledges``' primary key, ``idx_wiki_pages_kb_lower_title`` and
the lowercased-aliases GIN index of migration 0004. Which of a window's link targets are live
is ``WikiPageRepository.existing_slugs`` (a one-column query), not repeated here.
"""

from __future__ import annotations

from collections.abc import Iterable

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from repos.db import borrow
from repos.knowledge import live_document_ids
from repos.pages import LITE_COLUMNS, WikiPageRepository
from wiki.lint import STALE_SAMPLE_PER_PAGE, LintPage, LintReport, RevertOverwritten
from wiki.models import PageLite
from wiki.revisions import INGEST_WRITERS, Writer

#: Pages per keyset window of the lint walk (the issue's figure).
WINDOW = 200

#: Candidate pages returned per looked-up key in duplicate detection: enough to report a
#: duplicate (one is enough) while a title shared by thousands of pages stays bounded.
PER_KEY = 5


def _per_key_sql(match: str) -> str:
    """Per key of a window (``%s`` text[]), at most ``per_key`` (the third ``%s``) live pages of the
    KB (the second ``%s``) that ``match`` (a condition on ``p`` and ``k.key``) finds, by slug.

    No LIMIT in a per-key lookup: a LIMIT makes the planner favour a plan that returns its first
    rows at once, a walk of all the KB's pages on another index filtered per page (every key read
    the KB: at 40,000 pages 0.9-19 s a window of 400 keys for titles, 24 ms now)."""
    return (
        f"SELECT DISTINCT ON (slug) {LITE_COLUMNS} FROM ("
        "  SELECT p.*, row_number() OVER (PARTITION BY k.key ORDER BY p.slug) AS nth"
        f"  FROM unnest(%s::text[]) AS k(key) JOIN wiki_pages p ON {match}"
        "  WHERE p.deleted_at IS NULL AND p.knowledge_base_id = %s) m"
        " WHERE nth <= %s"
    )


# A title is a range, not "=": "=" was planned on the trigram indexes of lower(title) (60 s for
# 5,000 keys, docs/decisions.md); only the btree (knowledge_base_id, lower(title)) serves a range.
PAGES_TITLED_SQL = _per_key_sql("lower(p.title) >= k.key AND lower(p.title) <= k.key")
PAGES_WITH_ALIAS_SQL = _per_key_sql("lower(p.aliases::text)::jsonb @> jsonb_build_array(k.key)")


class LintRepository:
    """Bounded reads for the lint walk and the ``wiki_lint_reports`` table."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def page_window(self, kb_id: str, after_id: int, limit: int = WINDOW) -> list[LintPage]:
        """Up to ``limit`` live, non-archived pages with ``id > after_id`` in id order (keyset cursor).

        Reads id, the narrow columns and content; not source_refs nor facts (see ``LintPage``).
        """
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT id, {LITE_COLUMNS}, content FROM wiki_pages WHERE knowledge_base_id = %s"
                " AND deleted_at IS NULL AND status <> 'archived' AND id > %s ORDER BY id LIMIT %s",
                (kb_id, after_id, limit),
            ).fetchall()
        return [LintPage.model_validate(r) for r in rows]

    def slugs_with_in_links(self, kb_id: str, slugs: Iterable[str]) -> set[str]:
        """Which of ``slugs`` some other live page links to (a page's link to itself does not count).

        ``wiki_links`` holds only out-links of live pages (``WikiPageRepository.delete`` drops them).
        """
        slugs = list(set(slugs))
        if not slugs:
            return set()
        with self.pool.connection() as conn:
            # EXISTS stops at the first in-link: a hub page may have thousands.
            rows = conn.execute(
                "SELECT s.slug FROM unnest(%s::text[]) AS s(slug) WHERE EXISTS (SELECT 1 FROM wiki_links l"
                " WHERE l.knowledge_base_id = %s AND l.to_slug = s.slug AND l.from_slug <> s.slug)",
                (slugs, kb_id),
            ).fetchall()
        return {r["slug"] for r in rows}

    def stale_source_refs(self, kb_id: str, page_ids: Iterable[int]) -> dict[str, tuple[int, list[tuple[str, str]]]]:
        """Per page slug among ``page_ids``: (number of stale source refs, up to
        ``STALE_SAMPLE_PER_PAGE`` (knowledge id, title) of them). Pages without any are absent.

        A ref is stale when its document is missing from the KB, has ``deleted_at`` set or has
        status ``deleted`` (a document being deleted has ``deleted_at`` set from the start; its
        retract drops the same refs, so mending them first is harmless). Counting happens in
        PostgreSQL so a hub page citing thousands of documents costs the client a few rows.
        """
        page_ids = list(set(page_ids))
        if not page_ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                """
                SELECT p.slug, count(*) AS n,
                       (array_agg(r.kid ORDER BY r.kid))[1:%(k)s] AS kids,
                       (array_agg(r.title ORDER BY r.kid))[1:%(k)s] AS titles
                FROM wiki_pages p
                CROSS JOIN LATERAL (SELECT e->>'knowledge_id' AS kid, coalesce(e->>'title', '') AS title
                                    FROM jsonb_array_elements(p.source_refs) e) r
                WHERE p.knowledge_base_id = %(kb)s AND p.id = ANY(%(ids)s) AND p.deleted_at IS NULL
                  AND NOT EXISTS (SELECT 1 FROM knowledges k WHERE k.id = r.kid
                                  AND k.knowledge_base_id = p.knowledge_base_id
                                  AND k.deleted_at IS NULL AND k.status <> 'deleted')
                GROUP BY p.slug
                """,
                {"kb": kb_id, "ids": page_ids, "k": STALE_SAMPLE_PER_PAGE},
            ).fetchall()
        return {r["slug"]: (r["n"], list(zip(r["kids"], r["titles"]))) for r in rows}

    def overwritten_reverts(self, kb_id: str, page_ids: Iterable[int]) -> dict[str, RevertOverwritten]:
        """Per page slug among ``page_ids`` whose latest revert an ingest wrote over since: the
        revert's version, the version it went back to, and the first later version a reduce batch
        wrote (``wiki.revisions.INGEST_WRITERS``) with its label. A page whose current version is
        a revert, or whose revert is no longer among its kept revisions, is absent.

        Each page reads its own revisions only (at most ``page_revisions_keep``, through the
        unique index on (page_id, version)).
        """
        page_ids = list(set(page_ids))
        if not page_ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                """
                SELECT p.slug, rv.version AS revert, split_part(rv.written_by, ':', 2) AS reverted_to,
                       w.version AS rewritten, w.written_by AS by
                FROM wiki_pages p
                CROSS JOIN LATERAL (
                    SELECT version, written_by FROM wiki_page_revisions v
                    WHERE v.page_id = p.id AND split_part(v.written_by, ':', 1) = %(revert)s
                    ORDER BY version DESC LIMIT 1) rv
                CROSS JOIN LATERAL (
                    SELECT version, written_by FROM (
                        SELECT v.version, v.written_by FROM wiki_page_revisions v
                        WHERE v.page_id = p.id AND v.version > rv.version
                        UNION ALL SELECT p.version, p.written_by) later
                    WHERE split_part(written_by, ':', 1) = ANY(%(ingest)s)
                    ORDER BY version LIMIT 1) w
                WHERE p.knowledge_base_id = %(kb)s AND p.id = ANY(%(ids)s) AND p.deleted_at IS NULL
                  AND split_part(p.written_by, ':', 1) <> %(revert)s
                """,
                {
                    "kb": kb_id,
                    "ids": page_ids,
                    "revert": Writer.revert.value,
                    "ingest": [w.value for w in INGEST_WRITERS],
                },
            ).fetchall()
        return {r["slug"]: RevertOverwritten(r["revert"], r["reverted_to"], r["rewritten"], r["by"]) for r in rows}

    def live_documents(self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None) -> set[str]:
        """Which of ``knowledge_ids`` are documents of the KB that still exist (the complement of stale)."""
        with borrow(self.pool, conn) as c:
            return live_document_ids(c, kb_id, knowledge_ids)

    def pages_titled(self, kb_id: str, keys: Iterable[str], per_key: int = PER_KEY) -> list[PageLite]:
        """Live pages whose lower(title) is one of ``keys`` (lowercased), at most ``per_key`` per key.

        Uses ``idx_wiki_pages_kb_lower_title``; archived pages are included (the caller decides).
        """
        return self._per_key(PAGES_TITLED_SQL, kb_id, keys, per_key)

    def pages_with_alias(self, kb_id: str, keys: Iterable[str], per_key: int = PER_KEY) -> list[PageLite]:
        """Live pages with an alias whose lowercase form is one of ``keys``, at most ``per_key`` per key.

        Containment ``lower(aliases::text)::jsonb @> '["key"]'`` on the GIN index
        ``idx_wiki_pages_aliases_lower`` (migration 0004); an alias matches when it equals a key
        after lowercasing (no other normalization). ``_per_key_sql`` says why no LIMIT: with one
        this lookup took 2.5 s a window of 400 keys at 5,000 pages, 1.4 ms on the index.
        """
        return self._per_key(PAGES_WITH_ALIAS_SQL, kb_id, keys, per_key)

    def _per_key(self, sql: str, kb_id: str, keys: Iterable[str], per_key: int) -> list[PageLite]:
        """The pages a ``_per_key_sql`` lookup finds for ``keys`` (deduplicated; [] for none)."""
        keys = sorted(set(keys))
        if not keys:
            return []
        with self.pool.connection() as conn:
            rows = conn.execute(sql, (keys, kb_id, per_key)).fetchall()
        return [PageLite.model_validate(r) for r in rows]

    def title_matches(self, kb_id: str, phrases: Iterable[str]) -> list[tuple[str, PageLite]]:
        """``WikiPageRepository.title_matches``: the walk looks a window's phrases up in one query
        and still answers, per page, what a query of that page's phrases alone would."""
        return WikiPageRepository(self.pool).title_matches(kb_id, phrases)

    def save_report(self, report: LintReport) -> None:
        """Store ``report`` as the KB's latest (replacing the previous one)."""
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO wiki_lint_reports (knowledge_base_id, report, created_at) VALUES (%s, %s, %s)"
                " ON CONFLICT (knowledge_base_id) DO UPDATE SET report = EXCLUDED.report,"
                " created_at = EXCLUDED.created_at",
                (report.knowledge_base_id, Jsonb(report.model_dump(mode="json")), report.created_at),
            )

    def latest_report(self, kb_id: str) -> LintReport | None:
        """The KB's latest stored report, or None."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT report FROM wiki_lint_reports WHERE knowledge_base_id = %s", (kb_id,)).fetchone()
        return LintReport.model_validate(row["report"]) if row else None
