"""The PostgreSQL connection pool and the schema migrations.

One ``psycopg_pool.ConnectionPool`` per process; borrow a connection with ``with pool.connection()``
and never hold it across calls. Rows come back as dicts (``psycopg.rows.dict_row``).

The pool is where PostgreSQL's connection failures become kbwiki's: a borrow that cannot get a
connection, or a statement whose connection is lost (the server ended the session, an idle-in-
transaction timeout included), raises ``wiki.errors.DatabaseUnreachable`` (the driver's error kept
as ``__cause__``). Other database errors (a lock timeout, a statement timeout, a unique violation)
are the statement's own answer and pass unchanged.

Every session gets :class:`SessionLimits` (statement, lock and idle-in-transaction timeouts), so a
frozen or runaway session cannot hold its locks for long.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
from psycopg import Connection, sql
from psycopg.rows import dict_row
from psycopg_pool import ConnectionPool, PoolTimeout
from yoyo import get_backend, read_migrations

from wiki.errors import BadInput, BadSetting, DatabaseUnreachable, RollbackRefused
from wiki.settings import Settings

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"

_pool: Pool | None = None
_pool_lock = threading.Lock()


def yoyo_url(database_url: str) -> str:
    """yoyo wants ``postgresql+psycopg://``; accept the usual ``postgres(ql)://`` forms."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if database_url.startswith(prefix):
            return "postgresql+psycopg://" + database_url[len(prefix) :]
    raise BadInput(f"not a PostgreSQL URL: {database_url.split('@')[-1]!r}")


def apply_migrations(database_url: str) -> int:
    """Apply every pending migration under ``migrations/``; returns how many were applied (0 = no-op)."""
    backend = get_backend(yoyo_url(database_url))
    migrations = read_migrations(str(MIGRATIONS_DIR))
    with backend.lock():
        pending = backend.to_apply(migrations)
        backend.apply_migrations(pending)
    return len(pending)


def pending_migrations(database_url: str) -> list[str]:
    """The ids of the migrations under ``migrations/`` not yet applied to the database (read only)."""
    backend = get_backend(yoyo_url(database_url))
    return [m.id for m in backend.to_apply(read_migrations(str(MIGRATIONS_DIR)))]


#: Live rows of a table :func:`database_contents` counts exactly; above it, "more than" this.
#: The count reads at most this many rows (plus the soft-deleted ones it passes), so it costs
#: milliseconds whatever the KBs' size (40,000 documents each and more).
CONTENTS_COUNT_CAP = 10_000


@dataclass(frozen=True)
class DatabaseContents:
    """What a rollback would drop: the applied migrations, and the live (not deleted) KBs,
    documents and pages of every tenant. A count above ``CONTENTS_COUNT_CAP`` is
    ``CONTENTS_COUNT_CAP + 1`` ("more than")."""

    migrations: int
    kbs: int
    documents: int
    pages: int

    @property
    def holds_data(self) -> bool:
        """Whether a KB holds a document or a page."""
        return bool(self.documents or self.pages)

    def describe(self) -> str:
        """The counts in words: ``2 knowledge bases, 120 documents and more than 10,000 pages``."""

        def n(count: int, noun: str) -> str:
            shown = f"more than {CONTENTS_COUNT_CAP:,}" if count > CONTENTS_COUNT_CAP else f"{count:,}"
            return f"{shown} {noun}{'' if count == 1 else 's'}"

        return f"{n(self.kbs, 'knowledge base')}, {n(self.documents, 'document')} and {n(self.pages, 'page')}"


def _live_rows(conn: Connection, table: str) -> int:
    """Live rows of ``table`` (``deleted_at IS NULL``) up to ``CONTENTS_COUNT_CAP + 1``; 0 when
    the table does not exist (a database not, or not fully, migrated)."""
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
        return 0
    query = sql.SQL("SELECT count(*) FROM (SELECT 1 FROM {} WHERE deleted_at IS NULL LIMIT %s) AS live").format(
        sql.Identifier(table)
    )
    return conn.execute(query, (CONTENTS_COUNT_CAP + 1,)).fetchone()[0]


def _contents(database_url: str, migrations: int) -> DatabaseContents:
    with psycopg.connect(database_url) as conn:
        SessionLimits().apply(conn)
        return DatabaseContents(
            migrations=migrations,
            kbs=_live_rows(conn, "knowledge_bases"),
            documents=_live_rows(conn, "knowledges"),
            pages=_live_rows(conn, "wiki_pages"),
        )


def database_contents(database_url: str) -> DatabaseContents:
    """What ``rollback_migrations`` would drop (read only; bounded counts, see ``CONTENTS_COUNT_CAP``)."""
    backend = get_backend(yoyo_url(database_url))
    return _contents(database_url, len(backend.to_rollback(read_migrations(str(MIGRATIONS_DIR)))))


def rollback_migrations(database_url: str, *, allow_data: bool = False) -> int:
    """Roll back every applied migration, dropping every kbwiki table (tests and ``kbwiki migrate
    --rollback``, which asks first); returns the count.

    Raises ``RollbackRefused`` and drops nothing when a KB holds a document or a page, unless
    ``allow_data`` (checked under yoyo's lock, right before the rollback).
    """
    backend = get_backend(yoyo_url(database_url))
    migrations = read_migrations(str(MIGRATIONS_DIR))
    with backend.lock():
        applied = backend.to_rollback(migrations)
        if not allow_data and (contents := _contents(database_url, len(applied))).holds_data:
            raise RollbackRefused(f"the database holds {contents.describe()}: nothing was rolled back")
        backend.rollback_migrations(applied)
    return len(applied)


def _default_s(name: str) -> float:
    return float(Settings.model_fields[name].default)


@dataclass(frozen=True)
class SessionLimits:
    """PostgreSQL's timeouts for one session, in seconds (0: no limit); defaults are the settings'
    (``KBWIKI_DB_IDLE_IN_TRANSACTION_TIMEOUT_S``, ``KBWIKI_DB_LOCK_TIMEOUT_S``,
    ``KBWIKI_DB_STATEMENT_TIMEOUT_S``; ``wiki.settings`` says why those values).

    A session idle in a transaction longer than ``idle_in_transaction_s`` is ended by the server
    (its next statement raises ``DatabaseUnreachable`` through :class:`Pool`) and its locks are
    released; a lock wait longer than ``lock_s`` raises ``psycopg.errors.LockNotAvailable``
    (55P03), a statement longer than ``statement_s`` ``psycopg.errors.QueryCanceled`` (57014): the
    statement failed, the session lives. A statement that needs more sets its own with ``SET LOCAL``.
    Migrations run on yoyo's own connection, without these limits.
    """

    idle_in_transaction_s: float = field(default_factory=lambda: _default_s("db_idle_in_transaction_timeout_s"))
    lock_s: float = field(default_factory=lambda: _default_s("db_lock_timeout_s"))
    statement_s: float = field(default_factory=lambda: _default_s("db_statement_timeout_s"))

    @classmethod
    def from_settings(cls, settings: Settings) -> SessionLimits:
        """The limits ``settings`` give."""
        return cls(
            idle_in_transaction_s=settings.db_idle_in_transaction_timeout_s,
            lock_s=settings.db_lock_timeout_s,
            statement_s=settings.db_statement_timeout_s,
        )

    def apply(self, conn: Connection) -> None:
        """Set the limits for the rest of ``conn``'s session (one round trip; committed unless autocommit)."""
        # milliseconds, PostgreSQL's unit; a positive limit never rounds down to 0 ("no limit")
        ms = [
            0 if s <= 0 else max(1, round(s * 1000))
            for s in (self.idle_in_transaction_s, self.lock_s, self.statement_s)
        ]
        conn.execute(
            "SELECT set_config('idle_in_transaction_session_timeout', %s, false),"
            " set_config('lock_timeout', %s, false), set_config('statement_timeout', %s, false)",
            [str(v) for v in ms],
        )
        if not conn.autocommit:
            conn.commit()


def _configure(conn: Connection, limits: SessionLimits | None = None) -> None:
    """Session settings every pooled connection gets: ``limits`` (:class:`SessionLimits`, the
    defaults when None), the trigram threshold of wiki.dedup, and a plan made for each execution's
    own values (``plan_cache_mode = force_custom_plan``).

    psycopg prepares a statement on the server from its 5th execution, and PostgreSQL then tries
    a generic plan, made without the values, and keeps it when its estimate looks no worse. For
    the lookups of a batch of keys (``unnest`` of an array) the generic plan guesses the array's
    size and the KB's: lint's title lookup went from 4 ms to 2.9 s a window after its 10th
    execution at 40,000 pages (a walk of the KB per window). Planning each execution costs well
    under a millisecond."""
    from wiki.dedup import TRGM_THRESHOLD

    conn.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, false)", (str(TRGM_THRESHOLD),))
    conn.execute("SET plan_cache_mode = force_custom_plan")
    (limits or SessionLimits()).apply(conn)
    conn.commit()


#: SQLSTATEs of a session the server ended: its shutdown codes (57P01-3), and the timeouts that
#: end the session, not the statement: idle in transaction (25P03, psycopg raises it as an
#: InternalError), transaction (25P04, PostgreSQL 17) and idle session (57P05).
_LOST_STATES = frozenset({"57P01", "57P02", "57P03", "57P05", "25P03", "25P04"})


def connection_lost(exc: psycopg.Error) -> bool:
    """Whether ``exc`` says the session is gone (no SQLSTATE: the client lost it; 08xxx; the server
    ended it, see ``_LOST_STATES``), not that a statement failed (a lock timeout 55P03 or a
    statement timeout or cancel 57014 keeps its own error)."""
    if isinstance(exc, PoolTimeout):
        return True
    state = exc.sqlstate
    if state in _LOST_STATES:
        return True
    return isinstance(exc, psycopg.OperationalError) and (state is None or state.startswith("08"))


#: What psycopg says of a text parameter holding NUL, which PostgreSQL cannot store.
_NUL_PARAMETER = "cannot contain NUL"


class Pool(ConnectionPool):
    """A ``ConnectionPool`` whose borrows raise ``DatabaseUnreachable`` for a lost server
    (:func:`connection_lost`), and ``BadInput`` for a text parameter PostgreSQL cannot take (a NUL,
    a lone surrogate: a reader's query, slug or tool argument, refused, not a server error)."""

    @contextlib.contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Connection]:
        try:
            with super().connection(timeout) as conn:
                yield conn
        except UnicodeEncodeError as exc:
            raise BadInput(f"a value holds a character that cannot be stored ({exc.reason})") from exc
        except psycopg.DataError as exc:
            if _NUL_PARAMETER not in str(exc):
                raise
            raise BadInput("a value holds a NUL character") from exc
        except psycopg.Error as exc:
            if not connection_lost(exc):
                raise
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise DatabaseUnreachable(f"PostgreSQL: {type(exc).__name__}: {detail}") from exc


def make_pool(
    database_url: str,
    min_size: int = 1,
    max_size: int = 10,
    timeout_s: float = 30,
    limits: SessionLimits | None = None,
) -> Pool:
    """Open a pool of autocommit=False connections returning dict rows, each checked before it is
    lent and configured with ``limits`` (:class:`SessionLimits`; the settings' defaults when None);
    waits until one connects.

    ``timeout_s``: how long a borrower waits for a connection before ``DatabaseUnreachable``
    (psycopg_pool's default, 30 s). Raises ``DatabaseUnreachable`` when the server cannot be
    reached within 30 s of opening.
    """
    pool = Pool(
        database_url,
        min_size=min_size,
        max_size=max(min_size, max_size),
        timeout=timeout_s,
        kwargs={"row_factory": dict_row},
        configure=functools.partial(_configure, limits=limits),
        # An empty query before lending a connection (one round trip): connections broken by a
        # server restart (``kbwiki down``/``up``, a crash the supervisor restarts) are replaced
        # instead of failing the next actor that borrows one.
        check=Pool.check_connection,
        # psycopg_pool retries a failed connection with doubling delays until this timeout, then
        # connects again when a borrower waits: with its default (300 s) a pool whose server came
        # back could wait 16 s or more for its next attempt; 5 s bounds that at a few seconds.
        reconnect_timeout=5.0,
        open=False,
        name="kbwiki",
    )
    try:
        pool.open(wait=True, timeout=30)
    except PoolTimeout as exc:
        pool.close()
        raise DatabaseUnreachable(f"PostgreSQL did not answer within 30 s: {exc}") from exc
    return pool


def get_pool(settings: Settings) -> Pool:
    """The process-wide pool, opened on first use from ``settings``."""
    global _pool
    with _pool_lock:
        if _pool is None:
            if not settings.database_url:
                raise BadSetting("DATABASE_URL is not set (the kbwiki command sets it for embedded servers)")
            _pool = make_pool(
                settings.database_url,
                settings.db_pool_min,
                settings.db_pool_max,
                settings.db_pool_timeout_s,
                SessionLimits.from_settings(settings),
            )
        return _pool


def borrow(pool: ConnectionPool, conn: Connection | None) -> AbstractContextManager[Connection]:
    """The caller's connection (its transaction, no commit here), or a pooled one committed on exit.

    Repositories take an optional ``conn`` so several writes can share one transaction.
    """
    return nullcontext(conn) if conn is not None else pool.connection()


def keyset_rows(pool: ConnectionPool, query: str, params: tuple, after: object, window: int) -> Iterator[dict]:
    """Every row ``query`` selects, read ``window`` rows a statement (a keyset cursor: memory is
    one window whatever the table). ``query`` takes ``params``, then the ``id`` to read after
    (``after`` first) and the window; it orders by ``id``. No connection is held between windows."""
    while True:
        with pool.connection() as conn:
            rows = conn.execute(query, (*params, after, window)).fetchall()
        if not rows:
            return
        yield from rows
        after = rows[-1]["id"]


def advisory_xact_lock(conn: Connection, key: str, shared: bool = False) -> None:
    """Serialize a critical section across processes until ``conn``'s transaction ends; ``shared``
    holders only exclude exclusive ones."""
    fn = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    conn.execute(f"SELECT {fn}(hashtextextended(%s, 0))", (key,))


#: Tables whose statistics the lookups' plans depend on, and when they count as stale: more rows
#: changed since the last ANALYZE than STALE_FRACTION of the live rows plus STALE_ROWS (autovacuum's
#: own rule is 10 % + 50 rows, checked once a minute by default).
ANALYZED_TABLES = ("wiki_pages", "wiki_title_keys", "wiki_links", "knowledges", "wiki_extractions")
STALE_FRACTION = 0.2
STALE_ROWS = 500


def refresh_statistics(pool: ConnectionPool, tables: tuple[str, ...] = ANALYZED_TABLES) -> list[str]:
    """ANALYZE those of ``tables`` whose statistics are stale; returns their names.

    A KB filling up fast outgrows its statistics before autovacuum's next round: a lookup planned
    for an empty table then joins every row of the table against every phrase (seen during
    linux-doc ingestion: 0.3-2.7 s per title-key lookup instead of ~10 ms), and a cached plan
    keeps that shape until the next ANALYZE. ANALYZE reads a fixed-size sample (300 × the
    statistics target rows), so the cost does not grow with the KB, and the stale rule makes it
    rarer as tables grow. One session at a time runs it (a try-lock); others skip.
    """
    with pool.connection() as conn:
        if not conn.execute(
            "SELECT pg_try_advisory_xact_lock(hashtextextended('kbwiki-analyze', 0)) AS got"
        ).fetchone()["got"]:
            return []
        stale = [
            r["relname"]
            for r in conn.execute(
                "SELECT relname FROM pg_stat_user_tables WHERE relname = ANY(%s)"
                " AND n_mod_since_analyze > %s * n_live_tup + %s ORDER BY relname",
                (list(tables), STALE_FRACTION, STALE_ROWS),
            )
        ]
        for table in stale:
            conn.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
    return stale
