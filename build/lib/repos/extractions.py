"""The map-stage results (``wiki_extractions``): also the cache for unchanged documents; and the
merges the model decided at map time (``wiki_merge_decisions``), cached the same way."""

from __future__ import annotations

from collections.abc import Iterable

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
        """The cached extraction, or None (:meth:`get_many` for one document)."""
        return self.get_many(kb_id, {knowledge_id: (content_hash, extractor)}).get(knowledge_id)

    def first_of(
        self, kb_id: str, knowledge_id: str, content_hash: str, extractors: list[str]
    ) -> tuple[Extraction, str] | None:
        """The cached extraction of the first name in ``extractors`` that has one, with that name,
        or None: one statement (primary-key probes) whatever the number of names."""
        if not extractors:
            return None
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT extractor, result FROM wiki_extractions WHERE knowledge_base_id = %s AND knowledge_id = %s"
                " AND content_hash = %s AND extractor = ANY(%s)",
                (kb_id, knowledge_id, content_hash, extractors),
            ).fetchall()
        found = {r["extractor"]: r["result"] for r in rows}
        name = next((n for n in extractors if n in found), None)
        return None if name is None else (Extraction.model_validate(found[name]), name)

    def get_many(self, kb_id: str, wanted: dict[str, tuple[str, str]]) -> dict[str, Extraction]:
        """Cached extractions by knowledge id for {knowledge id: (content hash, extractor)}, in one
        statement (primary-key probes); documents without one are absent from the result."""
        rows = self._probe(kb_id, wanted, "e.knowledge_id, e.result")
        return {r["knowledge_id"]: Extraction.model_validate(r["result"]) for r in rows}

    def held(self, kb_id: str, wanted: dict[str, tuple[str, str]]) -> set[str]:
        """The knowledge ids of {knowledge id: (content hash, extractor)} whose extraction is
        cached: :meth:`get_many` without reading the results."""
        return {r["knowledge_id"] for r in self._probe(kb_id, wanted, "e.knowledge_id")}

    def _probe(self, kb_id: str, wanted: dict[str, tuple[str, str]], columns: str) -> list[dict]:
        if not wanted:
            return []
        ids = list(wanted)
        with self.pool.connection() as conn:
            return conn.execute(
                f"SELECT {columns} FROM wiki_extractions e"
                " JOIN unnest(%s::text[], %s::text[], %s::text[]) AS w(knowledge_id, content_hash, extractor)"
                " USING (knowledge_id, content_hash, extractor) WHERE e.knowledge_base_id = %s",
                (ids, [wanted[k][0] for k in ids], [wanted[k][1] for k in ids], kb_id),
            ).fetchall()

    def put(
        self,
        kb_id: str,
        knowledge_id: str,
        content_hash: str,
        extractor: str,
        extraction: Extraction,
        conn: Connection | None = None,
    ) -> None:
        """Store an extraction (idempotent: a second put for the same key keeps the first)."""
        with borrow(self.pool, conn) as c:
            c.execute(
                "INSERT INTO wiki_extractions (knowledge_base_id, knowledge_id, content_hash, extractor, result)"
                " VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (kb_id, knowledge_id, content_hash, extractor, Jsonb(extraction.model_dump(mode="json"))),
            )

    def delete_other_versions(self, kb_id: str, keep: dict[str, str], conn: Connection | None = None) -> int:
        """Drop cached extractions of other contents of documents: for {knowledge id: content hash
        to keep} (``""`` keeps none), in one statement; returns rows deleted."""
        if not keep:
            return 0
        with borrow(self.pool, conn) as c:
            return c.execute(
                "DELETE FROM wiki_extractions e USING unnest(%s::text[], %s::text[]) AS k(knowledge_id, keep_hash)"
                " WHERE e.knowledge_base_id = %s AND e.knowledge_id = k.knowledge_id AND e.content_hash <> k.keep_hash",
                (list(keep), list(keep.values()), kb_id),
            ).rowcount

    def merge_decisions(
        self, kb_id: str, decider: str, keys: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], str | None]:
        """Cached merge decisions for (item name key, candidate set) pairs under ``decider``
        (``wiki.extract.llm.merges.cache_name``): the chosen slug, or None for "new"; pairs never
        decided are absent. One statement (primary-key probes)."""
        keys = sorted(set(keys))
        if not keys:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT d.name_key, d.candidate_set, d.merge_into FROM wiki_merge_decisions d"
                " JOIN unnest(%s::text[], %s::text[]) AS w(name_key, candidate_set) USING (name_key, candidate_set)"
                " WHERE d.knowledge_base_id = %s AND d.decider = %s",
                ([k for k, _ in keys], [c for _, c in keys], kb_id, decider),
            ).fetchall()
        return {(r["name_key"], r["candidate_set"]): r["merge_into"] for r in rows}

    def put_merge_decisions(
        self, kb_id: str, decider: str, decisions: dict[tuple[str, str], str | None], conn: Connection | None = None
    ) -> None:
        """Store merge decisions {(name key, candidate set): slug or None}; a pair decided already
        keeps its first decision (two workers asking at once store one answer)."""
        if not decisions:
            return
        keys = list(decisions)
        with borrow(self.pool, conn) as c:
            c.execute(
                "INSERT INTO wiki_merge_decisions (knowledge_base_id, decider, name_key, candidate_set, merge_into)"
                " SELECT %s, %s, k, s, m FROM unnest(%s::text[], %s::text[], %s::text[]) AS u(k, s, m)"
                " ON CONFLICT DO NOTHING",
                (kb_id, decider, [k for k, _ in keys], [s for _, s in keys], [decisions[k] for k in keys]),
            )
