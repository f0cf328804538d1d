"""The dead-letter archive (``task_dead_letters``): work that failed for good, kept so it can be re-sent.

A letter is open until the document it names (``related_id``, the knowledge id) finishes: reaches
``done`` or is deleted on purpose. Then it is resolved (``resolved_at``, ``resolution``) and kept as
history; reads count and list open letters unless asked otherwise. A letter naming no document (a
KB-wide message) stays open until it is requeued or purged.

Write methods take an optional ``conn`` as ``repos.pending_ops`` does. Limits follow the column
sizes of ``migrations/0001_task_queue.sql``; values that do not fit raise ``wiki.errors.BadInput``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from psycopg import Connection, sql
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool
from pydantic import BaseModel

from repos.db import borrow
from repos.pending_ops import PendingOp
from repos.queue_common import WIDTHS, check_width, int_ids, require, strip_nul, truncate_error
from wiki.errors import BadInput
from wiki.lanes import SCOPE_KB

#: Dead letters per page of ``list``: the default and the cap.
DEFAULT_DEAD_LETTER_PAGE = 50
MAX_DEAD_LETTER_PAGE = 200


class Resolution(StrEnum):
    """Why a dead letter was resolved (``task_dead_letters.resolution``)."""

    DOCUMENT_DONE = "document_done"
    DOCUMENT_DELETED = "document_deleted"
    KB_DELETED = "kb_deleted"  # every letter of a KB deleted whole
    LANE_DRAINED = "lane_drained"  # a lane trigger's letter once the KB's lanes are empty


# A document is finished when done or deleted; the resolution of a finished document's
# status (``k.status``), as SQL and its parameters.
_RESOLUTION_SQL = "CASE k.status WHEN 'done' THEN %s ELSE %s END"
_RESOLUTION_PARAMS = (Resolution.DOCUMENT_DONE.value, Resolution.DOCUMENT_DELETED.value)


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
    resolved_at: datetime | None = None
    resolution: str = ""


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
        kept elsewhere while the database was down brings its own). A letter whose document
        (``related_id`` of ``tenant_id``) is already done or deleted is stored resolved. Raises ``BadInput`` when
        ``task_type`` or ``scope`` is empty or a field is wider than its column.
        """
        require(task_type=task_type, scope=scope)
        check_width("scope_id", scope_id)
        check_width("related_id", related_id)
        # Resolved at once when its document has finished already: a letter spooled during an
        # outage is drained after the document got done another way (one primary-key lookup).
        with borrow(self.pool, conn) as c:
            row = c.execute(
                "WITH k AS (SELECT status FROM knowledges WHERE id = %s AND tenant_id = %s"
                " AND status IN ('done', 'deleted'))"
                " INSERT INTO task_dead_letters (tenant_id, task_type, scope, scope_id, related_id, payload,"
                " last_error, fail_count, failed_at, resolved_at, resolution)"
                " SELECT %s, %s, %s, %s, %s, %s, %s, %s, coalesce(%s::timestamptz, now()),"
                f" (SELECT now() FROM k), coalesce((SELECT {_RESOLUTION_SQL} FROM k), '')"
                " RETURNING *",
                (
                    related_id,
                    int(tenant_id),
                    int(tenant_id),
                    task_type,
                    scope,
                    scope_id,
                    related_id,
                    Jsonb(strip_nul(payload or {})),
                    truncate_error(last_error),
                    int(fail_count),
                    failed_at,
                    *_RESOLUTION_PARAMS,
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
        resolved_too: bool = False,
    ) -> list[DeadLetter]:
        """One page of open dead letters (``resolved_too``: resolved ones as well), newest first (id
        descending), filtered by the given fields.

        ``tenant_id`` keeps that tenant's rows only (None: every tenant's, for operators of the
        whole deployment; 0 is the tenant of messages that named none). ``cursor`` is the last id
        of the previous page (rows with a smaller id follow); ``since`` keeps rows with
        ``failed_at >= since``; ``limit`` is clamped to 1..200. Raises ``BadInput`` when ``cursor``
        is not a positive integer.
        """
        conditions, params = _dead_letter_filters(scope, scope_id, task_type, since)
        _tenant_condition(tenant_id, conditions, params)
        if not resolved_too:
            conditions.append(sql.SQL("resolved_at IS NULL"))
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
        empty list deletes nothing); the other filters are those of ``list``. Raises ``BadInput``,
        deleting nothing, when no filter is given and ``everything`` is False: no filter must never
        silently mean "every row".
        """
        conditions, params = _dead_letter_filters(scope, scope_id, task_type, since)
        if ids is not None:
            conditions.append(sql.SQL("id = ANY(%s)"))
            params.append(int_ids(ids))
        if not conditions and not everything:
            raise BadInput("purge needs a filter (ids, scope, task_type or since) or everything=True")
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
        require(task_type=task_type)
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
                    op.dedup_key[: WIDTHS["related_id"]],
                    Jsonb(strip_nul(op.model_dump(mode="json"))),
                    truncate_error(error),
                    op.fail_count,
                ),
            ).fetchone()
        return DeadLetter.model_validate(row)

    def resolve_finished(self, knowledge_ids: Sequence[str], *, conn: Connection | None = None) -> int:
        """Resolve the open dead letters of those of ``knowledge_ids`` whose document is now done or
        deleted (of the letter's tenant); returns how many were resolved.

        Called where documents reach done or deleted, with that transaction's ``conn``, so the
        statuses it reads are the ones being committed. Bounded by the ids given (a reduce batch's
        documents): one statement on the partial index of open letters by related id.
        """
        ids = [str(i) for i in knowledge_ids if i]
        if not ids:
            return 0
        with borrow(self.pool, conn) as c:
            return c.execute(
                f"UPDATE task_dead_letters d SET resolved_at = now(), resolution = {_RESOLUTION_SQL}"
                " FROM knowledges k WHERE d.resolved_at IS NULL AND d.related_id = ANY(%s)"
                " AND k.id = d.related_id AND k.tenant_id = d.tenant_id AND k.status IN ('done', 'deleted')",
                (*_RESOLUTION_PARAMS, ids),
            ).rowcount

    def resolve_kb(self, kb_id: str, *, conn: Connection | None = None) -> int:
        """Resolve every open dead letter of KB ``kb_id`` (``kb_deleted``); returns how many.

        Called in the transaction that deletes the KB whole: nothing of it can be sent again. One
        statement on the index by scope.
        """
        with borrow(self.pool, conn) as c:
            return c.execute(
                "UPDATE task_dead_letters SET resolved_at = now(), resolution = %s"
                " WHERE resolved_at IS NULL AND scope = %s AND scope_id = %s",
                (Resolution.KB_DELETED.value, SCOPE_KB, kb_id),
            ).rowcount

    def resolve_drained_triggers(self, task_types: Sequence[str], limit: int = 100) -> int:
        """Resolve (``lane_drained``) up to ``limit`` open letters of the lane triggers ``task_types``
        (messages naming no document) whose KB has no lane row left; returns how many.

        A trigger carries no work: the lane's rows are in PostgreSQL and the recovery sweeper
        triggers every lane with rows again, so once the KB's lanes are empty the dead trigger cost
        nothing but time (a fault run ended with one such ``wiki_ingest`` letter counted as open).
        A trigger that keeps failing while rows wait stays open. Called by the sweeper's pass;
        bounded by ``limit`` (the index by task type finds the candidates).
        """
        with self.pool.connection() as c:
            return c.execute(
                "UPDATE task_dead_letters SET resolved_at = now(), resolution = %s WHERE id IN ("
                " SELECT d.id FROM task_dead_letters d WHERE d.resolved_at IS NULL AND d.related_id = ''"
                " AND d.task_type = ANY(%s) AND d.scope = %s AND NOT EXISTS ("
                "  SELECT 1 FROM task_pending_ops o WHERE o.scope = d.scope AND o.scope_id = d.scope_id)"
                " ORDER BY d.id LIMIT %s)",
                (Resolution.LANE_DRAINED.value, list(task_types), SCOPE_KB, limit),
            ).rowcount

    def of_error(
        self, tenant_id: int, task_type: str, scope: str, scope_id: str, error_head: str, skip_mark: str, limit: int
    ) -> list[DeadLetter]:
        """Up to ``limit`` open dead letters of one scope whose ``last_error`` starts with ``error_head``
        (an error class and colon: ``"LLMUnavailable:"``), oldest first, leaving out those whose op
        payload's ``auto_requeued`` is ``skip_mark`` (sent again once already for that reason)."""
        pattern = error_head.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        with self.pool.connection() as conn:
            rows = conn.execute(
                "SELECT * FROM task_dead_letters WHERE tenant_id = %s AND task_type = %s AND scope = %s"
                " AND scope_id = %s AND resolved_at IS NULL AND last_error LIKE %s"
                " AND COALESCE(payload->'payload'->>'auto_requeued', '') <> %s ORDER BY id LIMIT %s",
                (tenant_id, task_type, scope, scope_id, pattern, skip_mark, limit),
            ).fetchall()
        return [DeadLetter.model_validate(r) for r in rows]

    def count(self, *, tenant_id: int | None, scope: str | None = None, scope_id: str | None = None) -> int:
        """Open dead letters of ``tenant_id`` (None: every tenant), of a scope (and scope_id) when given."""
        conditions, params = _dead_letter_filters(scope, scope_id, None, None)
        _tenant_condition(tenant_id, conditions, params)
        conditions.append(sql.SQL("resolved_at IS NULL"))
        where = sql.SQL(" WHERE ") + sql.SQL(" AND ").join(conditions)
        with self.pool.connection() as conn:
            row = conn.execute(
                sql.SQL("SELECT count(*) AS n FROM task_dead_letters{}").format(where), params
            ).fetchone()
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
    """A page cursor is a positive integer id (as int or decimal text). Raises ``BadInput`` otherwise."""
    if isinstance(cursor, bool):
        raise BadInput(f"invalid cursor {cursor!r}")
    try:
        value = int(cursor)
    except (TypeError, ValueError):
        raise BadInput(f"invalid cursor {cursor!r}: expected a dead-letter id") from None
    if isinstance(cursor, float) or value <= 0:
        raise BadInput(f"invalid cursor {cursor!r}: expected a positive integer id")
    return value
