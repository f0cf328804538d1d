"""The mention index (``wiki_mentions``) and its per-key counters and names (migration 0110).

One row per (KB, document, name key) a document names (``wiki.coverage.MentionRow``), written by
a reduce batch in its transaction together with the counters of every key it changed, so whether a
key has a page is one counter row, and a page's lead and quotes are a walk of the key's best rows
(``idx_wiki_mentions_best``) with a limit. Every read is scoped to one KB and bounded by the keys or
documents asked about, never by the KB.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

from repos.db import borrow
from wiki.coverage import KeyStats, MentionRow
from wiki.errors import BadInput

_ROW_COLUMNS = (
    "key, knowledge_id, name, kind, earned, named, titled, sentences, subject, rank, score, lead, quotes, aliases,"
    " parent, summary_slug"
)
# The columns are named as MentionRow's fields: a read builds one from them, a write stores them.
_ROW_FIELDS = tuple(c.strip() for c in _ROW_COLUMNS.split(","))
_STAT_COLUMNS = ("docs", "earned", "named", "discussed", "defined", "described", "entity", "titled", "subjects")

# The best rows of each key with something to quote, documents of the batch left out: one probe of
# the best-rows index per key, LIMIT rows each, the document's title joined.
BEST_ROWS_SQL = (
    "SELECT q.key AS query, m.*, k.title AS doc_title"
    " FROM unnest(string_to_array(%(keys)s, E'\\n')) AS q(key)"
    " CROSS JOIN LATERAL ("
    f"  SELECT {_ROW_COLUMNS} FROM wiki_mentions"
    "   WHERE knowledge_base_id = %(kb)s AND key = q.key AND NOT (knowledge_id = ANY(%(exclude)s))"
    "   AND (lead <> '' OR quotes <> '[]'::jsonb)"
    "   ORDER BY score DESC, summary_slug, knowledge_id LIMIT %(limit)s) m"
    " JOIN knowledges k ON k.id = m.knowledge_id"
)
INSERT_ROWS_SQL = f"""
INSERT INTO wiki_mentions (knowledge_base_id, {_ROW_COLUMNS})
SELECT %(kb)s, {_ROW_COLUMNS} FROM jsonb_to_recordset(%(rows)s) AS r(
    key text, knowledge_id text, name text, kind text, earned boolean, named boolean, titled boolean,
    sentences smallint, subject smallint, rank smallint, score int, lead text, quotes jsonb, aliases jsonb,
    parent text, summary_slug text)
"""
UPSERT_STATS_SQL = f"""
INSERT INTO wiki_mention_keys (knowledge_base_id, key, {", ".join(_STAT_COLUMNS)})
SELECT %(kb)s, key, {", ".join(_STAT_COLUMNS)} FROM jsonb_to_recordset(%(rows)s) AS r(
    key text, {", ".join(c + " int" for c in _STAT_COLUMNS)})
ON CONFLICT (knowledge_base_id, key) DO UPDATE SET
    {", ".join(f"{c} = wiki_mention_keys.{c} + EXCLUDED.{c}" for c in _STAT_COLUMNS)}
"""
UPSERT_NAMES_SQL = """
INSERT INTO wiki_mention_names (knowledge_base_id, key, name, alias, docs)
SELECT %(kb)s, key, name, alias, docs
FROM jsonb_to_recordset(%(rows)s) AS r(key text, name text, alias boolean, docs int)
ON CONFLICT (knowledge_base_id, key, alias, name) DO UPDATE SET docs = wiki_mention_names.docs + EXCLUDED.docs
"""


def _row(r: Mapping) -> MentionRow:
    return MentionRow(
        **{f: r[f] for f in _ROW_FIELDS if f not in ("quotes", "aliases")},
        quotes=tuple(r["quotes"]),
        aliases=tuple(r["aliases"]),
        doc_title=r.get("doc_title") or "",
    )


def _joined(values: Iterable[str]) -> str:
    """Values sent as one newline-joined text (psycopg dumps large arrays slowly); refuses a
    value holding a newline (keys and ids never do)."""
    values = sorted(set(values))
    if any("\n" in v for v in values):
        raise BadInput("a name key or id cannot hold a newline")
    return "\n".join(values)


class MentionRepository:
    """Reads and writes the mention index of a KB."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    # -- reads ---------------------------------------------------------------------------------
    def rows_of_docs(
        self, kb_id: str, knowledge_ids: Iterable[str], conn: Connection | None = None
    ) -> list[MentionRow]:
        """Every row of the documents ``knowledge_ids`` (the primary key's prefix: bounded by what
        those documents name), without their titles."""
        ids = sorted(set(knowledge_ids))
        if not ids:
            return []
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                f"SELECT {_ROW_COLUMNS} FROM wiki_mentions WHERE knowledge_base_id = %s AND knowledge_id = ANY(%s)"
                " ORDER BY knowledge_id, key",
                (kb_id, ids),
            ).fetchall()
        return [_row(r) for r in rows]

    def stats(self, kb_id: str, keys: Iterable[str]) -> dict[str, KeyStats]:
        """The stored counters of each key that has rows (a key with none is left out)."""
        keys = _joined(keys)
        if not keys:
            return {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT key, {', '.join(_STAT_COLUMNS)} FROM wiki_mention_keys"
                " WHERE knowledge_base_id = %s AND key = ANY(string_to_array(%s, E'\\n'))",
                (kb_id, keys),
            ).fetchall()
        return {r.pop("key"): KeyStats(**r) for r in rows}

    def names(self, kb_id: str, keys: Iterable[str]) -> dict[str, dict[tuple[str, bool], int]]:
        """Per key, {(name, is an alias): documents giving it} as stored."""
        keys = _joined(keys)
        if not keys:
            return {}
        out: dict[str, dict[tuple[str, bool], int]] = {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT key, name, alias, docs FROM wiki_mention_names"
                " WHERE knowledge_base_id = %s AND key = ANY(string_to_array(%s, E'\\n'))",
                (kb_id, keys),
            ).fetchall()
        for r in rows:
            out.setdefault(r["key"], {})[(r["name"], r["alias"])] = r["docs"]
        return out

    def keys_aliased(self, kb_id: str, aliases: Iterable[str]) -> dict[str, dict[str, int]]:
        """For each alias, {key: documents giving it as an alias of that key}: the pages a bare name
        stands for (idx_wiki_mention_names_alias; a few rows a name)."""
        names = _joined(aliases)
        if not names:
            return {}
        out: dict[str, dict[str, int]] = {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT name, key, docs FROM wiki_mention_names WHERE knowledge_base_id = %s AND alias"
                " AND name = ANY(string_to_array(%s, E'\\n')) AND docs > 0",
                (kb_id, names),
            ).fetchall()
        for r in rows:
            out.setdefault(r["name"], {})[r["key"]] = r["docs"]
        return out

    def best_rows(
        self, kb_id: str, keys: Iterable[str], exclude: Iterable[str] = (), limit: int = 8
    ) -> dict[str, list[MentionRow]]:
        """For each key, its ``limit`` best rows (``MentionRow.order``) with a lead or a quote, rows
        of the documents ``exclude`` left out, each with its document's title: one statement, one
        index walk of at most ``limit`` rows per key however many documents name it."""
        keys = _joined(keys)
        if not keys:
            return {}
        out: dict[str, list[MentionRow]] = {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                BEST_ROWS_SQL, {"kb": kb_id, "keys": keys, "exclude": sorted(set(exclude)), "limit": limit}
            ).fetchall()
        for r in rows:
            out.setdefault(r["query"], []).append(_row(r))
        for found in out.values():
            found.sort(key=MentionRow.order)
        return out

    def earned_keys(self, kb_id: str, knowledge_ids: Iterable[str]) -> dict[str, list[str]]:
        """For each document, the keys it makes pages of on its own (its items) that are no member
        of a class or module (their parent's page lists them), sorted."""
        ids = sorted(set(knowledge_ids))
        out: dict[str, list[str]] = {kid: [] for kid in ids}
        if not ids:
            return out
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT knowledge_id, key FROM wiki_mentions WHERE knowledge_base_id = %s AND knowledge_id = ANY(%s)"
                " AND earned AND parent = '' ORDER BY knowledge_id, key",
                (kb_id, ids),
            ).fetchall()
        for r in rows:
            out[r["knowledge_id"]].append(r["key"])
        return out

    def children(
        self, kb_id: str, parents: Iterable[str], exclude: Iterable[str] = (), limit: int = 200
    ) -> dict[str, list[str]]:
        """For each parent key, the keys whose rows name it as their class or module (members),
        rows of the documents ``exclude`` left out, sorted, at most ``limit`` each."""
        keys = _joined(parents)
        if not keys:
            return {}
        out: dict[str, list[str]] = {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT q.parent, c.key FROM unnest(string_to_array(%(keys)s, E'\\n')) AS q(parent)"
                " CROSS JOIN LATERAL (SELECT DISTINCT key FROM wiki_mentions"
                "  WHERE knowledge_base_id = %(kb)s AND parent = q.parent AND parent <> ''"  # the partial index's
                "  AND NOT (knowledge_id = ANY(%(exclude)s))"
                "  ORDER BY key LIMIT %(limit)s) c",
                {"kb": kb_id, "keys": keys, "limit": limit, "exclude": sorted(set(exclude))},
            ).fetchall()
        for r in rows:
            out.setdefault(r["parent"], []).append(r["key"])
        return out

    def relations(
        self, kb_id: str, keys: Iterable[str], exclude: Iterable[str] = ()
    ) -> tuple[dict[str, set[str]], dict[str, list[str]]]:
        """For each key, ({the keys its rows name as its class or module}, [the documents that make
        it a page on its own and name no class or module of it: those whose items a page quoting
        them lists as related], sorted), rows of the documents ``exclude`` left out: one walk of
        each key's rows on the best-rows index, bounded by the documents naming the keys."""
        keys = _joined(keys)
        if not keys:
            return {}, {}
        parents: dict[str, set[str]] = {}
        items_of: dict[str, list[str]] = {}
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT key, knowledge_id, parent, earned FROM wiki_mentions WHERE knowledge_base_id = %(kb)s"
                " AND key = ANY(string_to_array(%(keys)s, E'\\n')) AND (parent <> '' OR earned)"
                " AND NOT (knowledge_id = ANY(%(exclude)s)) ORDER BY key, knowledge_id",
                {"kb": kb_id, "keys": keys, "exclude": sorted(set(exclude))},
            ).fetchall()
        for r in rows:
            if r["parent"]:
                parents.setdefault(r["key"], set()).add(r["parent"])
            else:
                items_of.setdefault(r["key"], []).append(r["knowledge_id"])
        return parents, items_of

    def mentioned_in(self, kb_id: str, key: str, limit: int = 50, offset: int = 0) -> list[tuple[str, str, str]]:
        """(summary slug, document title, knowledge id) of the documents naming ``key``, best
        first (``MentionRow.order``), ``limit`` from ``offset``: a page of "Mentioned in"."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT m.summary_slug, k.title, m.knowledge_id FROM wiki_mentions m"
                " JOIN knowledges k ON k.id = m.knowledge_id"
                " WHERE m.knowledge_base_id = %s AND m.key = %s"
                " ORDER BY m.score DESC, m.summary_slug, m.knowledge_id LIMIT %s OFFSET %s",
                (kb_id, key, limit, offset),
            ).fetchall()
        return [(r["summary_slug"], r["title"], r["knowledge_id"]) for r in rows]

    def mentioned_in_many(
        self, kb_id: str, keys: Iterable[str], limit: int = 50
    ) -> dict[str, tuple[int, list[tuple[str, str, str]]]]:
        """For each key: (how many documents name it, the first ``limit`` of them as
        ``mentioned_in`` gives them). Two statements whatever the number of keys (the export
        writes a window of pages at a time)."""
        keys = sorted(set(keys))
        counts = self.doc_counts(kb_id, keys)
        out: dict[str, tuple[int, list[tuple[str, str, str]]]] = {key: (counts[key], []) for key in keys}
        if not any(counts.values()):
            return out
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT q.key AS query, m.summary_slug, k.title, m.knowledge_id"
                " FROM unnest(string_to_array(%(keys)s, E'\\n')) WITH ORDINALITY AS q(key, i)"
                " CROSS JOIN LATERAL (SELECT summary_slug, knowledge_id, score FROM wiki_mentions"
                "  WHERE knowledge_base_id = %(kb)s AND key = q.key"
                "  ORDER BY score DESC, summary_slug, knowledge_id LIMIT %(limit)s) m"
                " JOIN knowledges k ON k.id = m.knowledge_id"
                " ORDER BY q.i, m.score DESC, m.summary_slug, m.knowledge_id",
                {"kb": kb_id, "keys": _joined(k for k in keys if counts[k]), "limit": limit},
            ).fetchall()
        for r in rows:
            out[r["query"]][1].append((r["summary_slug"], r["title"], r["knowledge_id"]))
        return out

    def doc_counts(self, kb_id: str, keys: Iterable[str]) -> dict[str, int]:
        """How many documents name each key (0 for a key none names)."""
        keys = list(keys)
        found = self.stats(kb_id, keys)
        return {key: found[key].docs if key in found else 0 for key in keys}

    def most_named(self, kb_id: str, limit: int = 20) -> list[dict]:
        """The ``limit`` live entity/concept pages whose name key the most documents name, most
        first: {key, docs, slug, title, aliases, facts} (a top-N walk of the counters' docs index)."""
        with self.pool.connection() as conn:
            return conn.execute(
                "SELECT c.key, c.docs, p.slug, p.title, p.aliases, p.facts FROM wiki_mention_keys c"
                " JOIN wiki_pages p ON p.knowledge_base_id = c.knowledge_base_id AND p.name_key = c.key"
                " AND p.deleted_at IS NULL AND p.page_type IN ('entity', 'concept')"
                " WHERE c.knowledge_base_id = %s ORDER BY c.docs DESC, c.key LIMIT %s",
                (kb_id, limit),
            ).fetchall()

    def unlinked_summaries(self, kb_id: str) -> tuple[int, int]:
        """(summaries, summaries no page links to nor lists under "Mentioned in"): a KB-wide count
        for benchmarks and reports, not for the pipeline."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT count(*) AS n, count(*) FILTER (WHERE NOT EXISTS ("
                "  SELECT 1 FROM wiki_links l WHERE l.knowledge_base_id = s.knowledge_base_id AND l.to_slug = s.slug"
                "  AND l.from_slug <> s.slug) AND NOT EXISTS ("
                "  SELECT 1 FROM wiki_mentions m JOIN wiki_pages i ON i.knowledge_base_id = m.knowledge_base_id"
                "   AND i.name_key = m.key AND i.deleted_at IS NULL AND i.page_type IN ('entity', 'concept')"
                "  WHERE m.knowledge_base_id = s.knowledge_base_id"
                "  AND m.knowledge_id = s.source_refs->0->>'knowledge_id')) AS alone"
                " FROM wiki_pages s WHERE s.knowledge_base_id = %s AND s.deleted_at IS NULL"
                " AND s.page_type = 'summary'",
                (kb_id,),
            ).fetchone()
        return row["n"], row["alone"]

    # -- writes --------------------------------------------------------------------------------
    def write(
        self,
        kb_id: str,
        dropped: list[MentionRow],
        added: list[MentionRow],
        stat_deltas: Mapping[str, KeyStats],
        name_deltas: Mapping[tuple[str, str, bool], int],
        conn: Connection,
    ) -> None:
        """In the caller's transaction: delete the ``dropped`` rows, insert the ``added`` ones, and
        add the deltas to the keys' counters and names (a key or name no document gives any more
        is deleted). Five statements whatever the batch."""
        if dropped:
            conn.execute(
                "DELETE FROM wiki_mentions WHERE knowledge_base_id = %s AND knowledge_id = ANY(%s)",
                (kb_id, sorted({r.knowledge_id for r in dropped})),
            )
        if added:
            conn.execute(
                INSERT_ROWS_SQL,
                {
                    "kb": kb_id,
                    "rows": Jsonb(
                        [
                            {
                                **{f: getattr(r, f) for f in _ROW_FIELDS},
                                "sentences": min(r.sentences, 32767),  # smallint columns
                                "subject": min(r.subject, 32767),
                                "quotes": list(r.quotes),
                                "aliases": list(r.aliases),
                            }
                            for r in added
                        ]
                    ),
                },
            )
        deltas = [{"key": key, **s.as_dict()} for key, s in sorted(stat_deltas.items()) if any(s.as_dict().values())]
        if deltas:
            conn.execute(UPSERT_STATS_SQL, {"kb": kb_id, "rows": Jsonb(deltas)})
            conn.execute(
                "DELETE FROM wiki_mention_keys WHERE knowledge_base_id = %s AND key = ANY(%s) AND docs <= 0",
                (kb_id, [d["key"] for d in deltas]),
            )
        names = [{"key": k, "name": n, "alias": a, "docs": d} for (k, n, a), d in sorted(name_deltas.items()) if d]
        if names:
            conn.execute(UPSERT_NAMES_SQL, {"kb": kb_id, "rows": Jsonb(names)})
            conn.execute(
                "DELETE FROM wiki_mention_names WHERE knowledge_base_id = %s AND key = ANY(%s) AND docs <= 0",
                (kb_id, sorted({n["key"] for n in names})),
            )

    def delete_kb(self, kb_id: str, conn: Connection | None = None) -> None:
        """Delete every row and counter of a KB (KB deletion)."""
        with borrow(self.pool, conn) as c:
            for table in ("wiki_mentions", "wiki_mention_keys", "wiki_mention_names"):
                c.execute(f"DELETE FROM {table} WHERE knowledge_base_id = %s", (kb_id,))
