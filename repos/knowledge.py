"""Knowledge bases and their documents (``knowledge_bases``, ``knowledges``)."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Sequence

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from repos.db import borrow, keyset_rows
from wiki.errors import BadInput, StoreConflict, UnknownKnowledgeBase
from wiki.models import DocStatus, Document, KnowledgeBase, valid_kb_name


def live_document_ids(conn: Connection, kb_id: str, knowledge_ids: Iterable[str]) -> set[str]:
    """Which of ``knowledge_ids`` are live documents of the KB (not missing, ``deleted_at`` unset,
    status not ``deleted``: the others are what lint calls stale sources). One primary-key lookup."""
    ids = sorted(set(knowledge_ids))
    if not ids:
        return set()
    rows = conn.execute(
        "SELECT id FROM knowledges WHERE knowledge_base_id = %s AND id = ANY(%s)"
        " AND deleted_at IS NULL AND status <> 'deleted'",
        (kb_id, ids),
    ).fetchall()
    return {r["id"] for r in rows}


def content_hash(content: str) -> str:
    """sha256 hex of the UTF-8 content: the extraction cache key and the change detector."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


#: KB names read on each side of a mistyped one (``names_near``): 1,000 in all.
NAMES_NEAR_EACH_SIDE = 500
#: ``count_live`` counts this far at most.
COUNT_LIVE_CAP = 10_000


class KnowledgeBaseRepository:
    """Reads and writes ``knowledge_bases`` rows."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def get_or_create(self, tenant_id: int, name: str) -> KnowledgeBase:
        """The live KB named ``name`` (stripped) of the tenant, created if missing.

        Raises ``pydantic.ValidationError`` (a ValueError) on a name ``wiki.models.valid_kb_name``
        refuses: empty, over 255 characters, or with a newline or another control character.
        """
        name = valid_kb_name(name)
        with self.pool.connection() as conn:
            row = conn.execute(
                "INSERT INTO knowledge_bases (id, tenant_id, name) VALUES (%s, %s, %s)"
                " ON CONFLICT (tenant_id, name) WHERE deleted_at IS NULL DO NOTHING RETURNING *",
                (str(uuid.uuid4()), tenant_id, name),
            ).fetchone()
        return KnowledgeBase.model_validate(row) if row else self.get_by_name(tenant_id, name)

    def get_by_name(self, tenant_id: int, name: str) -> KnowledgeBase | None:
        """The live KB named ``name`` of the tenant, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT * FROM knowledge_bases WHERE tenant_id = %s AND name = %s AND deleted_at IS NULL",
                (tenant_id, name),
            ).fetchone()
        return KnowledgeBase.model_validate(row) if row else None

    def names_near(self, tenant_id: int, name: str, each_side: int = NAMES_NEAR_EACH_SIDE) -> list[str]:
        """Names of the tenant's live KBs next to ``name`` in case-insensitive order: up to
        ``each_side`` from ``lower(name)`` on and as many before it, in one statement through
        ``idx_knowledge_bases_tenant_lower_name`` (migration 0150): what a mistyped name is compared
        with, bounded whatever the number of KBs (a name differing in case, or typed with its end
        missing or wrong, sorts next to it)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "(SELECT name FROM knowledge_bases WHERE tenant_id = %(t)s AND deleted_at IS NULL"
                "  AND lower(name) >= lower(%(n)s) ORDER BY lower(name) LIMIT %(k)s)"
                " UNION ALL"
                " (SELECT name FROM knowledge_bases WHERE tenant_id = %(t)s AND deleted_at IS NULL"
                "  AND lower(name) < lower(%(n)s) ORDER BY lower(name) DESC LIMIT %(k)s)",
                {"t": tenant_id, "n": name, "k": max(1, int(each_side))},
            ).fetchall()
        return [r["name"] for r in rows]

    def count_live(self, tenant_id: int, cap: int = COUNT_LIVE_CAP) -> int:
        """How many live KBs the tenant has, counting no further than ``cap`` (a tenant with more
        gets ``cap``): an index-only count of ``uq_knowledge_bases_tenant_name``'s entries."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) AS n FROM (SELECT 1 FROM knowledge_bases WHERE tenant_id = %s"
                " AND deleted_at IS NULL LIMIT %s) s",
                (tenant_id, max(0, int(cap))),
            ).fetchone()
        return row["n"]

    def get_active(self, tenant_id: int, kb_id: str) -> KnowledgeBase:
        """The live KB ``kb_id`` of the tenant. Raises UnknownKnowledgeBase otherwise."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT * FROM knowledge_bases WHERE id = %s AND tenant_id = %s AND deleted_at IS NULL",
                (kb_id, tenant_id),
            ).fetchone()
        if row is None:
            raise UnknownKnowledgeBase(f"knowledge base {kb_id!r} of tenant {tenant_id} is unknown or deleted")
        return KnowledgeBase.model_validate(row)

    def get(self, kb_id: str) -> KnowledgeBase | None:
        """The KB ``kb_id`` whatever its state (deleted ones included, any tenant), or None."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT * FROM knowledge_bases WHERE id = %s", (kb_id,)).fetchone()
        return KnowledgeBase.model_validate(row) if row else None

    def hold_active(self, kb_id: str, conn: Connection) -> bool:
        """Whether the KB is live, holding its row FOR SHARE until ``conn``'s transaction ends.

        A concurrent ``mark_deleted`` waits for the caller's transaction, so what the caller writes
        while holding it is either seen (and removed) by the KB deletion or refused here.
        """
        row = conn.execute(
            "SELECT 1 FROM knowledge_bases WHERE id = %s AND deleted_at IS NULL FOR SHARE", (kb_id,)
        ).fetchone()
        return row is not None

    def mark_deleted(self, tenant_id: int, kb_id: str, conn: Connection | None = None) -> KnowledgeBase | None:
        """Soft-delete the live KB ``kb_id`` of the tenant; returns it, or None when it was not live."""
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "UPDATE knowledge_bases SET deleted_at = now(), updated_at = now()"
                " WHERE id = %s AND tenant_id = %s AND deleted_at IS NULL RETURNING *",
                (kb_id, tenant_id),
            ).fetchone()
        return KnowledgeBase.model_validate(row) if row else None

    def claim_source_root(self, kb_id: str, folder: str, replace: bool = False) -> str | None:
        """The folder the KB's source URIs are relative to after making ``folder`` (a real path)
        that folder when the KB has none yet (or always, with ``replace``); None when the KB does
        not exist. One statement: of concurrent first ingests, the first to commit sets it and
        the others get its folder back."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "UPDATE knowledge_bases SET source_root = CASE WHEN %s THEN %s ELSE coalesce(source_root, %s) END"
                " WHERE id = %s RETURNING source_root",
                (replace, folder, folder, kb_id),
            ).fetchone()
        return row["source_root"] if row else None

    def set_wiki_config(self, kb_id: str, config: dict) -> None:
        """Store per-KB tunables (validate with ``wiki.models.WikiConfig`` first)."""
        self.update_wiki_config(kb_id, lambda _: config)

    def update_wiki_config(self, kb_id: str, change: Callable[[dict], dict]) -> dict | None:
        """Store ``change(current)`` as the live KB's ``wiki_config``, the row locked meanwhile so
        two concurrent changes both land; returns what was stored, None when no live KB has the id.
        Whatever ``change`` raises propagates and nothing is written."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT wiki_config FROM knowledge_bases WHERE id = %s AND deleted_at IS NULL FOR UPDATE", (kb_id,)
            ).fetchone()
            if row is None:
                return None
            config = change(row["wiki_config"] or {})
            conn.execute("UPDATE knowledge_bases SET wiki_config = %s WHERE id = %s", (Jsonb(config), kb_id))
        return config


#: The live document of a (KB, source_uri), locked until the transaction ends.
_SELECT_LIVE_DOC_FOR_UPDATE = (
    "SELECT * FROM knowledges WHERE knowledge_base_id = %s AND source_uri = %s AND deleted_at IS NULL FOR UPDATE"
)

#: Insert a new document unless a live one holds its (KB, source_uri): the conflict target is the
#: partial unique index ``uq_knowledges_kb_source`` of migrations/0002_knowledge.sql (same columns,
#: same WHERE). A row without source_uri is outside that index and always inserted. Returns no
#: row on a conflict (after waiting for the conflicting session to commit or roll back).
_INSERT_DOC_UNLESS_LIVE = (
    "INSERT INTO knowledges (id, tenant_id, knowledge_base_id, title, source_uri, content, content_hash)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (knowledge_base_id, source_uri) WHERE deleted_at IS NULL AND source_uri <> '' DO NOTHING"
    " RETURNING *"
)

#: Rounds of read-then-insert before giving up; a round is lost only when another session inserts
#: the live row after our read and it is deleted again before our next read.
_UPSERT_ATTEMPTS = 5
#: A live document in one of these is stored (and written) again even when its content is unchanged.
REDO_STATUSES = (DocStatus.failed, DocStatus.deleting)


class DocumentRepository:
    """Reads and writes documents (``knowledges`` rows: the table keeps its first name)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def upsert(
        self, kb: KnowledgeBase, *, title: str, source_uri: str, content: str, conn: Connection | None = None
    ) -> tuple[Document, bool]:
        """Store a document keyed by (KB, source_uri); returns (document, changed).

        ``changed`` is False when a live document with the same source_uri already has the same
        content hash and title (re-ingesting it needs no work). Content must already be clean text.

        Safe when several sessions submit the same new source_uri at once: the insert yields to
        the live row another session committed meanwhile (``ON CONFLICT DO NOTHING`` on
        ``uq_knowledges_kb_source``, which waits for that session to finish), and that row is then
        locked, compared and updated like any existing one. Of N identical submissions exactly one
        reports changed; with different contents the last writer's is stored. The live row stays
        locked FOR UPDATE until the caller's transaction ends.
        """
        digest = content_hash(content)
        with borrow(self.pool, conn) as c:
            for _ in range(_UPSERT_ATTEMPTS):
                row = c.execute(_SELECT_LIVE_DOC_FOR_UPDATE, (kb.id, source_uri)).fetchone()
                if row is not None:
                    if row["content_hash"] == digest and row["title"] == title and row["status"] not in REDO_STATUSES:
                        return Document.model_validate(row), False
                    row = c.execute(
                        "UPDATE knowledges SET title = %s, content = %s, content_hash = %s, status = 'pending',"
                        " error = '', updated_at = now() WHERE id = %s RETURNING *",
                        (title, content, digest, row["id"]),
                    ).fetchone()
                    return Document.model_validate(row), True
                row = c.execute(
                    _INSERT_DOC_UNLESS_LIVE,
                    (str(uuid.uuid4()), kb.tenant_id, kb.id, title, source_uri, content, digest),
                ).fetchone()
                if row is not None:
                    return Document.model_validate(row), True
                # Another session's live row for this source_uri committed between our read and our
                # insert: read it again (a fresh snapshot sees it unless it was deleted meanwhile).
        raise StoreConflict(
            f"could not store document {source_uri!r} of KB {kb.id}: its live row kept changing under"
            f" {_UPSERT_ATTEMPTS} attempts"
        )

    def live_versions(self, kb_id: str, source_uris: list[str]) -> dict[str, tuple[str, str, str, str]]:
        """{source_uri: (knowledge id, title, content hash, status)} of the KB's live documents among
        ``source_uris``, in one statement and without reading their content or locking them."""
        if not source_uris:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, source_uri, title, content_hash, status FROM knowledges"
                " WHERE knowledge_base_id = %s AND source_uri = ANY(%s) AND deleted_at IS NULL",
                (kb_id, source_uris),
            ).fetchall()
        return {r["source_uri"]: (r["id"], r["title"], r["content_hash"], r["status"]) for r in rows}

    def get(self, knowledge_id: str) -> Document | None:
        """The document, deleted ones included, or None."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT * FROM knowledges WHERE id = %s", (knowledge_id,)).fetchone()
        return Document.model_validate(row) if row else None

    def get_many(self, ids: list[str]) -> dict[str, Document]:
        """Documents by id (missing ids are absent from the result)."""
        if not ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute("SELECT * FROM knowledges WHERE id = ANY(%s)", (ids,)).fetchall()
        return {r["id"]: Document.model_validate(r) for r in rows}

    def source_uris(self, tenant_id: int, ids: list[str]) -> dict[str, str]:
        """{knowledge id: source_uri} of the tenant's documents among ``ids`` (deleted ones
        included, ids of another tenant or of no document left out), in one statement through
        the primary key."""
        if not ids:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, source_uri FROM knowledges WHERE id = ANY(%s) AND tenant_id = %s",
                (sorted(set(ids)), tenant_id),
            ).fetchall()
        return {r["id"]: r["source_uri"] for r in rows}

    def find(self, kb_id: str, ref: str, deleted_too: bool = False) -> Document | None:
        """The KB's document named by ``ref``: its knowledge id, else the source_uri of a live one
        (with ``deleted_too``, of the last one deleted when none is live); or None."""
        live = "" if deleted_too else " AND deleted_at IS NULL"
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT * FROM knowledges WHERE knowledge_base_id = %s AND id = %s", (kb_id, ref)
            ).fetchone()
            if row is None and ref:
                row = conn.execute(
                    f"SELECT * FROM knowledges WHERE knowledge_base_id = %s AND source_uri = %s{live}"
                    " ORDER BY deleted_at IS NULL DESC, deleted_at DESC LIMIT 1",
                    (kb_id, ref),
                ).fetchone()
        return Document.model_validate(row) if row else None

    def mark_deleting(self, kb_id: str, knowledge_id: str, conn: Connection | None = None) -> Document | None:
        """Start a delete: the KB's document goes to status ``deleting``; None when it is unknown or
        already deleting/deleted.

        ``deleted_at`` is set now, not when the retract is applied: the document stops being the
        live holder of its source_uri at once, so a later submit of that source makes a new
        document (a new knowledge id) and the deleted one can never come back.
        """
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "UPDATE knowledges SET status = 'deleting', deleted_at = coalesce(deleted_at, now()),"
                " updated_at = now()"
                " WHERE id = %s AND knowledge_base_id = %s AND status NOT IN ('deleting', 'deleted') RETURNING *",
                (knowledge_id, kb_id),
            ).fetchone()
        return Document.model_validate(row) if row else None

    def find_many(self, kb_id: str, refs: Sequence[str]) -> dict[str, Document]:
        """``find(kb_id, ref, deleted_too=True)`` for every ref at once, in two statements:
        {ref: document} for the refs that name a document of the KB (a knowledge id, else a
        source_uri: the live document, else the last one deleted); unknown refs are absent."""
        refs = sorted({r for r in refs if r})
        if not refs:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM knowledges WHERE knowledge_base_id = %s AND id = ANY(%s)", (kb_id, refs)
            ).fetchall()
            found = {r["id"]: Document.model_validate(r) for r in rows}
            rest = [r for r in refs if r not in found]
            if rest:
                rows = conn.execute(
                    "SELECT DISTINCT ON (source_uri) * FROM knowledges"
                    " WHERE knowledge_base_id = %s AND source_uri = ANY(%s)"
                    " ORDER BY source_uri, deleted_at IS NULL DESC, deleted_at DESC",
                    (kb_id, rest),
                ).fetchall()
                found.update({r["source_uri"]: Document.model_validate(r) for r in rows})
        return found

    def mark_deleting_many(self, kb_id: str, ids: Sequence[str], conn: Connection | None = None) -> list[Document]:
        """``mark_deleting`` for many documents in one statement: those of the KB that were neither
        deleting nor deleted go to ``deleting`` (``deleted_at`` set now) and are returned, in id order;
        the others are left as they are."""
        if not ids:
            return []
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                # rows locked in id order first: two deletes of overlapping documents wait, not deadlock
                "UPDATE knowledges k SET status = 'deleting', deleted_at = coalesce(k.deleted_at, now()),"
                " updated_at = now()"
                " FROM (SELECT id FROM knowledges WHERE id = ANY(%s) AND knowledge_base_id = %s"
                "       ORDER BY id FOR UPDATE) AS locked"
                " WHERE k.id = locked.id AND k.status NOT IN ('deleting', 'deleted') RETURNING k.*",
                (sorted(set(ids)), kb_id),
            ).fetchall()
        return sorted((Document.model_validate(r) for r in rows), key=lambda d: d.id)

    def mark_kb_deleted(self, kb_id: str, conn: Connection | None = None) -> int:
        """Every not yet deleted document of the KB becomes ``deleted`` (KB deletion); returns rows changed."""
        with borrow(self.pool, conn) as c:
            return c.execute(
                "UPDATE knowledges SET status = 'deleted', deleted_at = coalesce(deleted_at, now()), updated_at = now()"
                " WHERE knowledge_base_id = %s AND status <> 'deleted'",
                (kb_id,),
            ).rowcount

    def set_status(self, ids: list[str], status: str, error: str = "", conn: Connection | None = None) -> None:
        """Set the status (and error text, ≤ 8 KiB) of documents, never resurrecting deleted ones."""
        if not ids:
            return
        with borrow(self.pool, conn) as c:
            c.execute(
                "UPDATE knowledges SET status = %s, error = %s, updated_at = now()"
                " WHERE id = ANY(%s) AND status NOT IN ('deleting', 'deleted')",
                (status, error[:8192], ids),
            )

    def mark_deleted(self, ids: list[str], conn: Connection | None = None) -> None:
        """Finish a delete: documents in status ``deleting`` become ``deleted`` (retract applied)."""
        if not ids:
            return
        with borrow(self.pool, conn) as c:
            c.execute(
                "UPDATE knowledges SET status = 'deleted', deleted_at = coalesce(deleted_at, now()), updated_at = now()"
                " WHERE id = ANY(%s) AND status = 'deleting'",
                (ids,),
            )

    def iter_contents(self, kb_id: str, window: int = 200):
        """Yield (knowledge id, content) of the KB's live documents that are done, in id order,
        ``window`` rows per query (a keyset cursor: memory is one window whatever the KB)."""
        query = (
            "SELECT id, content FROM knowledges WHERE knowledge_base_id = %s AND deleted_at IS NULL"
            " AND status = 'done' AND id > %s ORDER BY id LIMIT %s"
        )
        for row in keyset_rows(self.pool, query, (kb_id,), "", window):
            yield row["id"], row["content"]

    def count_by_status(self, kb_id: str) -> dict[str, int]:
        """Live documents of the KB per status."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT status, count(*) AS n FROM knowledges WHERE knowledge_base_id = %s GROUP BY status",
                (kb_id,),
            ).fetchall()
        return {r["status"]: r["n"] for r in rows}

    def sample_not_written(self, kb_id: str, limit: int = 10) -> list[dict]:
        """Up to ``limit`` live documents of the KB in status ``skipped`` or ``failed``, failed first,
        then by source_uri: ``[{"status", "source_uri", "title", "reason"}]`` with ``reason`` the
        stored ``error`` cut to 500 characters.

        Reads only these columns (never ``content``) and returns at most ``limit`` rows: the KB's
        rows come through a ``knowledge_base_id`` index (or a scan when the KB is most of the
        table) and a top-N sort keeps only ``limit`` of them in memory (26 kB for 50,000 rows).
        Raises ValueError when ``limit`` < 0.
        """
        if limit < 0:
            raise BadInput(f"limit must be >= 0, got {limit}")
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT status, source_uri, title, left(error, 500) AS reason FROM knowledges"
                " WHERE knowledge_base_id = %s AND status IN ('failed', 'skipped') AND deleted_at IS NULL"
                " ORDER BY status, source_uri, id LIMIT %s",
                (kb_id, limit),
            ).fetchall()
        return [dict(r) for r in rows]
