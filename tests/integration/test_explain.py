"""The hot lookups use their indexes on a KB of 10,000+ pages (after ANALYZE)."""

from __future__ import annotations

import json
import uuid

import pytest
from psycopg.types.json import Jsonb

from repos.pages import (
    BY_NAME_KEYS_SQL,
    DELETE_KEYS_SQL,
    DELETE_LINKS_SQL,
    SIMILAR_TITLES_SQL,
    SLUGS_BY_SOURCE_SQL,
    TITLE_MATCHES_SQL,
    TRGM_INDEX_ONLY,
    WikiPageRepository,
)
from tests.support.pages import make_pages

N_PAGES = 12_000


@pytest.fixture(scope="module")
def big_kb(pool):
    kb_id = f"explain-{uuid.uuid4().hex[:8]}"
    repo = WikiPageRepository(pool)
    assert repo.bulk_insert(make_pages(kb_id, N_PAGES)) == N_PAGES
    with pool.connection() as conn:
        conn.execute("ANALYZE")
    return kb_id


def _plan(pool, sql: str, params, setting: str | None = None) -> str:
    with pool.connection() as conn:
        if setting:
            conn.execute(setting)
        row = conn.execute("EXPLAIN (FORMAT JSON) " + sql, params).fetchone()
    return json.dumps(row["QUERY PLAN"])


def test_source_ref_lookup_uses_the_jsonb_path_ops_index(pool, big_kb):
    # a batch's documents in one statement: each one probe of the index
    kids = [f"doc-{i}" for i in range(40, 90)]
    plan = _plan(pool, SLUGS_BY_SOURCE_SQL, {"kb": big_kb, "kids": "\n".join(kids)})
    assert "idx_wiki_pages_source_refs" in plan
    assert "Seq Scan on wiki_pages" not in plan
    found = WikiPageRepository(pool).slugs_by_sources(big_kb, kids)
    assert set(found) == set(kids) and all(found.values())  # and it finds the pages


def test_similar_title_lookup_uses_the_title_key_trigram_index(pool, big_kb):
    title = make_pages(big_kb, 10)[7].title
    texts = [p.title.lower() for p in make_pages(big_kb, 60)[10:]]
    plan = _plan(
        pool, SIMILAR_TITLES_SQL, {"kb": big_kb, "texts": "\n".join([title.lower(), *texts]), "k": 5}, TRGM_INDEX_ONLY
    )
    assert "idx_wiki_title_keys_trgm" in plan
    assert "Seq Scan on wiki_title_keys" not in plan and "Seq Scan on wiki_pages" not in plan
    found = WikiPageRepository(pool).similar_titles(big_kb, title, k=5)
    assert title in [p.title for p in found[:2]]  # "methods abstract" has the same trigrams: a tie
    many = WikiPageRepository(pool).similar_titles_many(big_kb, [title, *texts], k=5)
    assert all(text in [p.title.lower() for p in many[text]] for text in texts)


def test_name_key_lookup_uses_the_name_key_index(pool, big_kb):
    # reduce asks for every item's name key of a batch at once: one probe each, never a KB scan
    from wiki.dedup import name_key

    pages = make_pages(big_kb, 40)
    keys = [name_key(p.title) for p in pages] + [f"nosuchname{i}" for i in range(500)]
    plan = _plan(pool, BY_NAME_KEYS_SQL, {"kb": big_kb, "keys": keys})
    assert "idx_wiki_pages_name_key" in plan
    assert "Seq Scan on wiki_pages" not in plan
    found = WikiPageRepository(pool).by_name_keys(big_kb, keys)
    assert {p.slug for found_pages in found.values() for p in found_pages} >= {p.slug for p in pages}


def test_title_key_lookup_reaches_pages_through_the_live_slug_index(pool, big_kb):
    # cross-link sends every phrase of 100 pages (~12,000) at once; only the pages of the keys
    # that match are read, never a scan of the KB's pages
    pages = make_pages(big_kb, 30)
    phrases = [p.title.lower() for p in pages] + [f"no such phrase {i}" for i in range(5000)]
    plan = _plan(pool, TITLE_MATCHES_SQL, {"kb": big_kb, "phrases": "\n".join(phrases)})
    assert "uq_wiki_pages_live_slug" in plan
    assert "Seq Scan on wiki_pages" not in plan
    found = WikiPageRepository(pool).title_matches(big_kb, phrases)
    assert {key for key, _ in found} == {p.title.lower() for p in pages}


def test_rewriting_a_pages_out_links_uses_the_primary_key(pool, big_kb):
    # Every save() deletes the page's out-links; through the in-link index it scanned every link
    # of the KB (seen on linux-doc: 37 ms per save at 3k documents).
    plan = _plan(pool, DELETE_LINKS_SQL, (big_kb, ["x", "y"]))
    assert "wiki_links_pkey" in plan
    assert "idx_wiki_links_to" not in plan


def test_rewriting_pages_title_keys_uses_the_slug_index(pool, big_kb):
    plan = _plan(pool, DELETE_KEYS_SQL, (big_kb, ["x", "y"]))
    assert "idx_wiki_title_keys_slug" in plan
    assert "Seq Scan" not in plan


def test_lints_alias_lookup_uses_the_lowercased_alias_index(pool, big_kb):
    # one GIN probe per key of a window (400 keys), never a scan that casts every page's aliases
    from repos.lint import PAGES_WITH_ALIAS_SQL, LintRepository

    with pool.connection() as conn:
        conn.execute(
            "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content, aliases)"
            " VALUES (1, %s, 'aliased-page', 'Aliased page', 'entity', 'x', %s)",
            (big_kb, Jsonb(["Other Name"])),
        )
    keys = ["other name"] + [p.title.lower() for p in make_pages(big_kb, 399)]
    plan = _plan(pool, PAGES_WITH_ALIAS_SQL, (keys, big_kb, 3))
    assert "idx_wiki_pages_aliases_lower" in plan
    assert "Seq Scan on wiki_pages" not in plan
    assert [p.slug for p in LintRepository(pool).pages_with_alias(big_kb, keys)] == ["aliased-page"]


def test_lints_title_lookup_reads_the_lowercased_title_index_per_key(pool, big_kb):
    # never the slug index with a filter on every page's title (a LIMIT per key planned that)
    from repos.lint import PAGES_TITLED_SQL, LintRepository

    pages = make_pages(big_kb, 400)
    keys = sorted({p.title.lower() for p in pages})
    plan = _plan(pool, PAGES_TITLED_SQL, (keys, big_kb, 3))
    assert "idx_wiki_pages_kb_lower_title" in plan
    assert "uq_wiki_pages_live_slug" not in plan and "Seq Scan on wiki_pages" not in plan
    found = LintRepository(pool).pages_titled(big_kb, keys)
    assert {p.slug for p in found} == {p.slug for p in pages}


def test_every_execution_is_planned_for_its_own_values(pool, big_kb):
    # a generic plan (psycopg prepares from the 5th execution) walked the KB per lint window
    from repos.lint import LintRepository

    keys = sorted({p.title.lower() for p in make_pages(big_kb, 300)})
    repo = LintRepository(pool)
    assert all(len(repo.pages_titled(big_kb, keys)) == len(keys) for _ in range(12))
    with pool.connection() as conn:
        assert conn.execute("SHOW plan_cache_mode").fetchone()["plan_cache_mode"] == "force_custom_plan"
