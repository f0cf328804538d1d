"""What exists, a page at a time: the live KBs with their counts (``kbwiki kbs``) and a KB's
documents with the number of pages citing each (``kbwiki documents``).

Both read one page of rows in one statement, after a keyset cursor, through migration 0150's
indexes; neither reads a document's content.
"""

from __future__ import annotations

from datetime import datetime

from psycopg import sql
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from wiki.errors import BadInput
from wiki.models import DocStatus

#: Rows a page may hold. ``limit`` is clamped to 1..this + 1: a caller asks for one row more than
#: it shows to learn whether another page follows.
MAX_LIST_PAGE = 1000
#: Document statuses a listing shows; ``deleted`` rows are gone from the KB (``deleting`` ones are
#: still shown until their retract is applied). The column comment of migrations/0002 lists them.
LISTED_STATUSES = tuple(s.value for s in DocStatus if s is not DocStatus.deleted)

# Each KB of the page: its documents by status and its pages by type, each with the latest change,
# from index-only passes over idx_knowledges_kb_status_updated and idx_wiki_pages_kb_type_updated (no
# heap, no content), and why its model work is paused, if it is.
KBS_SQL = """
SELECT k.id, k.tenant_id, k.name, k.created_at,
       coalesce(d.documents, '{{}}'::jsonb) AS documents, d.last_document_at,
       coalesce(p.pages, '{{}}'::jsonb) AS pages, p.last_page_at,
       e.kind AS paused, e.created_at AS paused_since
FROM (SELECT id, tenant_id, name, created_at FROM knowledge_bases
      WHERE deleted_at IS NULL{where} ORDER BY tenant_id, name LIMIT %(limit)s) k
CROSS JOIN LATERAL (
  SELECT jsonb_object_agg(status, n) AS documents, max(last) AS last_document_at FROM (
    SELECT status, count(*) AS n, max(updated_at) AS last FROM knowledges
    WHERE knowledge_base_id = k.id AND status <> 'deleted' GROUP BY status) s) d
CROSS JOIN LATERAL (
  SELECT jsonb_object_agg(page_type, n) AS pages, max(last) AS last_page_at FROM (
    SELECT page_type, count(*) AS n, max(updated_at) AS last FROM wiki_pages
    WHERE knowledge_base_id = k.id AND deleted_at IS NULL GROUP BY page_type) s) p
LEFT JOIN wiki_llm_config_errors e ON e.knowledge_base_id = k.id
ORDER BY k.tenant_id, k.name
"""

# One page of a KB's documents in (source_uri, id) order after the cursor, from
# idx_knowledges_kb_listed (idx_knowledges_kb_status_listed with a status), and for each the live
# pages citing it: one probe of the source_refs jsonb_path_ops GIN index per listed document, fenced
# (OFFSET 0) from the KB's filter as repos.pages.SLUGS_BY_SOURCE_SQL is, for the same reason.
# ``status <> 'deleted'`` is spelled out also with a status: it is the indexes' predicate.
DOCUMENTS_SQL = """
WITH listed AS MATERIALIZED (
  SELECT id, source_uri, title, status, updated_at FROM knowledges
  WHERE knowledge_base_id = %(kb)s AND status <> 'deleted'{where}
  ORDER BY source_uri, id LIMIT %(limit)s)
SELECT l.id, l.source_uri, l.title, l.status, l.updated_at, c.pages
FROM listed l CROSS JOIN LATERAL (
  SELECT count(*) AS pages FROM (
    SELECT knowledge_base_id, deleted_at FROM wiki_pages
    WHERE source_refs @> jsonb_build_array(jsonb_build_object('knowledge_id', l.id)) OFFSET 0) p
  WHERE p.knowledge_base_id = %(kb)s AND p.deleted_at IS NULL) c
ORDER BY l.source_uri, l.id
"""

# The GIN probes' estimate (a thousandth of the table per document) makes the planner cost these
# statements past jit_above_cost, and compiling them took 50-70 ms of a 20 ms query.
_NO_JIT = "SET LOCAL jit = off"


class KbListing(BaseModel):
    """One live KB as ``kbwiki kbs`` shows it.

    ``documents``: live documents per status (``deleted`` ones are not counted); ``pages``: live
    pages per page type; ``last_activity``: the latest change of a document or a page, else when
    the KB was made; ``paused``: the kind of the pause of its model work (``config``, ``credit``,
    ``budget``; ``repos.llm_errors``) or None, ``paused_since`` when it began."""

    id: str
    tenant_id: int
    name: str
    documents: dict[str, int]
    pages: dict[str, int]
    last_activity: datetime
    paused: str | None
    paused_since: datetime | None


class DocumentListing(BaseModel):
    """One document as ``kbwiki documents`` shows it: ``pages`` is the number of live pages
    citing it (its summary page included); ``updated_at`` its last change of content or status."""

    id: str
    source_uri: str
    title: str
    status: str
    pages: int
    updated_at: datetime


class ListingRepository:
    """Pages of what exists: KBs with their counts, a KB's documents with the pages citing them."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def knowledge_bases(
        self, *, tenant_id: int | None = None, after: tuple[int, str] | None = None, limit: int = 50
    ) -> list[KbListing]:
        """Up to ``limit`` (clamped to 1..``MAX_LIST_PAGE`` + 1) live KBs in (tenant, name) order,
        those of ``tenant_id`` only unless it is None, after the cursor ``after`` = (tenant id, name)
        of the previous page's last row.

        One statement. Its cost per KB is two index-only passes (documents by status, pages by
        type): no heap, no content, about 40 index pages for 40,000 documents (docs/decisions.md,
        "List commands").
        """
        query, params = kbs_query(tenant_id=tenant_id, after=after, limit=limit)
        with self.pool.connection() as conn:
            conn.execute(_NO_JIT)
            rows = conn.execute(query, params).fetchall()
        return [
            KbListing(
                id=r["id"],
                tenant_id=r["tenant_id"],
                name=r["name"],
                documents=r["documents"],
                pages=r["pages"],
                last_activity=max(t for t in (r["created_at"], r["last_document_at"], r["last_page_at"]) if t),
                paused=r["paused"],
                paused_since=r["paused_since"],
            )
            for r in rows
        ]

    def documents(
        self, kb_id: str, *, status: str | None = None, after: tuple[str, str] | None = None, limit: int = 50
    ) -> list[DocumentListing]:
        """Up to ``limit`` (clamped to 1..``MAX_LIST_PAGE`` + 1) documents of the KB in (source_uri,
        id) order, of ``status`` only unless it is None, after the cursor ``after`` = (source_uri,
        id) of the previous page's last row; each with the number of live pages citing it.

        One statement: a range of one index, and one GIN probe per listed document (never a walk
        of the KB). Raises ``BadInput`` for a status not in ``LISTED_STATUSES``.
        """
        query, params = documents_query(kb_id, status=status, after=after, limit=limit)
        with self.pool.connection() as conn:
            conn.execute(_NO_JIT)
            rows = conn.execute(query, params).fetchall()
        return [DocumentListing.model_validate(r) for r in rows]


def kbs_query(*, tenant_id: int | None, after: tuple[int, str] | None, limit: int) -> tuple[sql.SQL, dict]:
    """The statement and parameters of :meth:`ListingRepository.knowledge_bases`."""
    conditions, params = [], {"limit": _clamp(limit)}
    if tenant_id is not None:
        conditions.append("tenant_id = %(tenant)s")
        params["tenant"] = int(tenant_id)
    if after is not None:
        conditions.append("(tenant_id, name) > (%(after_tenant)s, %(after_name)s)")
        params["after_tenant"], params["after_name"] = int(after[0]), str(after[1])
    # only the fixed conditions above are formatted into the statement; values are parameters
    return sql.SQL(KBS_SQL.format(where="".join(f" AND {c}" for c in conditions))), params


def documents_query(
    kb_id: str, *, status: str | None, after: tuple[str, str] | None, limit: int
) -> tuple[sql.SQL, dict]:
    """The statement and parameters of :meth:`ListingRepository.documents`. Raises ``BadInput``
    for a status not in ``LISTED_STATUSES``."""
    if status is not None and status not in LISTED_STATUSES:
        raise BadInput(f"unknown document status {status!r}: one of {', '.join(LISTED_STATUSES)}")
    conditions, params = [], {"kb": kb_id, "limit": _clamp(limit)}
    if status is not None:
        conditions.append("status = %(status)s")
        params["status"] = status
    if after is not None:
        conditions.append("(source_uri, id) > (%(after_uri)s, %(after_id)s)")
        params["after_uri"], params["after_id"] = str(after[0]), str(after[1])
    return sql.SQL(DOCUMENTS_SQL.format(where="".join(f" AND {c}" for c in conditions))), params


def _clamp(limit: int) -> int:
    return min(max(int(limit), 1), MAX_LIST_PAGE + 1)
