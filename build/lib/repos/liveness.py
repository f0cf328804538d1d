"""Who is alive and who may write, decided in PostgreSQL (``task_workers``, ``task_lane_fences``).

Redis keys (the active-batch lock, Dramatiq's own heartbeats) are only hints: they vanish on a
flush or expire during a pause. A worker's heartbeat row says whether its claims still count;
a lane's fencing token says which batch may write. All times are PostgreSQL's ``now()``, so
clocks of the worker hosts never matter.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import Connection, errors
from psycopg_pool import ConnectionPool

from wiki.errors import FenceLost

_LIVE = "SELECT worker_id FROM task_workers WHERE beat_at > now() - make_interval(secs => %(ttl)s)"

#: The longest a heartbeat or a reap waits for a lock (a table lock: row locks are skipped), in
#: ms: well under the heartbeat interval (2 s) and the worker TTL (10 s), so a beat is never late
#: behind another session's transaction. Set with SET LOCAL, for this transaction only.
LIVENESS_LOCK_TIMEOUT_MS = 500
_SHORT_LOCK_WAIT = f"SET LOCAL lock_timeout = {LIVENESS_LOCK_TIMEOUT_MS}"


@dataclass(frozen=True)
class Reaped:
    """What :meth:`WorkerRepository.reap` took back from dead workers."""

    workers: int  # dead workers forgotten
    claims: int  # claims released (rows claimable again)
    locks: list[tuple[str, str, str]]  # (task_type, scope_id, Redis lock token) of batches whose worker died
    #: Why nothing was taken back this time (a lock timeout or a deadlock, its error text); the next beat retries.
    deferred: str = ""


class WorkerRepository:
    """Worker heartbeats and taking back what dead workers held."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def beat(self, worker_id: str, hostname: str = "", pid: int = 0) -> None:
        """Insert or refresh the worker's heartbeat row (``beat_at = now()``), in a transaction of
        its own that waits at most ``LIVENESS_LOCK_TIMEOUT_MS`` for a lock (then
        ``psycopg.errors.LockNotAvailable``; the next beat tries again)."""
        with self.pool.connection() as conn:
            conn.execute(_SHORT_LOCK_WAIT)
            conn.execute(
                "INSERT INTO task_workers (worker_id, hostname, pid) VALUES (%s, %s, %s)"
                " ON CONFLICT (worker_id) DO UPDATE SET beat_at = now()",
                (worker_id, hostname[:255], int(pid)),
            )

    def forget(self, worker_id: str) -> int:
        """A worker that stops cleanly: release its claims and delete its row; returns claims released."""
        with self.pool.connection() as conn:
            released = conn.execute(
                "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL WHERE claimed_by = %s", (worker_id,)
            ).rowcount
            conn.execute("UPDATE task_lane_fences SET holder = NULL WHERE holder = %s", (worker_id,))
            conn.execute("DELETE FROM task_workers WHERE worker_id = %s", (worker_id,))
        return released

    def alive_count(self, ttl_s: float) -> int:
        """Workers whose heartbeat is newer than ``ttl_s`` seconds."""
        with self.pool.connection() as conn:
            row = conn.execute(f"SELECT count(*) AS n FROM ({_LIVE}) live", {"ttl": float(ttl_s)}).fetchone()
        return int(row["n"])

    def alive_among(self, worker_ids: list[str], ttl_s: float) -> set[str]:
        """Those of ``worker_ids`` whose heartbeat is newer than ``ttl_s`` seconds (one indexed lookup)."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT worker_id FROM task_workers WHERE worker_id = ANY(%s)"
                " AND beat_at > now() - make_interval(secs => %s)",
                (list(worker_ids), float(ttl_s)),
            ).fetchall()
        return {r["worker_id"] for r in rows}

    def reap(self, ttl_s: float, forget_after_s: float) -> Reaped:
        """Take back what workers without a heartbeat for ``ttl_s`` seconds held, in one transaction.

        Their claims become claimable again; the fences their batches hold lose their holder and
        are returned with the Redis lock token (the caller deletes those locks). A claim whose
        worker id has no live row counts as dead too (its row was forgotten). Rows of workers dead
        for more than ``forget_after_s`` seconds are deleted. Taking back a live worker's claim
        (one that lost PostgreSQL for longer than the TTL) is safe: every handler is idempotent and
        reduce writes are fenced.

        Never waits behind a batch: rows another transaction holds locked (a running or frozen
        batch's claims and fence) are skipped (``FOR UPDATE SKIP LOCKED``) and taken at a later
        beat, once that transaction ended (PostgreSQL ends a frozen one after
        ``KBWIKI_DB_IDLE_IN_TRANSACTION_TIMEOUT_S``). Since the reap waits for no row lock it
        cannot close a deadlock cycle; a lock wait over ``LIVENESS_LOCK_TIMEOUT_MS`` (a table lock)
        or a deadlock still reported rolls the reap back and returns an empty ``Reaped`` whose
        ``deferred`` says why.
        """
        params = {"ttl": float(ttl_s), "forget": float(forget_after_s)}
        with self.pool.connection() as conn:
            try:
                return self._reap(conn, params)
            except (errors.LockNotAvailable, errors.DeadlockDetected) as exc:
                conn.rollback()
                return Reaped(0, 0, [], deferred=f"{type(exc).__name__}: {str(exc).strip().splitlines()[0]}")

    @staticmethod
    def _reap(conn: Connection, params: dict[str, float]) -> Reaped:
        conn.execute(_SHORT_LOCK_WAIT)
        claims = conn.execute(
            "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL WHERE id IN ("
            " SELECT id FROM task_pending_ops"
            f" WHERE claimed_by IS NOT NULL AND claimed_by NOT IN ({_LIVE})"
            " FOR UPDATE SKIP LOCKED)",
            params,
        ).rowcount
        locks = conn.execute(
            "UPDATE task_lane_fences SET holder = NULL WHERE (task_type, scope, scope_id) IN ("
            " SELECT task_type, scope, scope_id FROM task_lane_fences"
            f" WHERE holder IS NOT NULL AND holder NOT IN ({_LIVE})"
            " FOR UPDATE SKIP LOCKED)"
            " RETURNING task_type, scope_id, lock_token",
            params,
        ).fetchall()
        workers = conn.execute(
            "DELETE FROM task_workers WHERE worker_id IN ("
            " SELECT worker_id FROM task_workers WHERE beat_at <= now() - make_interval(secs => %(forget)s)"
            " FOR UPDATE SKIP LOCKED)",
            params,
        ).rowcount
        return Reaped(workers, claims, [(r["task_type"], r["scope_id"], r["lock_token"] or "") for r in locks])


class LaneFenceRepository:
    """Fencing tokens of lane batches (one row per lane in ``task_lane_fences``)."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def take(self, task_type: str, scope: str, scope_id: str, holder: str | None = None, lock_token: str = "") -> int:
        """Start a batch on the lane: a new token (one more than the last), committed at once, so
        every batch that started before can no longer write. Returns the token."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "INSERT INTO task_lane_fences (task_type, scope, scope_id, token, holder, lock_token)"
                " VALUES (%s, %s, %s, 1, %s, %s)"
                " ON CONFLICT (task_type, scope, scope_id) DO UPDATE SET token = task_lane_fences.token + 1,"
                " holder = EXCLUDED.holder, lock_token = EXCLUDED.lock_token, taken_at = now()"
                " RETURNING token",
                (task_type, scope, scope_id, holder, lock_token or None),
            ).fetchone()
        return int(row["token"])

    @staticmethod
    def check(task_type: str, scope: str, scope_id: str, token: int, conn: Connection) -> None:
        """Hold the lane's fence row until ``conn``'s transaction ends and make sure ``token`` is
        still the current one. Raises :class:`FenceLost` otherwise.

        The row lock makes the batch's writes and a later batch's :meth:`take` exclusive: the later
        batch starts (and reads) only after this transaction committed, or this one sees its token.
        """
        row = conn.execute(
            "SELECT token FROM task_lane_fences WHERE task_type = %s AND scope = %s AND scope_id = %s FOR UPDATE",
            (task_type, scope, scope_id),
        ).fetchone()
        if row is None or int(row["token"]) != token:
            raise FenceLost(
                f"{task_type} batch of {scope_id} was overtaken (token {token}, now {row['token'] if row else 'none'})"
            )
