"""Migrations apply, apply again as a no-op, roll back completely, and apply again."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql

from repos.db import apply_migrations, rollback_migrations
from tests.conftest import ADMIN_URL, _with_dbname

TABLES = {
    "task_pending_ops",
    "task_dead_letters",
    "knowledge_bases",
    "knowledges",
    "wiki_pages",
    "wiki_links",
    "wiki_extractions",
    "wiki_lint_reports",
    "wiki_title_keys",
}


def _tables(url: str) -> set[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()
    return {r[0] for r in rows}


@contextmanager
def _scratch_db() -> Iterator[str]:
    """The URL of a new, empty database, dropped afterwards."""
    name = f"kbwiki_mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield _with_dbname(ADMIN_URL, name)
    finally:
        with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_apply_twice_roll_back_and_apply_again():
    with _scratch_db() as url:
        applied = apply_migrations(url)
        assert applied >= 8
        assert TABLES <= _tables(url)
        assert apply_migrations(url) == 0
        assert rollback_migrations(url) == applied
        assert not (TABLES & _tables(url))
        assert apply_migrations(url) == applied


def test_pages_written_before_the_name_key_column_get_their_key():
    from yoyo import get_backend, read_migrations

    from repos.db import MIGRATIONS_DIR, yoyo_url

    with _scratch_db() as url:
        apply_migrations(url)
        with psycopg.connect(url, autocommit=True) as conn:  # rows as an older version wrote them
            conn.execute(
                "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content)"
                " VALUES (1, 'kb', 'photons', 'Photons', 'concept', 'x'),"
                " (1, 'kb', 'doc-photons', 'Photons', 'summary', 'x')"
            )
        backend = get_backend(yoyo_url(url))
        backfill = read_migrations(str(MIGRATIONS_DIR)).filter(lambda m: m.id == "0061_page_name_key_backfill")
        with backend.lock():
            backend.rollback_migrations(backfill)
        assert apply_migrations(url) == 1
        with psycopg.connect(url) as conn:
            rows = dict(conn.execute("SELECT slug, name_key FROM wiki_pages").fetchall())
        assert rows == {"photons": "photon", "doc-photons": None}


def test_string_source_refs_become_objects():
    from yoyo import get_backend, read_migrations

    from repos.db import MIGRATIONS_DIR, make_pool, yoyo_url
    from repos.pages import WikiPageRepository

    with _scratch_db() as url:
        apply_migrations(url)
        backend = get_backend(yoyo_url(url))
        objects = read_migrations(str(MIGRATIONS_DIR)).filter(lambda m: m.id == "0130_source_refs_objects")
        with backend.lock():
            backend.rollback_migrations(objects)
        with psycopg.connect(url, autocommit=True) as conn:  # refs as the first versions wrote them
            conn.execute(
                "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content, source_refs)"
                " VALUES (1, 'kb', 'old', 'Old', 'entity', 'x', %s)",
                (psycopg.types.json.Jsonb(["doc-7|A title | with a bar", {"knowledge_id": "doc-8", "title": "New"}]),),
            )
        assert apply_migrations(url) == 1
        with psycopg.connect(url) as conn:
            (refs,) = conn.execute("SELECT source_refs FROM wiki_pages WHERE slug = 'old'").fetchone()
        assert refs == [
            {"knowledge_id": "doc-7", "title": "A title | with a bar"},
            {"knowledge_id": "doc-8", "title": "New"},
        ]
        pool = make_pool(url, 1, 1)
        try:
            assert WikiPageRepository(pool).slugs_by_sources("kb", ["doc-7", "doc-8"]) == {
                "doc-7": ["old"],
                "doc-8": ["old"],
            }
        finally:
            pool.close()


def test_a_kb_from_before_the_source_root_gets_the_folder_of_its_next_ingest():
    from yoyo import get_backend, read_migrations

    from repos.db import MIGRATIONS_DIR, make_pool, yoyo_url
    from repos.knowledge import KnowledgeBaseRepository

    with _scratch_db() as url:
        apply_migrations(url)
        backend = get_backend(yoyo_url(url))
        root = read_migrations(str(MIGRATIONS_DIR)).filter(lambda m: m.id == "0140_kb_source_root")
        with backend.lock():
            backend.rollback_migrations(root)
        with psycopg.connect(url, autocommit=True) as conn:  # a KB as the versions before wrote it
            conn.execute("INSERT INTO knowledge_bases (id, tenant_id, name) VALUES ('kb', 1, 'old')")
        assert apply_migrations(url) == 1
        pool = make_pool(url, 1, 1)
        try:
            kbs = KnowledgeBaseRepository(pool)
            assert kbs.get_by_name(1, "old").source_root is None
            # its next ingest's folder becomes its root; a later ingest (without --set-root) keeps it
            assert kbs.claim_source_root("kb", "/data/docs") == "/data/docs"
            assert kbs.claim_source_root("kb", "/data/docs/guide") == "/data/docs"
            assert kbs.claim_source_root("kb", "/moved/docs", replace=True) == "/moved/docs"
            assert kbs.get_by_name(1, "old").source_root == "/moved/docs"
            assert kbs.claim_source_root("no-such-kb", "/data") is None
        finally:
            pool.close()
