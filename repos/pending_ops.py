"""The durable pending-op queue (``task_pending_ops``): enqueue, claim, release, move between lanes, delete.

A lane is ``(task_type, scope, scope_id)``, e.g. ``("wiki:ingest", "knowledge_base", <kb id>)``.
Rows are the work; a Dramatiq message only says "drain this lane". Every write method takes an
optional ``conn``: given, it runs inside the caller's transaction and does not commit (so several
moves are one transaction); omitted, it borrows a pooled connection committed on exit.

Limits follow the column sizes of ``migrations/0001_task_queue.sql``; values that do not fit raise
``wiki.errors.BadInput`` (a ``ValueError``) before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from psycopg import Connection
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.db import borrow
from repos.queue_common import check_width, int_ids, require
from wiki.errors import BadInput
from wiki.lanes import SCOPE_KB

#: Bounds of ``peek``/``claim`` page sizes (a page never grows with the KB) and of ``lanes_with_rows``.
MAX_PEEK = 1000
MAX_CLAIM = 1000
MAX_LANES = 10_000


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
    claimed_msg: str | None = None
    not_before: datetime | None = None


class Lane(BaseModel):
    """A lane that has rows; ``tenant_id`` is the smallest tenant seen in it, ``rows`` counts claimed rows too."""

    task_type: str
    scope: str
    scope_id: str
    tenant_id: int
    rows: int


def _stale_s(stale_after_s: float) -> float:
    if stale_after_s < 0:
        raise BadInput("stale_after_s must be >= 0")
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
UPDATE task_pending_ops u SET claimed_at = now(), claimed_by = %(owner)s, claimed_msg = %(msg)s
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

        Raises ``BadInput`` (nothing written) when task_type, scope, scope_id or op is empty or any
        text is wider than its column.
        """
        params = self._op_params(tenant_id, task_type, scope, scope_id, op, dedup_key, payload)
        with borrow(self.pool, conn) as c:
            row = c.execute(_INSERT_OP, params).fetchone()
        return PendingOp.model_validate(row)

    def enqueue_chunks(
        self,
        *,
        tenant_id: int,
        task_type: str,
        scope: str,
        scope_id: str,
        op: str,
        key: str,
        items: Sequence[str],
        chunk: int,
        conn: Connection | None = None,
    ) -> int:
        """Append ops to the lane carrying ``items`` in order, ``chunk`` per op as ``payload[key]``
        (so several runs can share the work out); returns the ops written. Raises as ``enqueue``."""
        for i in range(0, len(items), chunk):
            self.enqueue(
                tenant_id=tenant_id,
                task_type=task_type,
                scope=scope,
                scope_id=scope_id,
                op=op,
                payload={key: list(items[i : i + chunk])},
                conn=conn,
            )
        return -(-len(items) // chunk)

    def enqueue_keys(
        self,
        *,
        tenant_id: int,
        task_type: str,
        scope: str,
        scope_id: str,
        op: str,
        keys: Sequence[str],
        conn: Connection | None = None,
    ) -> int:
        """Append one op (empty payload) per dedup key of ``keys`` that has no unclaimed op waiting
        in the lane already, in one statement; returns the ops written. A key being worked on (its
        op claimed) is queued again: the work may have read what changed since. Raises as
        ``enqueue``, also for an empty key (it would be a key of its own per row)."""
        keys = sorted(set(keys))
        if not keys:
            return 0
        params = self._op_params(tenant_id, task_type, scope, scope_id, op, "", None)
        for key in keys:
            require(dedup_key=key)
        with borrow(self.pool, conn) as c:
            return c.execute(
                "INSERT INTO task_pending_ops (tenant_id, task_type, scope, scope_id, op, dedup_key, payload)"
                " SELECT %(tenant_id)s, %(task_type)s::varchar, %(scope)s::varchar, %(scope_id)s::varchar, %(op)s, k,"
                " %(payload)s"
                " FROM (SELECT DISTINCT k FROM unnest(%(keys)s::text[]) AS k) AS keys"
                f" WHERE NOT EXISTS (SELECT 1 FROM task_pending_ops WHERE {_LANE} AND dedup_key = k"
                "  AND claimed_at IS NULL)",
                {**params, "keys": keys},
            ).rowcount

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
        deleted concurrently either refuses the op or sees it. Raises ``BadInput`` when ``scope`` is
        not ``"knowledge_base"`` or a field is invalid (as ``enqueue``).
        """
        params = self._op_params(tenant_id, task_type, scope, scope_id, op, dedup_key, payload)
        if scope != SCOPE_KB:
            raise BadInput(f"enqueue_if_kb_active needs scope={SCOPE_KB!r}, got {scope!r}")
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
        require(task_type=task_type, scope=scope, scope_id=scope_id, op=op)
        check_width("dedup_key", dedup_key or "")
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
        msg: str | None = None,
    ) -> list[PendingOp]:
        """Claim up to ``limit`` dedup keys of the lane (oldest key first) and return their rows in id order.

        A key is taken whole: every unclaimed (or stale-claimed) row of it in the lane. A key with a
        fresh claim (``claimed_at`` newer than ``stale_after_s`` seconds) is skipped entirely, so
        rows enqueued after a claim wait for it to settle. Rows with an empty key are each their own
        key. Representatives are locked with FOR UPDATE SKIP LOCKED, so concurrent claimers get
        disjoint sets. ``limit`` <= 0 claims nothing; it is capped at 1000. A key whose rows back off
        after a failure (``not_before`` in the future) is skipped. ``owner`` (a worker id) is stored
        in ``claimed_by``: when that worker stops heartbeating its claims are taken back at once
        (``repos.liveness``), without waiting ``stale_after_s``. ``msg`` (the claiming message's
        tag, ``repos.broker_messages.tag``) is stored in ``claimed_msg``: once that message is gone
        from Redis the owner's heartbeat gives the claim back (``stages.message_claims``).

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
            "msg": msg,
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

    def release(
        self, ids: Sequence[int], conn: Connection | None = None, by: str | None = None, not_before_s: float = 0.0
    ) -> int:
        """Clear the claim of these rows (they become claimable again); returns rows changed.

        ``by`` (a worker id) releases only the rows that worker still holds: a claim taken back
        from it and claimed by another worker meanwhile stays. ``not_before_s`` > 0 keeps the rows
        from being claimed again for that many seconds (a failed op's backoff).
        """
        ids = int_ids(ids)
        if not ids:
            return 0
        query = (
            "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL, claimed_msg = NULL,"
            " not_before = CASE WHEN %(delay)s > 0 THEN now() + make_interval(secs => %(delay)s) END"
            " WHERE id = ANY(%(ids)s)"
        )
        if by is not None:
            query += " AND claimed_by = %(by)s"
        with borrow(self.pool, conn) as c:
            return c.execute(query, {"ids": ids, "by": by, "delay": float(not_before_s)}).rowcount

    def wake(self, task_type: str, scope: str, scope_id: str, conn: Connection | None = None) -> int:
        """Make the lane's unclaimed rows that wait for a ``not_before`` in the future claimable now
        (a paused KB resumed: its ops were released with the pause's recheck delay); returns rows
        changed. A failed op backing off is woken too: that brings its next try forward, never
        adds one (its fail count is unchanged)."""
        with borrow(self.pool, conn) as c:
            return c.execute(
                f"UPDATE task_pending_ops SET not_before = NULL WHERE {_LANE}"
                " AND claimed_at IS NULL AND not_before > now()",
                {"task_type": task_type, "scope": scope, "scope_id": scope_id},
            ).rowcount

    def adopt(self, ids: Sequence[int], owner: str, conn: Connection | None = None, msg: str | None = None) -> int:
        """Make ``owner`` (a worker id) the holder of these rows' claims, keeping rows that are not
        claimed unclaimed; returns rows changed. For the worker that runs a message another worker's
        claim sent: liveness then takes the claim back when the runner dies, not its sender.
        ``msg`` (the running message's tag) replaces ``claimed_msg`` when given."""
        ids = int_ids(ids)
        if not ids:
            return 0
        with borrow(self.pool, conn) as c:
            return c.execute(
                "UPDATE task_pending_ops SET claimed_by = %s, claimed_at = now(),"
                " claimed_msg = coalesce(%s, claimed_msg)"
                " WHERE id = ANY(%s) AND claimed_at IS NOT NULL",
                (owner, msg, ids),
            ).rowcount

    def hand_on(self, tags: dict[int, str], from_msg: str | None, conn: Connection | None = None) -> int:
        """Tie the claims of rows ``{op id: message tag}`` to the messages just sent for them (a pump
        claims ops, then sends one message per op); returns rows changed. Only a claim still tied
        to ``from_msg`` (the sender's own message, or None) changes: a claim the sent message
        already adopted, or one released meanwhile, is left as it is."""
        ids = int_ids(tags)
        if not ids:
            return 0
        with borrow(self.pool, conn) as c:
            return c.execute(
                "UPDATE task_pending_ops t SET claimed_msg = v.tag"
                " FROM unnest(%s::bigint[], %s::text[]) AS v(id, tag)"
                " WHERE t.id = v.id AND t.claimed_at IS NOT NULL AND t.claimed_msg IS NOT DISTINCT FROM %s",
                (ids, [tags[i] for i in ids], from_msg),
            ).rowcount

    def message_tags(self, owner: str) -> set[str]:
        """The distinct ``claimed_msg`` of the claims ``owner`` (a worker id) holds (claims without
        one are left out). One index scan (``idx_task_pending_ops_claimed_by``): a worker holds a few."""
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT DISTINCT claimed_msg FROM task_pending_ops"
                " WHERE claimed_by = %s AND claimed_at IS NOT NULL AND claimed_msg IS NOT NULL",
                (owner,),
            ).fetchall()
        return {r["claimed_msg"] for r in rows}

    def release_messages(self, owner: str, tags: Sequence[str]) -> int:
        """Clear the claims ``owner`` holds for the messages ``tags`` (gone from Redis); returns rows
        released. A claim re-taken meanwhile (another owner or message) is left alone, and so is a
        row another transaction holds locked (``SKIP LOCKED``, as ``release_all``: the heartbeat
        runs this and must not wait behind a batch; the next beat sees the row again)."""
        if not tags:
            return 0
        with self.pool.connection() as conn:
            return conn.execute(
                "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL, claimed_msg = NULL WHERE id IN ("
                " SELECT id FROM task_pending_ops WHERE claimed_by = %s AND claimed_msg = ANY(%s)"
                " AND claimed_at IS NOT NULL FOR UPDATE SKIP LOCKED)",
                (owner, list(tags)),
            ).rowcount

    def delete_by_ids(self, ids: Sequence[int], conn: Connection | None = None) -> int:
        """Delete these rows (work done); returns rows deleted. Empty input is a no-op."""
        ids = int_ids(ids)
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
        nothing). Raises ``BadInput`` on an empty or too long ``to_task_type``.
        """
        require(task_type=to_task_type)
        ids = int_ids(ids)
        if not ids:
            return 0
        query = (
            "UPDATE task_pending_ops SET task_type = %(to)s, claimed_at = NULL, claimed_by = NULL, claimed_msg = NULL,"
            " fail_count = 0, not_before = NULL, enqueued_at = now(), payload = payload || %(patch)s"
            " WHERE id = ANY(%(ids)s)"
        )
        if from_task_type is not None:
            query += " AND task_type = %(from)s"
        params = {"to": to_task_type, "patch": Jsonb(payload_patch or {}), "ids": ids, "from": from_task_type}
        with borrow(self.pool, conn) as c:
            return c.execute(query, params).rowcount

    def incr_fail_count(
        self, id: int, conn: Connection | None = None, payload_patch: dict[str, Any] | None = None
    ) -> int | None:
        """Add one to the row's ``fail_count`` (and merge ``payload_patch`` into its payload, as
        :meth:`move` does) and return the new value; None when the row is gone."""
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "UPDATE task_pending_ops SET fail_count = fail_count + 1, payload = payload || %s"
                " WHERE id = %s RETURNING fail_count",
                (Jsonb(payload_patch or {}), int(id)),
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

    def take_unclaimed_payload_items(
        self, task_type: str, scope: str, scope_id: str, key: str, conn: Connection | None = None
    ) -> set[str]:
        """Delete the lane's unclaimed rows and return the strings in the ``key`` arrays of their
        payloads (for example the slugs waiting in a KB's finalize lane, to queue them again
        merged): one statement, bounded by the lane, not the KB. A row being claimed meanwhile
        is left to its claimer."""
        with borrow(self.pool, conn) as c:
            rows = c.execute(
                f"DELETE FROM task_pending_ops WHERE {_LANE} AND claimed_at IS NULL"
                " RETURNING payload -> %(key)s AS items",
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

        Raises ``EmptyDedupKey`` (or ``BadInput`` for a lane field), deleting nothing, when
        ``dedup_key`` or a lane field is empty: an empty key must never mean "every row".
        """
        require(task_type=task_type, scope=scope, scope_id=scope_id, dedup_key=dedup_key)
        query = f"DELETE FROM task_pending_ops WHERE {_LANE} AND dedup_key = %(dedup_key)s"
        params = {"task_type": task_type, "scope": scope, "scope_id": scope_id, "dedup_key": dedup_key}
        if op is not None:
            query += " AND op = %(op)s"
            params["op"] = op
        with borrow(self.pool, conn) as c:
            return c.execute(query, params).rowcount

    def delete_by_dedup_keys(
        self,
        task_types: Sequence[str],
        scope: str,
        scope_id: str,
        dedup_keys: Sequence[str],
        op: str,
        conn: Connection | None = None,
    ) -> int:
        """``delete_by_dedup_key`` for many keys and lanes of one scope in one statement: the rows
        of ``op`` whose dedup key is among ``dedup_keys``; returns rows deleted. Raises as
        ``delete_by_dedup_key`` (an empty key or lane field deletes nothing)."""
        if not dedup_keys:
            return 0
        require(scope=scope, scope_id=scope_id, op=op)
        for task_type in task_types:
            require(task_type=task_type)
        for key in dedup_keys:
            require(dedup_key=key)
        with borrow(self.pool, conn) as c:
            return c.execute(
                "DELETE FROM task_pending_ops WHERE task_type = ANY(%s) AND scope = %s AND scope_id = %s"
                " AND dedup_key = ANY(%s) AND op = %s",
                (list(task_types), scope, scope_id, sorted(set(dedup_keys)), op),
            ).rowcount

    def enqueue_keys_if_kb_active(
        self,
        *,
        tenant_id: int,
        task_type: str,
        scope_id: str,
        op: str,
        keys: Sequence[str],
        payload_key: str,
        conn: Connection | None = None,
    ) -> int | None:
        """Append one op per dedup key of ``keys`` (payload ``{payload_key: key}``) to the KB lane
        ``task_type``, only into a live KB (id = ``scope_id``) of ``tenant_id``, in one statement
        that locks the KB row FOR SHARE like ``enqueue_if_kb_active``; returns the ops written, or
        None when the KB refused them (nothing written). Raises ``BadInput`` as ``enqueue``."""
        keys = sorted(set(keys))
        params = self._op_params(tenant_id, task_type, SCOPE_KB, scope_id, op, "", None)
        for key in keys:
            require(dedup_key=key)
        with borrow(self.pool, conn) as c:
            kb = c.execute(
                "SELECT id FROM knowledge_bases WHERE id = %(scope_id)s AND tenant_id = %(tenant_id)s"
                " AND deleted_at IS NULL FOR SHARE",
                params,
            ).fetchone()
            if kb is None:
                return None
            return c.execute(
                "INSERT INTO task_pending_ops (tenant_id, task_type, scope, scope_id, op, dedup_key, payload)"
                " SELECT %(tenant_id)s, %(task_type)s, %(scope)s, %(scope_id)s, %(op)s, k,"
                " jsonb_build_object(%(payload_key)s::text, k)"
                " FROM unnest(%(keys)s::text[]) WITH ORDINALITY AS u(k, n) ORDER BY n",
                {**params, "keys": keys, "payload_key": payload_key},
            ).rowcount

    def delete_by_scope(self, scope: str, scope_id: str, conn: Connection | None = None) -> int:
        """Delete every row of the scope in all lanes (KB deleted); returns rows deleted. ``BadInput`` on empty args."""
        require(scope=scope, scope_id=scope_id)
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
        """Clear every claim of every lane (the messages behind them may be lost); returns rows released.

        Rows another transaction holds locked are skipped (``SKIP LOCKED``): the heartbeat runs
        this and must not wait behind a batch, and such a row is being settled by that batch, or,
        when its worker froze, is taken back by the reap once PostgreSQL ended the frozen session."""
        with self.pool.connection() as conn:
            return conn.execute(
                "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL, claimed_msg = NULL WHERE id IN ("
                " SELECT id FROM task_pending_ops WHERE claimed_at IS NOT NULL FOR UPDATE SKIP LOCKED)"
            ).rowcount

    def reclaim_stale(self, stale_after_s: float) -> int:
        """Clear claims older than ``stale_after_s`` seconds (their worker died); returns rows released."""
        with self.pool.connection() as conn:
            return conn.execute(
                "UPDATE task_pending_ops SET claimed_at = NULL, claimed_by = NULL, claimed_msg = NULL"
                f" WHERE claimed_at <= {_CUTOFF}",
                {"stale": _stale_s(stale_after_s)},
            ).rowcount
