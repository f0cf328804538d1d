"""The map-stage results (``wiki_extractions``): also the cache for unchanged documents."""

from __future__ import annotations

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from repos.db import borrow
from wiki.models import Extraction


class ExtractionRepository:
    """Validated extractions keyed by (KB, knowledge id, content hash, extractor name)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def get(self, kb_id: str, knowledge_id: str, content_hash: str, extractor: str) -> Extraction | None:
        """The cached extraction, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT result FROM wiki_extractions WHERE knowledge_base_id = %s AND knowledge_id = %s"
                " AND content_hash = %s AND extractor = %s",
                (kb_id, knowledge_id, content_hash, extractor),
            ).fetchone()
        return Extraction.model_validate(row["result"]) if row else None

    def put(self, kb_id: str, knowledge_id: str, content_hash: str, extractor: str,
            extraction: Extraction, conn: Connection | None = None) -> None:
        """Store an extraction (idempotent: a second put for the same key keeps the first)."""
        with borrow(self.pool, conn) as c:
            c.execute(
                "INSERT INTO wiki_extractions (knowledge_base_id, knowledge_id, content_hash, extractor, result)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (kb_id, knowledge_id, content_hash, extractor, Jsonb(extraction.model_dump(mode="json"))),
            )

    def delete_other_versions(self, kb_id: str, knowledge_id: str, keep_hash: str,
                              conn: Connection | None = None) -> int:
        """Drop cached extractions of older contents of a document; returns rows deleted."""
        with borrow(self.pool, conn) as c:
            return c.execute(
                "DELETE FROM wiki_extractions WHERE knowledge_base_id = %s AND knowledge_id = %s AND content_hash <> %s",
                (kb_id, knowledge_id, keep_hash),
            ).rowcount
