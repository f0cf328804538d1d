"""Migrations apply, apply again as a no-op, roll back completely, and apply again; ``kbwiki
migrate --rollback`` says what it drops and drops nothing without consent (a new user's
``migrate --rollback`` wiped every KB at once, exit 0)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from repos.db import apply_migrations, rollback_migrations
from tests.conftest import ADMIN_URL, REDIS_URL, _with_dbname
from wiki.errors import RollbackRefused

KBWIKI = str(Path(sys.executable).with_name("kbwiki"))

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


def _fill(url: str) -> None:
    """One KB holding a document and a page."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("INSERT INTO knowledge_bases (id, tenant_id, name) VALUES ('kb-1', 1, 'notes')")
        conn.execute(
            "INSERT INTO knowledges (id, tenant_id, knowledge_base_id, title) VALUES ('doc-1', 1, 'kb-1', 'A note')"
        )
        conn.execute(
            "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content)"
            " VALUES (1, 'kb-1', 'doc-a-note', 'A note', 'summary', 'x')"
        )


def _migrate(url: str, home: Path, *args: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """``kbwiki migrate ARGS`` on the database at ``url``, stdin not a terminal unless given."""
    env = {**os.environ, "DATABASE_URL": url, "REDIS_URL": REDIS_URL, "KBWIKI_HOME": str(home)}
    return subprocess.run([KBWIKI, "migrate", *args], env=env, stdin=stdin, capture_output=True, text=True, timeout=120)


def test_migrate_without_rollback_never_asks(tmp_path):
    with _scratch_db() as url:  # the Procfile's release line: `kbwiki migrate`, no terminal
        first = _migrate(url, tmp_path)
        assert first.returncode == 0 and first.stdout.startswith("applied "), first.stderr
        assert _migrate(url, tmp_path).stdout == "applied 0 migrations\n"


def test_rollback_off_a_terminal_without_yes_refuses_and_drops_nothing(tmp_path):
    with _scratch_db() as url:
        applied = apply_migrations(url)
        result = _migrate(url, tmp_path, "--rollback")
        assert result.returncode == 1 and result.stdout == ""
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("Error: ")
        assert f"every kbwiki table ({applied} migrations)" in result.stderr
        assert "0 knowledge bases, 0 documents and 0 pages" in result.stderr and "--yes" in result.stderr
        assert TABLES <= _tables(url)


def test_rollback_with_yes_on_an_empty_database_drops_every_table(tmp_path):
    with _scratch_db() as url:
        applied = apply_migrations(url)
        result = _migrate(url, tmp_path, "--rollback", "--yes")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            f"rolling back drops every kbwiki table ({applied} migrations) with all they hold:"
            " 0 knowledge bases, 0 documents and 0 pages",
            f"rolled back {applied} migrations",
        ]
        assert not (TABLES & _tables(url))


def test_rollback_of_a_database_holding_data_needs_force(tmp_path):
    with _scratch_db() as url:
        applied = apply_migrations(url)
        _fill(url)
        refused = _migrate(url, tmp_path, "--rollback", "--yes")
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1
        assert "1 knowledge base, 1 document and 1 page" in refused.stderr and "--force" in refused.stderr
        assert TABLES <= _tables(url)
        forced = _migrate(url, tmp_path, "--rollback", "--yes", "--force")
        assert forced.returncode == 0 and f"rolled back {applied} migrations" in forced.stdout, forced.stderr
        assert not (TABLES & _tables(url))


def test_rollback_at_a_terminal_says_what_it_drops_and_asks(tmp_path):
    with _scratch_db() as url:
        apply_migrations(url)
        main_fd, terminal = os.openpty()  # stdin a terminal: the command asks
        try:
            os.write(main_fd, b"n\n")
            answered_no = _migrate(url, tmp_path, "--rollback", stdin=terminal)
        finally:
            os.close(terminal)
            os.close(main_fd)
        assert (
            answered_no.returncode == 1
            and "Error: not confirmed: nothing was dropped" in answered_no.stdout + answered_no.stderr
        )
        assert "0 knowledge bases, 0 documents and 0 pages" in answered_no.stdout and "Drop them?" in answered_no.stdout
        assert TABLES <= _tables(url)


def test_rollback_migrations_refuses_a_database_holding_data():
    with _scratch_db() as url:
        applied = apply_migrations(url)
        _fill(url)
        with pytest.raises(RollbackRefused, match="1 document"):
            rollback_migrations(url)
        assert TABLES <= _tables(url)
        assert rollback_migrations(url, allow_data=True) == applied


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


def test_dead_letters_of_documents_already_finished_are_resolved_by_the_migration():
    from yoyo import get_backend, read_migrations

    from repos.db import MIGRATIONS_DIR, yoyo_url

    with _scratch_db() as url:
        apply_migrations(url)
        backend = get_backend(yoyo_url(url))
        resolved = read_migrations(str(MIGRATIONS_DIR)).filter(lambda m: m.id == "0180_dead_letters_resolved")
        with backend.lock():
            backend.rollback_migrations(resolved)
        with psycopg.connect(url, autocommit=True) as conn:  # the fault run's letters, as before 0180
            conn.execute("INSERT INTO knowledge_bases (id, tenant_id, name) VALUES ('kb', 1, 'kb')")
            conn.execute(
                "INSERT INTO knowledges (id, tenant_id, knowledge_base_id, title, status) VALUES"
                " ('done-doc', 1, 'kb', 'D', 'done'), ('gone-doc', 1, 'kb', 'G', 'deleted'),"
                " ('failed-doc', 1, 'kb', 'F', 'failed')"
            )
            conn.execute(
                "INSERT INTO task_dead_letters (tenant_id, task_type, scope, scope_id, related_id, payload, fail_count)"
                " VALUES (1, 'wiki_map', 'knowledge_base', 'kb', 'done-doc', '{}', 4),"
                " (1, 'wiki_map', 'knowledge_base', 'kb', 'gone-doc', '{}', 4),"
                " (1, 'wiki:ingest', 'knowledge_base', 'kb', 'failed-doc', '{}', 6),"
                " (2, 'wiki_map', 'knowledge_base', 'kb', 'done-doc', '{}', 4),"
                " (1, 'wiki_ingest', 'knowledge_base', 'kb', '', '{}', 4)"
            )
        assert apply_migrations(url) == 1
        with psycopg.connect(url) as conn:
            rows = conn.execute(
                "SELECT tenant_id, related_id, resolution, resolved_at IS NOT NULL FROM task_dead_letters ORDER BY id"
            ).fetchall()
        assert rows == [
            (1, "done-doc", "document_done", True),
            (1, "gone-doc", "document_deleted", True),
            (1, "failed-doc", "", False),
            (2, "done-doc", "", False),  # another tenant's letter names no document of this one
            (1, "", "", False),  # a KB-wide message stays open
        ]
