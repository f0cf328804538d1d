"""Concurrent submissions of one new source_uri to one KB, on real PostgreSQL.

Several ``kbwiki ingest`` runs on the same folder submit the same new documents at the same time;
the document upsert must neither raise (``uq_knowledges_kb_source``) nor store two live rows.
Every thread has a connection of its own and waits at a barrier right before the upsert, so the
sessions really race on the insert.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import psycopg
import pytest
from psycopg.rows import dict_row

from repos.db import make_pool
from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)

THREADS = 8
JOIN_TIMEOUT_S = 60


def _race(n: int, work: Callable[[int, threading.Barrier], object]) -> list[object]:
    """Run ``work(i, barrier)`` in ``n`` threads; returns their results, re-raising the first error."""
    barrier = threading.Barrier(n, timeout=JOIN_TIMEOUT_S)
    results: list[object] = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = work(i, barrier)
        except BaseException as exc:  # noqa: BLE001  (reported to the test below)
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,), name=f"submit-{i}") for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a submitting thread never finished"
    if errors:
        raise errors[0]
    return results


def _live_rows(pool, kb_id: str, source_uri: str) -> list[dict]:
    with pool.connection() as conn:
        return conn.execute(
            "SELECT * FROM knowledges WHERE knowledge_base_id = %s AND source_uri = %s AND deleted_at IS NULL",
            (kb_id, source_uri),
        ).fetchall()


@pytest.fixture()
def kb(clean_db):
    return KnowledgeBaseRepository(clean_db).get_or_create(1, "conc")


def test_identical_concurrent_upserts_store_one_document_and_one_reports_changed(clean_db, database_url, kb):
    docs = DocumentRepository(clean_db)
    content = "Concurrency notes: the same file submitted by several ingest runs at once. " * 4

    def work(i: int, barrier: threading.Barrier):
        with psycopg.connect(database_url, row_factory=dict_row) as conn:
            barrier.wait()
            doc, changed = docs.upsert(kb, title="Notes", source_uri="folder/notes.md", content=content, conn=conn)
            conn.commit()
        return doc, changed

    results = _race(THREADS, work)

    assert sum(changed for _, changed in results) == 1
    assert len({doc.id for doc, _ in results}) == 1
    rows = _live_rows(clean_db, kb.id, "folder/notes.md")
    assert len(rows) == 1
    assert rows[0]["id"] == results[0][0].id
    assert rows[0]["content"] == content and rows[0]["title"] == "Notes"


def test_concurrent_upserts_of_different_contents_keep_the_last_writers(clean_db, database_url, kb):
    docs = DocumentRepository(clean_db)
    contents = [f"Version {i} of the shared page, written by ingest run number {i}. " * 3 for i in range(THREADS)]
    commit_order: list[int] = []
    commit_lock = threading.Lock()

    def work(i: int, barrier: threading.Barrier):
        with psycopg.connect(database_url, row_factory=dict_row) as conn:
            barrier.wait()
            doc, changed = docs.upsert(
                kb, title="Shared", source_uri="folder/shared.md", content=contents[i], conn=conn
            )
            with commit_lock:  # the list order is the commit order
                conn.commit()
                commit_order.append(i)
        return doc, changed

    results = _race(THREADS, work)

    assert all(changed for _, changed in results), "every distinct content is a change"
    assert len({doc.id for doc, _ in results}) == 1
    rows = _live_rows(clean_db, kb.id, "folder/shared.md")
    assert len(rows) == 1
    assert rows[0]["content"] in contents
    assert rows[0]["content"] == contents[commit_order[-1]]
    assert rows[0]["status"] == "pending"


def test_parallel_ingests_of_one_folder_queue_each_document_once(actors_broker, clean_db, database_url):  # noqa: F811
    """The trial's shape: parallel runs submit the same files in the same order through ``submit_document``."""
    from stages.deps import build_deps
    from stages.ingest import submit_document
    from wiki.lanes import INGEST, OP_INGEST
    from wiki.settings import get_settings

    files = [
        (f"folder/doc{n}.md", f"Document {n} of a folder that parallel ingest commands all read. " * 3)
        for n in range(10)
    ]
    pool = make_pool(database_url, 1, THREADS + 2)
    deps = build_deps(get_settings(), pool)
    try:
        kb = deps.kbs.get_or_create(1, f"conc-{uuid.uuid4().hex[:8]}")

        def work(i: int, barrier: threading.Barrier):
            barrier.wait()
            return [
                submit_document(
                    deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=uri, content=content, source_uri=uri
                )
                for uri, content in files
            ]

        results = _race(THREADS, work)

        with pool.connection() as conn:
            ops = conn.execute(
                "SELECT op, dedup_key FROM task_pending_ops WHERE task_type = %s AND scope_id = %s",
                (INGEST, kb.id),
            ).fetchall()
        for n, (uri, _) in enumerate(files):
            per_file = [run[n] for run in results]
            assert sorted(r.status for r in per_file) == ["queued"] + ["unchanged"] * (THREADS - 1), uri
            assert len({r.knowledge_id for r in per_file}) == 1, uri
            rows = _live_rows(pool, kb.id, uri)
            assert len(rows) == 1 and rows[0]["id"] == per_file[0].knowledge_id, uri
            doc_id = rows[0]["id"]
            assert [op for op in ops if op["dedup_key"] == doc_id] == [{"op": OP_INGEST, "dedup_key": doc_id}], uri
        assert len(ops) == len(files)
    finally:
        deps.redis.close()
        pool.close()
