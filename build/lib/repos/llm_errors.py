"""Why a KB's model work waits (``wiki_llm_config_errors``): one row per KB, of a ``kind``:
``config`` (the endpoint refused the configuration), ``credit`` (the provider says the account is
out of credit) or ``budget`` (the KB spent its token budget)."""

from __future__ import annotations

from datetime import datetime

from psycopg import Connection
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.db import borrow


class LLMConfigErrorRow(BaseModel):
    """The refusal that paused a KB: HTTP ``status`` and the provider's ``message`` for the
    configuration ``fingerprint`` (``wiki.llm_config.LLMConfig.fingerprint``); ``kind`` as in the
    module docstring (a ``budget`` row's status is 402 and its message says what was spent)."""

    knowledge_base_id: str
    kind: str = "config"
    fingerprint: str
    status: int
    message: str
    base_url: str | None
    model: str
    created_at: datetime
    last_seen_at: datetime
    #: Probes made so far (documents let through to see whether the endpoint works again) and when
    #: the next may go (None: ``probe_s`` after ``created_at``); see ``claim_probe``.
    probes: int = 0
    next_probe_at: datetime | None = None


class LLMConfigErrorRepository:
    """Record, read and clear a KB's configuration error."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def record(
        self,
        kb_id: str,
        fingerprint: str,
        status: int,
        message: str,
        base_url: str | None,
        model: str,
        kind: str = "config",
    ) -> bool:
        """Store the error; returns True when it is new for the KB (no row, or one for another
        configuration or kind), False when the same configuration's error was already there (then only
        ``last_seen_at`` moves): the caller logs it once."""
        with self.pool.connection() as c:
            row = c.execute(
                "INSERT INTO wiki_llm_config_errors AS e"
                " (knowledge_base_id, fingerprint, status, message, base_url, model, kind)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (knowledge_base_id) DO UPDATE SET last_seen_at = now(), status = EXCLUDED.status,"
                " message = EXCLUDED.message, base_url = EXCLUDED.base_url, model = EXCLUDED.model,"
                " fingerprint = EXCLUDED.fingerprint, kind = EXCLUDED.kind,"
                " created_at = CASE WHEN e.fingerprint = EXCLUDED.fingerprint AND e.kind = EXCLUDED.kind"
                " THEN e.created_at ELSE now() END"
                " RETURNING created_at = last_seen_at AS fresh",
                (kb_id, fingerprint, status, message[:2000], base_url, model, kind),
            ).fetchone()
        return bool(row["fresh"])

    def claim_probe(self, kb_id: str, fingerprint: str, first_s: float, max_s: float) -> int | None:
        """Take the KB's next probe when it is due: the first ``first_s`` after the pause was
        recorded, each next one twice as long after the last (at most ``max_s``). Returns the probe's
        number (1, 2, ...), or None when none is due, the pause is gone or is for another
        configuration. One statement: of workers asking at once, one gets it."""
        with self.pool.connection() as c:
            row = c.execute(
                "UPDATE wiki_llm_config_errors SET probes = probes + 1,"
                " next_probe_at = now() + make_interval(secs => LEAST(%(first)s * power(2, probes + 1), %(max)s))"
                " WHERE knowledge_base_id = %(kb)s AND fingerprint = %(fp)s"
                " AND COALESCE(next_probe_at, created_at + make_interval(secs => %(first)s)) <= now()"
                " RETURNING probes",
                {"kb": kb_id, "fp": fingerprint, "first": float(first_s), "max": float(max_s)},
            ).fetchone()
        return int(row["probes"]) if row else None

    def get(self, kb_id: str) -> LLMConfigErrorRow | None:
        """The KB's recorded error, or None."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT * FROM wiki_llm_config_errors WHERE knowledge_base_id = %s", (kb_id,)).fetchone()
        return LLMConfigErrorRow.model_validate(row) if row else None

    def clear(self, kb_id: str, conn: Connection | None = None) -> LLMConfigErrorRow | None:
        """Drop the KB's error (its model answered again, or ``kbwiki resume``); returns the row
        dropped (truthy), or None when there was none."""
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "DELETE FROM wiki_llm_config_errors WHERE knowledge_base_id = %s RETURNING *", (kb_id,)
            ).fetchone()
        return LLMConfigErrorRow.model_validate(row) if row else None
