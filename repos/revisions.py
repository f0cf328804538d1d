"""Earlier versions of pages (``wiki_page_revisions``, migration 0210): how a page write keeps them,
and the reads of a page's history.

A revision is written by the page write itself (``WikiPageRepository.save_many`` runs
:data:`SAVE_PAGES_SQL`): one statement upserts the pages, copies each replaced row whose content
or source refs change into a revision, and deletes that page's revisions beyond the retention,
so a write costs the same number of statements whatever the number of pages, and the table holds
at most ``keep`` revisions per page row however often a hub page is rewritten. Pruning touches the
rows of the pages written only (the unique index on (page_id, version)), never a KB-wide scan.

Every read here is scoped to a tenant and a KB and bounded (``LIMIT``), and goes through the
unique index on (page_id, version).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from psycopg import Connection
from psycopg_pool import ConnectionPool

from repos.db import borrow
from repos.knowledge import live_document_ids
from wiki.models import SourceRef
from wiki.revisions import MAX_REF_CHANGES, RefChanges, Revision, RevisionInfo, versions_citing

#: Most revisions a read returns: the largest retention ``Settings.page_revisions_keep`` allows,
#: and the current version.
MAX_READ = 1001

# The columns of a page row as save_many sends them (a JSON array of objects, one per page).
_RECORD = (
    "tenant_id bigint, knowledge_base_id text, slug text, title text, page_type text, status text, content text,"
    " summary text, aliases jsonb, source_refs jsonb, facts jsonb, name_key text, lead text, lead_key text,"
    " written_by text"
)

#: Locks the live rows of the pages about to be written, in slug order, before
#: :data:`SAVE_PAGES_SQL` reads them: the statement's snapshot then holds the version it replaces
#: (a writer committing between its snapshot and its upsert would otherwise have its version
#: replaced without a revision). Instant for callers that already hold the rows.
LOCK_PAGES_SQL = (
    "SELECT id FROM wiki_pages WHERE knowledge_base_id = %s AND slug = ANY(%s) AND deleted_at IS NULL"
    " ORDER BY slug FOR UPDATE"
)

#: Upsert the pages of one KB (``%(rows)s``: JSON array of page objects), one row per slug, and
#: keep each replaced version whose content or source refs change, at most ``%(keep)s`` per page
#: (0: none, and the page's revisions go). A revision keeps the source refs that differ from the
#: new version both ways (``refs_only_here`` with their positions), or NULL when more than
#: ``%(max_refs)s`` differ. Every sub-statement sees the rows as they were before the statement
#: (PostgreSQL's rule for data-modifying WITH), so ``old`` is the replaced version whatever order
#: they run in, and ``pruned`` never sees the revision ``kept`` adds: it leaves ``keep - 1``.
#: The set differences use NOT IN on an uncorrelated list: a hashed subplan, linear in the refs.
SAVE_PAGES_SQL = f"""
WITH r AS MATERIALIZED (SELECT * FROM jsonb_to_recordset(%(rows)s) AS r({_RECORD})),
old AS MATERIALIZED (
    SELECT p.id, p.tenant_id, p.knowledge_base_id, p.slug, p.version, p.content, p.source_refs, p.updated_at,
           p.written_by, r.source_refs AS next_refs
    FROM r JOIN wiki_pages p ON p.knowledge_base_id = r.knowledge_base_id AND p.slug = r.slug AND p.deleted_at IS NULL
    WHERE p.content IS DISTINCT FROM r.content OR p.source_refs IS DISTINCT FROM r.source_refs
),
pruned AS (
    DELETE FROM wiki_page_revisions v USING (
        SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY page_id ORDER BY version DESC) AS n
                        FROM wiki_page_revisions WHERE page_id IN (SELECT id FROM old)) ranked
        WHERE n >= %(keep)s) d
    WHERE v.id = d.id
),
kept AS (
    INSERT INTO wiki_page_revisions (tenant_id, knowledge_base_id, page_id, version, slug, content, sources,
                                     refs_only_here, refs_only_next, written_at, written_by)
    SELECT o.tenant_id, o.knowledge_base_id, o.id, o.version, o.slug, o.content, jsonb_array_length(o.source_refs),
           CASE WHEN h.n_here + n.n_next <= %(max_refs)s THEN h.here END,
           CASE WHEN h.n_here + n.n_next <= %(max_refs)s THEN n.next END,
           o.updated_at, o.written_by
    FROM old o
    CROSS JOIN LATERAL (
        SELECT coalesce(jsonb_agg(jsonb_build_array(a.i - 1, a.e) ORDER BY a.i), '[]'::jsonb) AS here,
               count(*) AS n_here
        FROM jsonb_array_elements(o.source_refs) WITH ORDINALITY AS a(e, i)
        WHERE o.source_refs <> o.next_refs AND a.e NOT IN (SELECT jsonb_array_elements(o.next_refs))
    ) h(here, n_here)
    CROSS JOIN LATERAL (
        SELECT coalesce(jsonb_agg(b.e ORDER BY b.i), '[]'::jsonb) AS next, count(*) AS n_next
        FROM jsonb_array_elements(o.next_refs) WITH ORDINALITY AS b(e, i)
        WHERE o.source_refs <> o.next_refs AND b.e NOT IN (SELECT jsonb_array_elements(o.source_refs))
    ) n(next, n_next)
    WHERE %(keep)s > 0
    ON CONFLICT (page_id, version) DO NOTHING
),
up AS (
    INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, status, content, summary, aliases,
                            source_refs, facts, name_key, lead, lead_key, written_by)
    SELECT tenant_id, knowledge_base_id, slug, title, page_type, status, content, summary, aliases, source_refs, facts,
           name_key, lead, lead_key, written_by
    FROM r
    ON CONFLICT (knowledge_base_id, slug) WHERE deleted_at IS NULL DO UPDATE SET
        title = EXCLUDED.title, page_type = EXCLUDED.page_type, status = EXCLUDED.status,
        name_key = EXCLUDED.name_key, content = EXCLUDED.content, summary = EXCLUDED.summary,
        aliases = EXCLUDED.aliases, source_refs = EXCLUDED.source_refs, facts = EXCLUDED.facts, lead = EXCLUDED.lead,
        lead_key = EXCLUDED.lead_key, written_by = EXCLUDED.written_by,
        version = wiki_pages.version + 1, updated_at = now()
    RETURNING slug, version
)
SELECT slug, version FROM up
"""

#: Parameters of :data:`SAVE_PAGES_SQL` besides the rows.
SAVE_PARAMS = {"max_refs": MAX_REF_CHANGES}

# A live page's current version and its revisions, newest first (the history's lines).
_HISTORY_SQL = """
WITH p AS (
    SELECT id, version, updated_at, written_by, octet_length(content) AS size,
           jsonb_array_length(source_refs) AS sources
    FROM wiki_pages WHERE tenant_id = %(tenant)s AND knowledge_base_id = %(kb)s AND slug = %(slug)s
    AND deleted_at IS NULL
)
SELECT version, updated_at AS written_at, written_by, size, sources, true AS current FROM p
UNION ALL (
    SELECT v.version, v.written_at, v.written_by, octet_length(v.content), v.sources, false
    FROM p JOIN wiki_page_revisions v ON v.page_id = p.id
    WHERE v.tenant_id = %(tenant)s AND v.knowledge_base_id = %(kb)s
    ORDER BY v.version DESC LIMIT %(limit)s
)
"""


#: The page rows of a KB (live or not) whose current version or one of whose revisions cites one of
#: the newline-joined knowledge ids: containment on the source-ref GIN indexes of wiki_pages and
#: of refs_only_here (a kept range of versions citing a document ends with a revision whose next
#: version lacks it). Each probe is fenced (OFFSET 0) from the KB's filter, as SLUGS_BY_SOURCE_SQL's.
FORGET_CANDIDATES_SQL = """
SELECT DISTINCT c.id FROM unnest(string_to_array(%(kids)s, E'\\n')) AS k(kid)
CROSS JOIN LATERAL (
    SELECT p.id, p.knowledge_base_id FROM (
        SELECT id, knowledge_base_id FROM wiki_pages
        WHERE source_refs @> jsonb_build_array(jsonb_build_object('knowledge_id', k.kid)) OFFSET 0) p
    UNION
    SELECT v.page_id, v.knowledge_base_id FROM (
        SELECT page_id, knowledge_base_id FROM wiki_page_revisions
        WHERE refs_only_here @> jsonb_build_array(jsonb_build_array(jsonb_build_object('knowledge_id', k.kid)))
        OFFSET 0) v
) c
WHERE c.knowledge_base_id = %(kb)s
"""


class PageRevisionRepository:
    """Reads of ``wiki_page_revisions``: a page's history, and versions with their content."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def history(self, tenant_id: int, kb_id: str, slug: str, limit: int = 50) -> list[RevisionInfo] | None:
        """The live page ``slug``'s current version and up to ``limit`` earlier ones, newest first
        (no content: its size in bytes); None when the tenant's KB has no live page ``slug``."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                _HISTORY_SQL, {"tenant": tenant_id, "kb": kb_id, "slug": slug, "limit": min(limit, MAX_READ)}
            ).fetchall()
        if not rows:
            return None
        return [RevisionInfo.model_validate(r) for r in rows]

    def since(
        self,
        tenant_id: int,
        kb_id: str,
        page_id: int,
        version: int,
        conn: Connection | None = None,
        content_of: Sequence[int] | None = None,
    ) -> list[Revision]:
        """The revisions of page row ``page_id`` at or above ``version``, newest first, with their
        source-ref changes (what ``wiki.revisions.sources_at`` needs to go back to ``version``) and
        their content (only that of the versions ``content_of`` when given, the others' empty: a
        diff of two versions reads two texts, not every one between); at most ``MAX_READ``."""
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                "SELECT version, written_at, written_by, octet_length(content) AS size, sources,"
                " CASE WHEN %s::int[] IS NULL OR version = ANY(%s::int[]) THEN content ELSE '' END AS content,"
                " refs_only_here, refs_only_next FROM wiki_page_revisions"
                " WHERE page_id = %s AND version >= %s AND tenant_id = %s AND knowledge_base_id = %s"
                " ORDER BY version DESC LIMIT %s",
                (
                    None if content_of is None else list(content_of),
                    None if content_of is None else list(content_of),
                    page_id,
                    version,
                    tenant_id,
                    kb_id,
                    MAX_READ,
                ),
            ).fetchall()
        return [Revision.model_validate(r) for r in rows]

    def forget_documents(self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None) -> int:
        """Delete every kept revision of the KB whose sources cite one of ``knowledge_ids`` (or are
        unknown on a page that cites one), so no earlier version quotes a deleted document; the
        reduce batch that retracts documents calls it. Three statements: the page rows citing
        them now or in a revision (GIN probes), those rows' ref changes (at most ``keep`` each),
        the delete. Returns the revisions deleted."""
        ids = sorted(set(knowledge_ids))
        if not ids:
            return 0
        with borrow(self.pool, conn) as c:
            pages = [r["id"] for r in c.execute(FORGET_CANDIDATES_SQL, {"kids": "\n".join(ids), "kb": kb_id})]
            if not pages:
                return 0
            current = {
                r["id"]: [SourceRef.model_validate(ref) for ref in r["source_refs"]]
                for r in c.execute("SELECT id, source_refs FROM wiki_pages WHERE id = ANY(%s)", (pages,))
            }
            changes: dict[int, list[RefChanges]] = {}
            for r in c.execute(
                "SELECT page_id, version, refs_only_here, refs_only_next FROM wiki_page_revisions"
                " WHERE page_id = ANY(%s) ORDER BY page_id, version DESC",
                (pages,),
            ):
                changes.setdefault(r["page_id"], []).append(RefChanges.model_validate(r))
            doomed = [
                (page_id, version)
                for page_id, newer_first in changes.items()
                for version in versions_citing(current.get(page_id, []), newer_first, set(ids))
            ]
            if not doomed:
                return 0
            c.execute(
                "DELETE FROM wiki_page_revisions v USING unnest(%s::bigint[], %s::int[]) AS d(page_id, version)"
                " WHERE v.page_id = d.page_id AND v.version = d.version",
                ([p for p, _ in doomed], [v for _, v in doomed]),
            )
        return len(doomed)

    def documents_changed_since(
        self, kb_id: str, knowledge_ids: Iterable[str], moment: datetime, conn: Connection | None = None
    ) -> set[str]:
        """Which of ``knowledge_ids`` changed after ``moment`` (their row's ``updated_at``: a new
        content ingested, a retry; the batch that wrote a page sets its documents' status in the
        same transaction, so at the same moment). One primary-key lookup."""
        ids = sorted(set(knowledge_ids))
        if not ids:
            return set()
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                "SELECT id FROM knowledges WHERE knowledge_base_id = %s AND id = ANY(%s) AND updated_at > %s",
                (kb_id, ids, moment),
            ).fetchall()
        return {r["id"] for r in rows}

    def documents_gone(self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None) -> set[str]:
        """Which of ``knowledge_ids`` are no live document of the KB (missing, ``deleted_at`` set
        or status ``deleted``: what lint calls a stale source). One primary-key lookup."""
        ids = set(knowledge_ids)
        with borrow(self.pool, conn) as c:
            return ids - live_document_ids(c, kb_id, ids)
