"""The operations page's sign-in sessions (``web_sessions``, migration 0200).

A session is keyed by the SHA-256 of the random value in the browser's cookie, never the value
itself. Every read holds the tenant, the ops-token fingerprint and ``expires_at > now()``: a
session of another tenant's server, of a token since changed, or past its expiry finds nothing.
"""

from __future__ import annotations

from psycopg_pool import ConnectionPool


class WebSessionRepository:
    """Open, check and end sign-in sessions."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def open(self, id_hash: bytes, tenant_id: int, token_fingerprint: bytes, ttl_s: float) -> None:
        """Store a session lasting ``ttl_s`` seconds from now; expired sessions are deleted on the way
        (sign-ins are rare: the table never holds more than a few rows)."""
        with self.pool.connection() as conn:
            conn.execute("DELETE FROM web_sessions WHERE expires_at <= now()")
            conn.execute(
                "INSERT INTO web_sessions (id_hash, tenant_id, token_fingerprint, expires_at)"
                " VALUES (%s, %s, %s, now() + make_interval(secs => %s))",
                (id_hash, tenant_id, token_fingerprint, ttl_s),
            )

    def is_open(self, id_hash: bytes, tenant_id: int, token_fingerprint: bytes) -> bool:
        """Whether that session exists for this tenant and token and has not expired."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT 1 AS ok FROM web_sessions WHERE id_hash = %s AND tenant_id = %s"
                " AND token_fingerprint = %s AND expires_at > now()",
                (id_hash, tenant_id, token_fingerprint),
            ).fetchone()
        return row is not None

    def close(self, id_hash: bytes) -> None:
        """End a session (sign-out); ending one that does not exist is a no-op."""
        with self.pool.connection() as conn:
            conn.execute("DELETE FROM web_sessions WHERE id_hash = %s", (id_hash,))
