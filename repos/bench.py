"""Statements only the benchmarks under ``bench/`` run: building, cloning and dropping whole KBs
in bulk, and reading a KB's state from outside the pipeline while its servers are disturbed.

Nothing in the product calls these; they live here so that every SQL statement of the project
is under ``repos/`` (and ``migrations/``). ``BenchKbRepository`` works on a pool;
``KbProbe`` opens one short connection per question (``connect_timeout`` 3 s), because the
chaos run asks while PostgreSQL restarts and a pool would wait out its own timeout; a question
PostgreSQL does not answer raises ``wiki.errors.DatabaseUnreachable``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool

from wiki.errors import DatabaseUnreachable
from wiki.models import Fact

#: Tables holding a KB's rows by ``knowledge_base_id`` (``task_pending_ops`` holds them by ``scope_id``).
_KB_TABLES = (
    "wiki_links",
    "wiki_title_keys",
    "wiki_page_revisions",
    "wiki_pages",
    "wiki_extractions",
    "wiki_lint_reports",
    "knowledges",
)

# Raw COPY bypasses WikiPageRepository: derive the title/alias keys it would have written.
_TITLE_KEYS = (
    "INSERT INTO wiki_title_keys (knowledge_base_id, slug, key) SELECT DISTINCT p.knowledge_base_id, p.slug,"
    " lower(k.key) FROM wiki_pages p, LATERAL (SELECT p.title UNION SELECT jsonb_array_elements_text(p.aliases))"
    " AS k(key) WHERE p.knowledge_base_id = %s AND p.deleted_at IS NULL AND p.page_type IN ('entity', 'concept')"
    " AND p.status <> 'archived'"
)


class BenchKbRepository:
    """Whole-KB bulk operations of the benchmarks."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def kb_id(self, name: str, tenant_id: int | None = None) -> str | None:
        """The id of the live KB ``name`` (of ``tenant_id`` when given, else of any tenant), or None."""
        query = "SELECT id FROM knowledge_bases WHERE name = %s AND deleted_at IS NULL"
        params: list[Any] = [name]
        if tenant_id is not None:
            query += " AND tenant_id = %s"
            params.append(tenant_id)
        with self.pool.connection() as conn:
            row = conn.execute(query + " ORDER BY created_at LIMIT 1", params).fetchone()
        return row["id"] if row else None

    def create_kb(self, tenant_id: int, name: str) -> str:
        """Insert a KB row (no name check: bench names are plain); returns its id."""
        kb_id = str(uuid.uuid4())
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO knowledge_bases (id, tenant_id, name) VALUES (%s, %s, %s)", (kb_id, tenant_id, name)
            )
        return kb_id

    def live_page_count(self, kb_id: str) -> int:
        """Live pages of the KB (0: the KB is still to be built)."""
        with self.pool.connection() as conn:
            return conn.execute(
                "SELECT count(*) AS n FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL", (kb_id,)
            ).fetchone()["n"]

    def live_pages(self, kb_id: str) -> list[dict[str, Any]]:
        """Every live page row of the KB, whole (the naive lookup the scale bench compares against)."""
        with self.pool.connection() as conn:
            return conn.execute(
                "SELECT * FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL", (kb_id,)
            ).fetchall()

    def sample_pages(self, kb_id: str, n: int, seed: str = "") -> list[dict[str, Any]]:
        """``n`` live pages of the KB that link or are linked (slug, title, page_type, in_links), a
        fixed pseudo-random sample per ``seed`` (ordered by md5 of seed and slug): the web
        benchmark's requests. Reads the KB's links once (a benchmark's setup, not a product query)."""
        with self.pool.connection() as conn:
            return conn.execute(
                "WITH linked AS (SELECT from_slug AS slug FROM wiki_links WHERE knowledge_base_id = %(kb)s"
                "  UNION SELECT to_slug FROM wiki_links WHERE knowledge_base_id = %(kb)s)"
                " SELECT p.slug, p.title, p.page_type, (SELECT count(*) FROM wiki_links l WHERE l.to_slug = p.slug"
                " AND l.knowledge_base_id = p.knowledge_base_id) AS in_links FROM wiki_pages p JOIN linked USING (slug)"
                " WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL ORDER BY md5(%(seed)s || p.slug)"
                " LIMIT %(n)s",
                {"kb": kb_id, "seed": seed, "n": n},
            ).fetchall()

    def title_keys(self, kb_id: str) -> list[str]:
        """The KB's distinct title keys, sorted."""
        with self.pool.connection() as conn:
            return [
                r["key"]
                for r in conn.execute(
                    "SELECT DISTINCT key FROM wiki_title_keys WHERE knowledge_base_id = %s ORDER BY key", (kb_id,)
                )
            ]

    def revision_sizes(self, kb_id: str, slug: str) -> list[dict[str, Any]]:
        """The kept revisions of the live page ``slug``, oldest first: version, written_by, sources
        (refs the version had), refs_changed (refs kept of its change to the next version) and the
        bytes stored: ``content`` and ``refs`` (the two ref deltas) as ``pg_column_size`` gives
        them (after TOAST compression) and ``row`` (the whole row)."""
        with self.pool.connection() as conn:
            return conn.execute(
                "SELECT v.version, v.written_by, v.sources,"
                " coalesce(jsonb_array_length(v.refs_only_here), 0) + coalesce(jsonb_array_length(v.refs_only_next), 0)"
                " AS refs_changed, pg_column_size(v.content) AS content,"
                " coalesce(pg_column_size(v.refs_only_here), 0) + coalesce(pg_column_size(v.refs_only_next), 0)"
                " AS refs,"
                " pg_column_size(v.*) AS row FROM wiki_page_revisions v JOIN wiki_pages p ON p.id = v.page_id"
                " WHERE p.knowledge_base_id = %s AND p.slug = %s AND p.deleted_at IS NULL ORDER BY v.version",
                (kb_id, slug),
            ).fetchall()

    def revision_totals(self, kb_id: str) -> dict[str, Any]:
        """Of the KB's revisions: rows, and the stored bytes of a row (``pg_column_size``) in sum,
        max and mean."""
        with self.pool.connection() as conn:
            return conn.execute(
                "SELECT count(*) AS rows, coalesce(sum(pg_column_size(v.*)), 0) AS bytes,"
                " coalesce(max(pg_column_size(v.*)), 0) AS max_bytes,"
                " coalesce(avg(pg_column_size(v.*)), 0) AS mean_bytes"
                " FROM wiki_page_revisions v WHERE v.knowledge_base_id = %s",
                (kb_id,),
            ).fetchone()

    def drop_kb(self, kb_id: str) -> None:
        """Delete the KB and every row of it, in one transaction."""
        with self.pool.connection() as conn:
            for table in _KB_TABLES:
                conn.execute(
                    sql.SQL("DELETE FROM {} WHERE knowledge_base_id = %s").format(sql.Identifier(table)), (kb_id,)
                )
            conn.execute("DELETE FROM task_pending_ops WHERE scope_id = %s", (kb_id,))
            conn.execute("DELETE FROM knowledge_bases WHERE id = %s", (kb_id,))

    def clone_kb(self, kb_id: str, clone_id: str) -> None:
        """Copy the KB's documents (ids suffixed ``~<clone id prefix>``), live pages, links and title
        keys into the existing KB ``clone_id``, then ANALYZE those tables."""
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO knowledges (id, tenant_id, knowledge_base_id, title, source_uri, content, content_hash,"
                " status) SELECT id || '~' || %s, tenant_id, %s, title, source_uri, content, content_hash, status"
                " FROM knowledges WHERE knowledge_base_id = %s",
                (clone_id[:8], clone_id, kb_id),
            )
            conn.execute(
                "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, status, content,"
                " summary, aliases, source_refs, facts, name_key) SELECT tenant_id, %s, slug, title, page_type,"
                " status, content, summary, aliases, source_refs, facts, name_key FROM wiki_pages"
                " WHERE knowledge_base_id = %s AND deleted_at IS NULL",
                (clone_id, kb_id),
            )
            conn.execute(
                "INSERT INTO wiki_links SELECT %s, from_slug, to_slug FROM wiki_links WHERE knowledge_base_id = %s",
                (clone_id, kb_id),
            )
            conn.execute(
                "INSERT INTO wiki_title_keys SELECT %s, slug, key FROM wiki_title_keys WHERE knowledge_base_id = %s",
                (clone_id, kb_id),
            )
        # As copy_kb does: statistics stale by a clone's thousands of rows planned the first reduce
        # batches badly (bench/llm_pipeline.py b: 21 s for 19 documents, then 1 s per 50).
        with self.pool.connection() as conn:
            for table in ("knowledges", "wiki_pages", "wiki_links", "wiki_title_keys"):
                conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))


def copy_kb(
    url: str,
    tenant_id: int,
    kb_id: str,
    documents: Iterable[Sequence[Any]],
    pages: Iterator[tuple[Sequence[Any], Iterable[str]]],
) -> None:
    """Load a KB with COPY, bypassing the repositories (millions of rows in minutes), then derive
    its title keys and VACUUM ANALYZE the tables (as autovacuum would, later; VACUUM also flushes
    the GIN pending lists COPY filled).

    ``documents``: (id, title, source_uri, status, deleted) per document. ``pages``: per page,
    ((slug, title, page_type, content, summary, aliases, source_refs), the slugs it links to).
    Pages and links go through two connections, each with its own COPY in flight.
    """
    docs_sql = (
        "COPY knowledges (id, tenant_id, knowledge_base_id, title, source_uri, content, content_hash,"
        " status, deleted_at) FROM STDIN"
    )
    with psycopg.connect(url) as conn, conn.cursor().copy(docs_sql) as copy:
        for doc_id, title, source_uri, status, deleted in documents:
            copy.write_row((doc_id, tenant_id, kb_id, title, source_uri, "", "", status, "now" if deleted else None))
    pages_sql = (
        "COPY wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content, summary,"
        " aliases, source_refs) FROM STDIN"
    )
    links_sql = "COPY wiki_links (knowledge_base_id, from_slug, to_slug) FROM STDIN"
    with (
        psycopg.connect(url) as pages_conn,
        psycopg.connect(url) as links_conn,
        pages_conn.cursor().copy(pages_sql) as pages_copy,
        links_conn.cursor().copy(links_sql) as links_copy,
    ):
        for (slug, title, page_type, content, summary, aliases, refs), links in pages:
            pages_copy.write_row(
                (tenant_id, kb_id, slug, title, page_type, content, summary, json.dumps(aliases), json.dumps(refs))
            )
            for to in links:
                links_copy.write_row((kb_id, slug, to))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(_TITLE_KEYS, (kb_id,))
        for table in ("wiki_pages", "wiki_links", "knowledges", "wiki_title_keys"):
            conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(table)))


class KbProbe:
    """A KB's state read from outside the pipeline, one short connection per question (see the module)."""

    def __init__(self, url: str, kb_id: str) -> None:
        self.url, self.kb_id = url, kb_id

    @contextmanager
    def _conn(self) -> Iterator[psycopg.Connection]:
        """A connection of its own; raises ``DatabaseUnreachable`` when the server is down or goes."""
        try:
            with psycopg.connect(self.url, connect_timeout=3, row_factory=dict_row) as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise DatabaseUnreachable(str(exc).strip() or type(exc).__name__) from exc

    def done(self) -> int:
        """Documents of the KB with status ``done``."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT count(*) AS n FROM knowledges WHERE knowledge_base_id = %s AND status = 'done'", (self.kb_id,)
            ).fetchone()["n"]

    def progress(self) -> dict[str, int]:
        """``settled`` (documents done or skipped), ``rows`` (lane rows left) and ``index`` (1 when the
        live index page exists) of the KB."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT (SELECT count(*) FROM knowledges WHERE knowledge_base_id = %(kb)s"
                "         AND status IN ('done', 'skipped')) AS settled,"
                " (SELECT count(*) FROM task_pending_ops WHERE scope_id = %(kb)s) AS rows,"
                " (SELECT count(*) FROM wiki_pages WHERE knowledge_base_id = %(kb)s AND slug = 'index'"
                "         AND deleted_at IS NULL) AS index",
                {"kb": self.kb_id},
            ).fetchone()

    def contents(self) -> dict[str, str]:
        """{document id: content} of every document of the KB (benchmarks of a few hundred documents)."""
        with self._conn() as conn:
            return {
                r["id"]: r["content"]
                for r in conn.execute("SELECT id, content FROM knowledges WHERE knowledge_base_id = %s", (self.kb_id,))
            }

    def item_facts(self) -> list[dict[str, Fact]]:
        """The ``facts`` ({document id: ``Fact``}) of every live entity and concept page."""
        with self._conn() as conn:
            return [
                {k: Fact.model_validate(v) for k, v in r["facts"].items()}
                for r in conn.execute(
                    "SELECT facts FROM wiki_pages WHERE knowledge_base_id = %s AND deleted_at IS NULL"
                    " AND page_type IN ('entity', 'concept')",
                    (self.kb_id,),
                )
            ]

    def documents(self) -> list[dict[str, Any]]:
        """id, source_uri and status of every document of the KB."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT id, source_uri, status FROM knowledges WHERE knowledge_base_id = %s", (self.kb_id,)
            ).fetchall()

    def pages(self) -> list[dict[str, Any]]:
        """slug, page_type, title and source_refs of every live page of the KB."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT slug, page_type, title, source_refs FROM wiki_pages"
                " WHERE knowledge_base_id = %s AND deleted_at IS NULL",
                (self.kb_id,),
            ).fetchall()

    def links(self) -> list[tuple[str, str]]:
        """(from_slug, to_slug) of every link of the KB."""
        with self._conn() as conn:
            return [
                (r["from_slug"], r["to_slug"])
                for r in conn.execute(
                    "SELECT from_slug, to_slug FROM wiki_links WHERE knowledge_base_id = %s", (self.kb_id,)
                )
            ]

    def dead_letters(self) -> list[dict[str, Any]]:
        """task_type, related_id, resolution ("" while open) and the first 200 characters of the
        error of every dead letter."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT task_type, related_id, resolution, left(last_error, 200) AS error FROM task_dead_letters"
            ).fetchall()

    def worker_ids(self, pids: Sequence[int]) -> list[str]:
        """The worker ids heartbeating from these process ids."""
        with self._conn() as conn:
            return [
                r["worker_id"]
                for r in conn.execute("SELECT worker_id FROM task_workers WHERE pid = ANY(%s)", (list(pids),))
            ]

    def claims_held_by(self, worker_ids: Sequence[str]) -> int:
        """Lane rows still claimed by these workers."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT count(*) AS n FROM task_pending_ops WHERE claimed_by = ANY(%s)", (list(worker_ids),)
            ).fetchone()["n"]

    def settle_times(self) -> list[dict[str, Any]]:
        """id, title, status, created_at and updated_at (the time of its last status change: for a
        ``done`` document, the commit of the reduce batch that wrote it) of every document of the KB."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT id, title, status, created_at, updated_at FROM knowledges WHERE knowledge_base_id = %s",
                (self.kb_id,),
            ).fetchall()

    def page_sizes(self, title: str) -> dict[str, Any] | None:
        """Of the live page titled ``title`` (case-insensitive): slug, version, sources (source_refs
        entries) and the bytes of its content, source_refs and facts as stored; None when there is none."""
        with self._conn() as conn:
            return conn.execute(
                "SELECT slug, version, jsonb_array_length(source_refs) AS sources, octet_length(content) AS content,"
                " pg_column_size(source_refs) AS refs_bytes, pg_column_size(facts) AS facts_bytes FROM wiki_pages"
                " WHERE knowledge_base_id = %s AND lower(title) = lower(%s) AND deleted_at IS NULL LIMIT 1",
                (self.kb_id, title),
            ).fetchone()
