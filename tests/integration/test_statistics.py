"""Plans stay right while a KB fills up: stale statistics are refreshed, and cross-link runs and
reduce batches that only add links write side by side."""

from __future__ import annotations

import threading
import time
import uuid

from repos.db import STALE_FRACTION, STALE_ROWS, refresh_statistics
from repos.pages import WikiPageRepository
from tests.support.pages import make_pages


def _analyze_count(pool, table: str) -> int:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT analyze_count + autoanalyze_count AS n FROM pg_stat_user_tables WHERE relname = %s", (table,)
        ).fetchone()["n"]


def test_a_table_that_outgrew_its_statistics_is_analyzed_once(pool):
    with pool.connection() as conn:  # autovacuum must not get there first; earlier tests left rows
        conn.execute("ALTER TABLE wiki_title_keys SET (autovacuum_enabled = false)")
        conn.execute("ANALYZE wiki_title_keys")
        live = conn.execute("SELECT count(*) AS n FROM wiki_title_keys").fetchone()["n"]
    before = _analyze_count(pool, "wiki_title_keys")
    kb_id = f"stats-{uuid.uuid4().hex[:8]}"
    # past the rule once counted in the live rows too: n > f * (live + n) + rows
    WikiPageRepository(pool).bulk_insert(
        make_pages(kb_id, int((STALE_FRACTION * live + STALE_ROWS) / (1 - STALE_FRACTION)) + 200)
    )
    refreshed: list[str] = []
    deadline = time.monotonic() + 30  # the inserting session reports its row counts within a second or so
    while "wiki_title_keys" not in refreshed and time.monotonic() < deadline:
        refreshed = refresh_statistics(pool)
        time.sleep(0.2)
    assert "wiki_title_keys" in refreshed
    assert _analyze_count(pool, "wiki_title_keys") > before
    assert "wiki_title_keys" not in refresh_statistics(pool)  # fresh now: not analyzed again
    with pool.connection() as conn:
        conn.execute("ALTER TABLE wiki_title_keys RESET (autovacuum_enabled)")


def test_shared_link_graph_holders_write_together_and_exclusive_waits(pool):
    repo = WikiPageRepository(pool)
    kb_id = f"lock-{uuid.uuid4().hex[:8]}"
    with pool.connection() as first:
        repo.lock_link_graph(kb_id, first, shared=True)
        with pool.connection() as second:  # another adder of links is not held up
            second.execute("SET lock_timeout = '2s'")
            repo.lock_link_graph(kb_id, second, shared=True)
            second.rollback()
        got = threading.Event()

        def deleter() -> None:
            with pool.connection() as conn:
                repo.lock_link_graph(kb_id, conn)
                got.set()

        thread = threading.Thread(target=deleter)
        thread.start()
        assert not got.wait(0.5)  # a writer that deletes pages waits for every adder
        first.commit()
        assert got.wait(10)
        thread.join(10)
