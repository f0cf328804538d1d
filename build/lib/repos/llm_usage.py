"""What a KB's model work cost (``wiki_llm_usage``, per KB and model) and where its token budget
was last reset (``wiki_llm_budget``)."""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.db import borrow


class LLMUsageRow(BaseModel):
    """One KB's counters for one ``model``: ``extractions`` of a document that called it and
    succeeded (a document extracted twice counts twice), ``failures`` (tries that failed: their
    calls and tokens are counted too), ``calls`` (HTTP requests answered with a completion),
    ``prompt_tokens`` / ``completion_tokens`` as the provider reported them or, where it did not
    plausibly, as counted (``estimated_tokens`` of them; ``wiki.extract.llm.tokens``), and
    ``cache_hits`` (documents served from ``wiki_extractions`` without a call)."""

    knowledge_base_id: str
    model: str
    extractions: int
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cache_hits: int
    estimated_tokens: int = 0
    failures: int = 0
    created_at: datetime
    updated_at: datetime

    @property
    def tokens(self) -> int:
        """Tokens in and out."""
        return self.prompt_tokens + self.completion_tokens


#: The largest value of a BIGINT column: counters saturate there instead of failing the write.
BIGINT_MAX = 2**63 - 1
_COUNTERS = ("extractions", "calls", "prompt_tokens", "completion_tokens", "cache_hits", "estimated_tokens", "failures")
_ADD_SQL = (
    "INSERT INTO wiki_llm_usage AS u (knowledge_base_id, model, "
    + ", ".join(_COUNTERS)
    + ") VALUES (%s, %s"
    + ", %s" * len(_COUNTERS)
    + ") ON CONFLICT (knowledge_base_id, model) DO UPDATE SET "
    + ", ".join(f"{c} = LEAST(u.{c}::numeric + EXCLUDED.{c}, {BIGINT_MAX})::bigint" for c in _COUNTERS)
    + ", updated_at = now()"
)


class LLMUsageRepository:
    """Add to and read a KB's usage counters; reset its token budget."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def add(
        self,
        kb_id: str,
        model: str,
        *,
        extractions: int = 0,
        calls: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cache_hits: int = 0,
        estimated_tokens: int = 0,
        failures: int = 0,
        conn: Connection | None = None,
    ) -> None:
        """Add to the (KB, model) counters in one upsert (increments only: concurrent workers never
        lose each other's counts). Each value is cut to 0 .. ``BIGINT_MAX`` and each sum saturates
        there: a count that does not fit its column never fails the write (and with it the answer)."""
        values = (extractions, calls, prompt_tokens, completion_tokens, cache_hits, estimated_tokens, failures)
        with borrow(self.pool, conn) as c:
            c.execute(_ADD_SQL, (kb_id, model, *(min(max(int(v), 0), BIGINT_MAX) for v in values)))

    def for_kb(self, kb_id: str) -> list[LLMUsageRow]:
        """The KB's rows, one per model it used, by model name."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM wiki_llm_usage WHERE knowledge_base_id = %s ORDER BY model", (kb_id,)
            ).fetchall()
        return [LLMUsageRow.model_validate(r) for r in rows]

    def budget_spent(self, kb_id: str, conn: Connection | None = None) -> int:
        """Tokens (in and out, every model) the KB spent since its budget was last reset: one
        statement over the KB's few usage rows (one per model)."""
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "SELECT COALESCE((SELECT sum(prompt_tokens + completion_tokens) FROM wiki_llm_usage"
                " WHERE knowledge_base_id = %(kb)s), 0)"
                " - COALESCE((SELECT tokens_at_reset FROM wiki_llm_budget WHERE knowledge_base_id = %(kb)s), 0)"
                " AS spent",
                {"kb": kb_id},
            ).fetchone()
        return int(row["spent"])

    def reset_budget(self, kb_id: str, conn: Connection | None = None) -> int:
        """Start the KB's budget count afresh (its spent tokens become 0); returns the tokens it had
        spent since the previous reset."""
        with borrow(self.pool, conn) as c:
            spent = self.budget_spent(kb_id, conn=c)
            c.execute(
                "INSERT INTO wiki_llm_budget (knowledge_base_id, tokens_at_reset)"
                " VALUES (%(kb)s::varchar, COALESCE((SELECT sum(prompt_tokens + completion_tokens) FROM wiki_llm_usage"
                " WHERE knowledge_base_id = %(kb)s::varchar), 0))"
                " ON CONFLICT (knowledge_base_id) DO UPDATE SET tokens_at_reset = EXCLUDED.tokens_at_reset,"
                " reset_at = now()",
                {"kb": kb_id},
            )
        return spent
