"""The durable pending-op queue (``task_pending_ops``) and the dead-letter archive (``task_dead_letters``).

A lane is ``(task_type, scope, scope_id)``, e.g. ``("wiki:ingest", "knowledge_base", <kb id>)``.
Rows are the work; a Dramatiq message only says "drain this lane". Every write method takes an
optional ``conn``: given, it runs inside the caller's transaction and does not commit (so several
moves are one transaction); omitted, it borrows a pooled connection committed on exit.

Limits follow the column sizes of ``migrations/0001_task_queue.sql``; values that do not fit raise
``ValueError`` before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from psycopg import Connection, sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.db import borrow

#: ``task_dead_letters.last_error`` holds at most this many bytes of UTF-8 (the migration's "8 KiB").
ERROR_LIMIT_BYTES = 8192
TRUNCATED_SUFFIX = "...(truncated)"

#: Bounds of ``peek``/``claim`` page sizes and of dead-letter pages (a page never grows with the KB).
MAX_PEEK = 1000
MAX_CLAIM = 1000
DEFAULT_DEAD_LETTER_PAGE = 50
MAX_DEAD_LETTER_PAGE = 200
MAX_LANES = 10_000

# Column widths (VARCHAR(n)) of the migration.
_WIDTHS = {"task_type": 64, "scope": 32, "scope_id": 64, "op": 32, "dedup_key": 128, "related_id": 64}

KB_SCOPE = "knowledge_base"


class PendingOp(BaseModel):
    """One ``task_pending_ops`` row. ``claimed_at`` is None when unclaimed."""

    id: int
    tenant_id: int
    task_type: str
    scope: str
    scope_id: str
    op: str
    dedup_key: str
    payload: dict[str, Any]
    fail_count: int
    enqueued_at: datetime
    claimed_at: datetime | None = None
    claimed_by: str | None = None
    not_before: datetime | None = None


class DeadLetter(BaseModel):
    """One ``task_dead_letters`` row; ``payload`` is the failed message or op, ready to be re-sent."""

    id: int
    tenant_id: int
    task_type: str
    scope: str
    scope_id: str
    related_id: str
    payload: dict[str, Any]
    last_error: str
    fail_count: int
    failed_at: datetime


class Lane(BaseModel):
    """A lane that has rows; ``tenant_id`` is the smallest tenant seen in it, ``rows`` counts claimed rows too."""

    task_type: str
    scope: str
    scope_id: str
    tenant_id: int
    rows: int


def truncate_error(text: str, limit_bytes: int = ERROR_LIMIT_BYTES) -> str:
    """``text`` cut to at most ``limit_bytes`` bytes of UTF-8, ending in ``...(truncated)`` when cut.

    Cuts on a character boundary, so the result is always valid UTF-8. NUL characters (which a
    PostgreSQL TEXT column refuses) are removed first.
    """
    text = text.replace("\x00", "")
    raw = text.encode("utf-8")
    if len(raw) <= limit_bytes:
        return text
    keep = max(0, limit_bytes - len(TRUNCATED_SUFFIX.encode("utf-8")))
    return raw[:keep].decode("utf-8", errors="ignore") + TRUNCATED_SUFFIX


def _strip_nul(value: Any) -> Any:
    """JSONB refuses ``\\u0000`` in strings; dead letters must store whatever bad input failed."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {_strip_nul(str(k)): _strip_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strip_nul(v) for v in value]
    return value


def _require(**fields: str) -> None:
    """Raise ValueError when a required text field is empty or wider than its column."""
    for name, value in fields.items():
        if not isinstance(value, str) or not value:
            raise ValueError(f"{name} is required (got {value!r})")
        _check_width(name, value)


def _check_width(name: str, value: str) -> None:
    width = _WIDTHS.get(name)
    if width is not None and len(value) > width:
        raise ValueError(f"{name} is longer than {width} characters")


def _ids(ids: Iterable[int]) -> list[int]:
    return [int(i) for i in ids]


def _stale_s(stale_after_s: float) -> float:
    if stale_after_s < 0:
        raise ValueError("stale_after_s must be >= 0")
    return float(stale_after_s)


_LANE = "task_type = %(task_type)s AND scope = %(scope)s AND scope_id = %(scope_id)s"
_CUTOFF = "now() - make_interval(secs => %(stale)s)"

_INSERT_OP = (
    "INSERT INTO task_pending_ops (tenant_id, task_type, scope, scope_id, op, dedup_key, payload)"
    " VALUES (%(tenant_id)s, %(task_type)s, %(scope)s, %(scope_id)s, %(op)s, %(dedup_key)s, %(payload)s)"
    " RETURNING *"
)

# Only a live KB of the same tenant accepts ops. FOR SHARE holds the KB row until the caller's
# transaction ends, so a concurrent soft delete (UPDATE ... deleted_at) waits for the insert and
# its cleanup then sees the new op.
_INSERT_OP_IF_KB_ACTIVE = (
    "WITH kb AS (SELECT id FROM knowledge_bases"
    "            WHERE id = %(scope_id)s AND tenant_id = %(tenant_id)s AND deleted_at IS NULL FOR SHARE)"
    " INSERT INTO task_pending_ops (tenant_id, task_type, scope, scope_id, op, dedup_key, payload)"
    " SELECT %(tenant_id)s, %(task_type)s, %(scope)s, kb.id, %(op)s, %(dedup_key)s, %(payload)s FROM kb"
    " RETURNING *"
)

# A claim takes whole dedup keys. A row is its key's representative when no other row of the key
# is earlier or freshly claimed; representatives are locked FOR UPDATE SKIP LOCKED in id order, so
# concurrent claimers walk past each other's keys, and LIMIT counts keys. Then every claimable row
# of the chosen keys is stamped; the claimable test sits in the UPDATE's own WHERE so PostgreSQL
# re-checks it if another transaction changed the row meanwhile. Empty keys never group. A row
# backing off after a failure (not_before in the future) holds its key back like a fresh claim.
_CLAIM = f"""
WITH reps AS (
    SELECT t.id, t.dedup_key FROM task_pending_ops t
    WHERE t.task_type = %(task_type)s AND t.scope = %(scope)s AND t.scope_id = %(scope_id)s
      AND (t.claimed_at IS NULL OR t.claimed_at <= {_CUTOFF})
      AND (t.not_before IS NULL OR t.not_before <= now())
      AND (t.dedup_key = '' OR NOT EXISTS (
            SELECT 1 FROM task_pending_ops e
            WHERE e.task_type = t.task_type AND e.scope = t.scope AND e.scope_id = t.scope_id
              AND e.dedup_key = t.dedup_key
              AND (e.id < t.id OR e.claimed_at > {_CUTOFF} OR e.not_before > now())))
    ORDER BY t.id
    LIMIT %(limit)s
    FOR UPDATE OF t SKIP LOCKED
),
targets AS (
    SELECT id FROM reps
    UNION
    SELECT k.id FROM task_pending_ops k
    WHERE k.task_type = %(task_type)s AND k.scope = %(scope)s AND k.scope_id = %(scope_id)s
      AND k.dedup_key IN (SELECT dedup_key FROM reps WHERE dedup_key <> '')
)
UPDATE task_pending_ops u SET claimed_at = now(), claimed_by = %(owner)s
WHERE u.id IN (SELECT id FROM targets)
  AND (u.claimed_at IS NULL OR u.claimed_at <= {_CUTOFF})
RETURNING u.*
"""


class TaskPendingOpsRepository:
    """Reads and writes ``task_pending_ops``: enqueue, claim, release, move between lanes, delete."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def enqueue(
        self,
        *,
        tenant_id: int,
        task_type: str,
        scope: str,
        scope_id: str,
        op: str,
        dedup_key: str = "",
        payload: dict[str, Any] | None = None,
        conn: Connection | None = None,
    ) -> PendingOp:
        """Append one op to the lane ``(task_type, scope, scope_id)``; returns the stored row.

        Raises ValueError (nothing written) when task_type, scope, scope_id or op is empty or any
        text is wider than its column.
        """
        params = self._op_params(tenant_id, task_type, scope, scope_id, op, dedup_key, payload)
        with borrow(self.pool, conn) as c:
            row = c.execute(_INSERT_OP, params).fetchone()
        return PendingOp.model_validate(row)

    def enqueue_if_kb_active(
        self,
        *,
        tenant_id: int,
        task_type: str,
        scope: str,
        scope_id: str,
        op: str,
        dedup_key: str = "",
        payload: dict[str, Any] | None = None,
        conn: Connection | None = None,
    ) -> PendingOp | None:
        """Like ``enqueue``, but only into a live KB (id = scope_id) of ``tenant_id``; None when refused.

        One statement that locks the KB row FOR SHARE for the rest of the transaction, so a KB
        deleted concurrently either refuses the op or sees it. Raises ValueError when ``scope`` is
        not ``"knowledge_base"`` or a field is invalid (as ``enqueue``).
        """
        params = self._op_params(tenant_id, task_type, scope, scope_id, op, dedup_key, payload)
        if scope != KB_SCOPE:
            raise ValueError(f"enqueue_if_kb_active needs scope={KB_SCOPE!r}, got {scope!r}")
        with borrow(self.pool, conn) as c:
            row = c.execute(_INSERT_OP_IF_KB_ACTIVE, params).fetchone()
        return PendingOp.model_validate(row) if row else None

    @staticmethod
    def _op_params(
        tenant_id: int,
        task_type: str,
        scope: str,
        scope_id: str,
        op: str,
        dedup_key: str,
        payload: dict[str, Any] | None,
    ) -> dict[str, Any]:
        _require(task_type=task_type, scope=scope, scope_id=scope_id, op=op)
        _check_width("dedup_key", dedup_key or "")
        return {
            "tenant_id": int(tenant_id),
            "task_type": task_type,
            "scope": scope,
            "scope_id": scope_id,
            "op": op,
            "dedup_key": dedup_key or "",
            "payload": Jsonb(payload or {}),
        }

    def get(self, id: int) -> PendingOp | None:
        """The op with this id, or None when it is gone (done, superseded or moved to dead letters)."""
        with self.pool.connection() as conn:
            row = conn.execute("SELECT * FROM task_pending_ops WHERE id = %s", (int(id),)).fetchone()
        return PendingOp.model_validate(row) if row else None

    def peek(self, task_type: str, scope: str, scope_id: str, limit: int = 100) -> list[PendingOp]:
        """Up to ``limit`` (clamped to 1..1000) rows of the lane in id order, claimed or not; locks nothing."""
        limit = min(max(int(limit), 1), MAX_PEEK)
        with self.pool.connection() as conn:
            rows = conn.execute(
                f"SELECT * FROM task_pending_ops WHERE {_LANE} ORDER BY id LIMIT %(limit)s",
                {"task_type": task_type, "scope": scope, "scope_id": scope_id, "limit": limit},
            ).fetchall()
        return [PendingOp.model_validate(r) for r in rows]

    def claim(
        self,
        task_type: str,
        scope: str,
        scope_id: str,
        limit: int,
        stale_after_s: float,
        conn: Connection | None = None,
        owner: str | None = None,
    ) -> list[PendingOp]:
        """Claim up to ``limit`` dedup keys of the lane (oldest key first) and return their rows in id order.

        A key is taken whole: every unclaimed (or stale-claimed) row of it in the lane. A key with a
        fresh claim (``claimed_at`` newer than ``stale_after_s`` seconds) is skipped entirely, so
        rows enqueued after a claim wait for it to settle. Rows with an empty key are each their own
        key. Representatives are locked with FOR UPDATE SKIP LOCKED, so concurrent claimers get
        disjoint sets. ``limit`` <= 0 claims nothing; it is capped at 1000. A key whose rows back off
        after a failure (``not_before`` in the future) is skipped. ``owner`` (a worker id) is stored
        in ``claimed_by``: when that worker stops heartbeating its claims are taken back at once
        (``repos.liveness``), without waiting ``stale_after_s``.

        Known limit: ids come from a sequence, so two enqueues of one key committing out of id order
        while two claimers race can split that key between them; handlers are idempotent and the
        reduce stage keeps the last op per key, so this costs at most an extra pass.
        """
        if limit <= 0:
            return []
        params = {
            "task_type": task_type,
            "scope": scope,
            "scope_id": scope_id,
            "limit": min(int(limit), MAX_CLAIM),
            "stale": _stale_s(stale_after_s),
            "owner": owner,
        }
        with borrow(self.pool, conn) as c:
            rows = c.execute(_CLAIM, params).fetchall()
        return sorted((PendingOp.model_validate(r) for r in rows), key=lambda op: op.id)

    def claimed_count(self, task_type: str, scope: str, scope_id: str, stale_after_s: float) -> int:
        """Rows of the lane whose claim is fresh (newer than ``stale_after_s`` seconds)."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT count(*) AS n FROM task_pending_ops WHERE {_LANE} AND claimed_at > {_CUTOFF}",
                {"task_type": task_type, "scope": scope, "scope_id": scope_id, "stale": _stale_s(stale_after_s)},
            ).fetchone()
        return int(row["n"])

    def release(self, ids: Sequence[int], conn: Connection | None = None, by: str | None = None,
                not_before_s: float = 0.0) -> int:
        """Clear the claim of these rows (they become claimable again); returns rows changed.

        ``by`` (a worker id) releases only the rows that worker still holds: a claim taken back
        from it and claimed by another worker meanwhile stays. ``not_before_s`` > 0 keeps the rows
        from being claimed again for that many seconds (a failed op's backoff).
        """
        ids = _ids(ids)
        if not ids:
            return 0
        query = ("UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL,"
                 " not_before = CASE WHEN %(delay)s > 0 THEN now() + make_interval(secs => %(delay)s) END"
                 " WHERE id = ANY(%(ids)s)")
        if by is not None:
            query += " AND claimed_by = %(by)s"
        with borrow(self.pool, conn) as c:
            return c.execute(query, {"ids": ids, "by": by, "delay": float(not_before_s)}).rowcount

    def delete_by_ids(self, ids: Sequence[int], conn: Connection | None = None) -> int:
        """Delete these rows (work done); returns rows deleted. Empty input is a no-op."""
        ids = _ids(ids)
        if not ids:
            return 0
        with borrow(self.pool, conn) as c:
            return c.execute("DELETE FROM task_pending_ops WHERE id = ANY(%s)", (ids,)).rowcount

    def move(
        self,
        ids: Sequence[int],
        to_task_type: str,
        payload_patch: dict[str, Any] | None = None,
        conn: Connection | None = None,
        from_task_type: str | None = None,
    ) -> int:
        """Move rows to lane ``to_task_type`` of the same scope; returns rows moved.

        The moved rows start fresh there: unclaimed, ``fail_count`` 0, ``enqueued_at`` now, payload
        merged with ``payload_patch`` (JSONB ``||``: top-level keys of the patch win). With
        ``from_task_type`` only rows still in that lane move (a second handler of the same op moves
        nothing). Raises ValueError on an empty or too long ``to_task_type``.
        """
        _require(task_type=to_task_type)
        ids = _ids(ids)
        if not ids:
            return 0
        query = ("UPDATE task_pending_ops SET task_type = %(to)s, claimed_at = NULL, claimed_by = NULL,"
                 " fail_count = 0, not_before = NULL, enqueued_at = now(), payload = payload || %(patch)s"
                 " WHERE id = ANY(%(ids)s)")
        if from_task_type is not None:
            query += " AND task_type = %(from)s"
        params = {"to": to_task_type, "patch": Jsonb(payload_patch or {}), "ids": ids, "from": from_task_type}
        with borrow(self.pool, conn) as c:
            return c.execute(query, params).rowcount

    def incr_fail_count(self, id: int, conn: Connection | None = None) -> int | None:
        """Add one to the row's ``fail_count`` and return the new value; None when the row is gone."""
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "UPDATE task_pending_ops SET fail_count = fail_count + 1 WHERE id = %s RETURNING fail_count",
                (int(id),),
            ).fetchone()
        return int(row["fail_count"]) if row else None

    def pending_count(self, task_type: str, scope: str, scope_id: str) -> int:
        """Rows in the lane, claimed rows included."""
        with self.pool.connection() as conn:
            row = conn.execute(
                f"SELECT count(*) AS n FROM task_pending_ops WHERE {_LANE}",
                {"task_type": task_type, "scope": scope, "scope_id": scope_id},
            ).fetchone()
        return int(row["n"])

    def take_unclaimed_payload_items(self, task_type: str, scope: str, scope_id: str, key: str,
                                     conn: Connection | None = None) -> set[str]:
        """Delete the lane's unclaimed rows and return the strings in the ``key`` arrays of their
        payloads (for example the slugs waiting in a KB's finalize lane, to queue them again
        merged): one statement, bounded by the lane, not the KB. A row being claimed meanwhile
        is left to its claimer."""
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                f"DELETE FROM task_pending_ops WHERE {_LANE} AND claimed_at IS NULL RETURNING payload -> %(key)s AS items",
                {"task_type": task_type, "scope": scope, "scope_id": scope_id, "key": key},
            ).fetchall()
        return {item for r in rows if isinstance(r["items"], list) for item in r["items"] if isinstance(item, str)}

    def counts_by_lane(self, scope: str, scope_id: str) -> dict[str, int]:
        """``{task_type: rows}`` for every lane of the scope that has rows."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT task_type, count(*) AS n FROM task_pending_ops"
                " WHERE scope = %s AND scope_id = %s GROUP BY task_type",
                (scope, scope_id),
            ).fetchall()
        return {r["task_type"]: int(r["n"]) for r in rows}

    def delete_by_dedup_key(
        self,
        task_type: str,
        scope: str,
        scope_id: str,
        dedup_key: str,
        op: str | None = None,
        conn: Connection | None = None,
    ) -> int:
        """Delete the lane's rows of one dedup key (only those of ``op`` when given); returns rows deleted.

        Raises ValueError, deleting nothing, when ``dedup_key`` or a lane field is empty: an empty
        key must never mean "every row".
        """
        _require(task_type=task_type, scope=scope, scope_id=scope_id, dedup_key=dedup_key)
        query = f"DELETE FROM task_pending_ops WHERE {_LANE} AND dedup_key = %(dedup_key)s"
        params = {"task_type": task_type, "scope": scope, "scope_id": scope_id, "dedup_key": dedup_key}
        if op is not None:
            query += " AND op = %(op)s"
            params["op"] = op
        with borrow(self.pool, conn) as c:
            return c.execute(query, params).rowcount

    def delete_by_scope(self, scope: str, scope_id: str, conn: Connection | None = None) -> int:
        """Delete every row of the scope in all lanes (KB deleted); returns rows deleted. ValueError on empty args."""
        _require(scope=scope, scope_id=scope_id)
        with borrow(self.pool, conn) as c:
            return c.execute(
                "DELETE FROM task_pending_ops WHERE scope = %s AND scope_id = %s", (scope, scope_id)
            ).rowcount

    def lanes_with_rows(self, limit: int = 1000) -> list[Lane]:
        """Up to ``limit`` (clamped to 1..10000) lanes that have rows, the lane with the oldest row first.

        For the recovery sweeper, which re-triggers each lane (a lost message loses no work).
        """
        limit = min(max(int(limit), 1), MAX_LANES)
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT task_type, scope, scope_id, min(tenant_id) AS tenant_id, count(*) AS rows"
                " FROM task_pending_ops GROUP BY task_type, scope, scope_id ORDER BY min(id) LIMIT %s",
                (limit,),
            ).fetchall()
        return [Lane.model_validate(r) for r in rows]

    def release_all(self) -> int:
        """Clear every claim of every lane (the messages behind them may be lost); returns rows released."""
        with self.pool.connection() as conn:
            return conn.execute("UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL"
                                " WHERE claimed_at IS NOT NULL").rowcount

    def reclaim_stale(self, stale_after_s: float) -> int:
        """Clear claims older than ``stale_after_s`` seconds (their worker died); returns rows released."""
        with self.pool.connection() as conn:
            return conn.execute(
                f"UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL WHERE claimed_at <= {_CUTOFF}",
                {"stale": _stale_s(stale_after_s)},
            ).rowcount


class TaskDeadLetterRepository:
    """Reads and writes ``task_dead_letters``: work that failed for good, kept so it can be re-sent."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def insert(
        self,
        *,
        task_type: str,
        tenant_id: int = 0,
        scope: str = "unknown",
        scope_id: str = "",
        related_id: str = "",
        payload: dict[str, Any] | None = None,
        last_error: str = "",
        fail_count: int = 0,
        failed_at: datetime | None = None,
        conn: Connection | None = None,
    ) -> DeadLetter:
        """Store one dead letter and return it.

        ``last_error`` is cut to 8 KiB of UTF-8 (``truncate_error``); NUL characters are dropped from
        the error and the payload (PostgreSQL refuses them). ``failed_at`` defaults to now (a letter
        kept elsewhere while the database was down brings its own). Raises ValueError when
        ``task_type`` or ``scope`` is empty or a field is wider than its column.
        """
        _require(task_type=task_type, scope=scope)
        _check_width("scope_id", scope_id)
        _check_width("related_id", related_id)
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "INSERT INTO task_dead_letters"
                " (tenant_id, task_type, scope, scope_id, related_id, payload, last_error, fail_count, failed_at)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s::timestamptz, now())) RETURNING *",
                (
                    int(tenant_id),
                    task_type,
                    scope,
                    scope_id,
                    related_id,
                    Jsonb(_strip_nul(payload or {})),
                    truncate_error(last_error),
                    int(fail_count),
                    failed_at,
                ),
            ).fetchone()
        return DeadLetter.model_validate(row)

    def list(
        self,
        *,
        tenant_id: int | None,
        scope: str | None = None,
        scope_id: str | None = None,
        task_type: str | None = None,
        since: datetime | None = None,
        cursor: int | str | None = None,
        limit: int = DEFAULT_DEAD_LETTER_PAGE,
    ) -> list[DeadLetter]:
        """One page of dead letters, newest first (id descending), filtered by the given fields.

        ``tenant_id`` keeps that tenant's rows only (None: every tenant's, for operators of the
        whole deployment; 0 is the tenant of messages that named none). ``cursor`` is the last id
        of the previous page (rows with a smaller id follow); ``since`` keeps rows with
        ``failed_at >= since``; ``limit`` is clamped to 1..200. Raises ValueError when ``cursor``
        is not a positive integer.
        """
        conditions, params = _dead_letter_filters(scope, scope_id, task_type, since)
        _tenant_condition(tenant_id, conditions, params)
        if cursor is not None:
            conditions.append(sql.SQL("id < %s"))
            params.append(_parse_cursor(cursor))
        where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        query = sql.SQL("SELECT * FROM task_dead_letters{} ORDER BY id DESC LIMIT %s").format(where)
        params.append(min(max(int(limit), 1), MAX_DEAD_LETTER_PAGE))
        with self.pool.connection() as conn:
            rows = conn.execute(query, params).fetchall()
        return [DeadLetter.model_validate(r) for r in rows]

    def get(self, id: int, *, tenant_id: int | None) -> DeadLetter | None:
        """The dead letter with this id, or None (also when it belongs to another tenant than
        ``tenant_id``; None: any tenant)."""
        conditions, params = [sql.SQL("id = %s")], [int(id)]
        _tenant_condition(tenant_id, conditions, params)
        query = sql.SQL("SELECT * FROM task_dead_letters WHERE {}").format(sql.SQL(" AND ").join(conditions))
        with self.pool.connection() as conn:
            row = conn.execute(query, params).fetchone()
        return DeadLetter.model_validate(row) if row else None

    def delete(self, id: int, *, tenant_id: int | None, conn: Connection | None = None) -> bool:
        """Delete one dead letter (after it was re-sent or dismissed); False when it was already gone
        or belongs to another tenant than ``tenant_id`` (None: any tenant).

        With ``conn`` the row stays locked until the caller's transaction ends, so of two concurrent
        callers exactly one gets True.
        """
        conditions, params = [sql.SQL("id = %s")], [int(id)]
        _tenant_condition(tenant_id, conditions, params)
        query = sql.SQL("DELETE FROM task_dead_letters WHERE {}").format(sql.SQL(" AND ").join(conditions))
        with borrow(self.pool, conn) as c:
            return c.execute(query, params).rowcount > 0

    def purge(
        self,
        *,
        tenant_id: int | None,
        ids: Sequence[int] | None = None,
        scope: str | None = None,
        scope_id: str | None = None,
        task_type: str | None = None,
        since: datetime | None = None,
        everything: bool = False,
    ) -> int:
        """Delete the dead letters matching every given filter; returns rows deleted.

        ``tenant_id`` confines every form (ids and ``everything`` included) to that tenant's rows
        (None: every tenant's); it is a scope, not a filter. ``ids`` restricts to those ids (an
        empty list deletes nothing); the other filters are those of ``list``. Raises ValueError,
        deleting nothing, when no filter is given and ``everything`` is False: no filter must never
        silently mean "every row".
        """
        conditions, params = _dead_letter_filters(scope, scope_id, task_type, since)
        if ids is not None:
            conditions.append(sql.SQL("id = ANY(%s)"))
            params.append(_ids(ids))
        if not conditions and not everything:
            raise ValueError("purge needs a filter (ids, scope, task_type or since) or everything=True")
        _tenant_condition(tenant_id, conditions, params)
        where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        with self.pool.connection() as conn:
            return conn.execute(sql.SQL("DELETE FROM task_dead_letters{}").format(where), params).rowcount

    def move_op_to_dead_letters(
        self, op: PendingOp, *, task_type: str, error: str, conn: Connection | None = None
    ) -> DeadLetter:
        """Archive a pending op that passed its in-batch retry budget and delete its row, atomically.

        ``task_type`` is the op's original lane (e.g. ``"wiki:ingest"``) even if the op has since
        moved; ``related_id`` is the op's dedup key, the payload the whole op as JSON, ``fail_count``
        the op's. One statement, so it is atomic even without the caller's transaction. The dead
        letter is written even when the row was already deleted by someone else (the failure still
        happened).
        """
        _require(task_type=task_type)
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "WITH gone AS (DELETE FROM task_pending_ops WHERE id = %s)"
                " INSERT INTO task_dead_letters"
                " (tenant_id, task_type, scope, scope_id, related_id, payload, last_error, fail_count)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING *",
                (
                    op.id,
                    op.tenant_id,
                    task_type,
                    op.scope,
                    op.scope_id,
                    op.dedup_key[: _WIDTHS["related_id"]],
                    Jsonb(_strip_nul(op.model_dump(mode="json"))),
                    truncate_error(error),
                    op.fail_count,
                ),
            ).fetchone()
        return DeadLetter.model_validate(row)

    def count(self, *, tenant_id: int | None, scope: str | None = None, scope_id: str | None = None) -> int:
        """Dead letters of ``tenant_id`` (None: every tenant), of a scope (and scope_id) when given."""
        conditions, params = _dead_letter_filters(scope, scope_id, None, None)
        _tenant_condition(tenant_id, conditions, params)
        where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions) if conditions else sql.SQL("")
        with self.pool.connection() as conn:
            row = conn.execute(sql.SQL("SELECT count(*) AS n FROM task_dead_letters{}").format(where), params).fetchone()
        return int(row["n"])


def _dead_letter_filters(
    scope: str | None, scope_id: str | None, task_type: str | None, since: datetime | None
) -> tuple[list[sql.Composable], list[Any]]:
    """WHERE conditions (joined with AND by the caller) and their parameters for the given filters."""
    conditions: list[sql.Composable] = []
    params: list[Any] = []
    for column, value in (("scope", scope), ("scope_id", scope_id), ("task_type", task_type)):
        if value is not None:
            conditions.append(sql.SQL("{} = %s").format(sql.Identifier(column)))
            params.append(value)
    if since is not None:
        conditions.append(sql.SQL("failed_at >= %s"))
        params.append(since)
    return conditions, params


def _tenant_condition(tenant_id: int | None, conditions: list[sql.Composable], params: list[Any]) -> None:
    """Confine a dead-letter statement to one tenant's rows (None: leave it across tenants)."""
    if tenant_id is not None:
        conditions.append(sql.SQL("tenant_id = %s"))
        params.append(int(tenant_id))


def _parse_cursor(cursor: int | str) -> int:
    """A page cursor is a positive integer id (as int or decimal text). Raises ValueError otherwise."""
    if isinstance(cursor, bool):
        raise ValueError(f"invalid cursor {cursor!r}")
    try:
        value = int(cursor)
    except (TypeError, ValueError):
        raise ValueError(f"invalid cursor {cursor!r}: expected a dead-letter id") from None
    if isinstance(cursor, float) or value <= 0:
        raise ValueError(f"invalid cursor {cursor!r}: expected a positive integer id")
    return value
