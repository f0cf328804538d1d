"""``kbwiki kbs``, ``kbwiki documents``, ``kbwiki status`` without ``--kb`` and the "did you mean"
of an unknown KB name, through click's CliRunner on the test database (``pipeline_env`` sets
DATABASE_URL and REDIS_URL, so ``services()`` starts nothing)."""

from __future__ import annotations

import json
import re
import shlex
import uuid

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql

from kbwiki.cli import main
from kbwiki.list_cmd import encode_cursor
from repos.knowledge import KnowledgeBaseRepository
from repos.listing import documents_query, kbs_query
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.models import Page, SourceRef


@pytest.fixture()
def run(clean_db, deps, tmp_path, monkeypatch):  # noqa: F811
    """Invoke ``kbwiki`` with arguments; returns click's Result (stdout and stderr apart)."""
    from middleware.logging import configure_logging

    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    configure_logging("INFO")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def _doc(deps, kb, source_uri: str, status: str = "pending", title: str | None = None):  # noqa: F811
    doc, _ = deps.docs.upsert(kb, title=title or source_uri or "untitled", source_uri=source_uri, content="text " * 20)
    if status != "pending":
        deps.docs.set_status([doc.id], status)
    return deps.docs.get(doc.id)


def _page(deps, kb, slug: str, *docs, page_type: str = "entity"):  # noqa: F811
    refs = [SourceRef(knowledge_id=d.id, title=d.title) for d in docs]
    page = Page(
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        slug=slug,
        title=slug,
        page_type=page_type,
        content=f"{slug}.",
        source_refs=refs,
    )
    return deps.pages.save(page)


def _follow(run, argv: list[str]) -> list[list[str]]:
    """Every page of a listing: runs ``argv``, then each ``next page:`` command it prints; returns
    each page's lines without its header and footer."""
    pages = []
    while True:
        result = run(*argv)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        pages.append(lines[1:-1])
        if not lines[-1].startswith("next page: "):
            assert lines[-1] == "end of list"
            return pages
        argv = shlex.split(lines[-1].removeprefix("next page: "))[1:]  # without "kbwiki"


# ---- kbwiki kbs / kbwiki status without --kb ---------------------------------------------------


def test_kbs_lists_each_live_kb_with_its_documents_pages_activity_and_pause(run, deps):  # noqa: F811
    alpha = deps.kbs.get_or_create(1, "alpha")
    done, failed = _doc(deps, alpha, "a.md", "done"), _doc(deps, alpha, "b.md", "failed")
    _doc(deps, alpha, "c.md")
    gone = _doc(deps, alpha, "gone.md")
    deps.docs.mark_deleting(alpha.id, gone.id)
    deps.docs.mark_deleted([gone.id])  # no longer the KB's document: not counted
    _page(deps, alpha, "doc-a", done, page_type="summary")
    _page(deps, alpha, "thing", done, failed)
    _page(deps, alpha, "removed", done)
    deps.pages.delete(alpha.id, "removed")
    beta = deps.kbs.get_or_create(2, "beta")
    deps.llm_errors.record(beta.id, "fp", 402, "Insufficient Balance", None, "m", kind="credit")
    deleted = deps.kbs.get_or_create(1, "deleted-kb")
    deps.kbs.mark_deleted(1, deleted.id)

    result = run("kbs")
    assert result.exit_code == 0, result.output
    header, *rows, footer = result.stdout.splitlines()
    assert header.split() == ["NAME", "TENANT", "PAGES", "LAST", "ACTIVITY", "PAUSED", "DOCUMENTS"]
    assert [row.split()[:3] + row.split()[4:] for row in rows] == [
        ["alpha", "1", "2", "-", "pending=1", "done=1", "failed=1"],
        ["beta", "2", "0", "credit", "none"],
    ]
    assert footer == "end of list"

    report = json.loads(run("kbs", "--json").stdout)
    assert report["next_after"] is None
    first, second = report["knowledge_bases"]
    assert (first["name"], first["id"], first["tenant_id"]) == ("alpha", alpha.id, 1)
    assert first["documents"] == {"pending": 1, "done": 1, "failed": 1}
    assert (first["pages"], first["pages_by_type"]) == (2, {"summary": 1, "entity": 1})
    latest_page = max(deps.pages.get(alpha.id, s).updated_at for s in ("doc-a", "thing"))
    assert first["last_activity"] == latest_page.isoformat(timespec="seconds")
    assert first["paused"] is None
    assert second["paused"]["kind"] == "credit" and second["documents"] == {} and second["pages"] == 0

    only = json.loads(run("kbs", "--tenant", "2", "--json").stdout)["knowledge_bases"]
    assert [kb["name"] for kb in only] == ["beta"]
    assert run("kbs", "--tenant", "7").stdout == "no knowledge base of tenant 7\n"


def test_kbs_pages_through_every_kb_with_the_cursor_it_prints(run, deps):  # noqa: F811
    names = {(1 + i % 2, f"kb {i:02d} ü") for i in range(7)}  # spaces and non-ASCII survive the cursor
    for tenant, name in names:
        deps.kbs.get_or_create(tenant, name)
    pages = _follow(run, ["kbs", "--limit", "2"])
    assert [len(p) for p in pages] == [2, 2, 2, 1]
    listed = [re.split(r"\s{2,}", row)[:2] for page in pages for row in page]
    assert [(int(t), n) for n, t in listed] == sorted(names)
    pages = _follow(run, ["kbs", "--tenant", "2", "--limit", "2"])
    assert [re.split(r"\s{2,}", row)[0] for page in pages for row in page] == ["kb 01 ü", "kb 03 ü", "kb 05 ü"]

    for bad in ("abc", "W10", encode_cursor("documents", "x", "y"), encode_cursor("kbs", "1", "x")):
        result = run("kbs", "--after", bad)
        assert result.exit_code == 2 and "is not a cursor this command printed" in result.output


def test_status_without_kb_prints_the_kb_list(run, deps):  # noqa: F811
    deps.kbs.get_or_create(1, "one")
    deps.kbs.get_or_create(2, "two")
    for status_argv, kbs_argv in ((["status"], ["kbs"]), (["status", "--tenant", "2"], ["kbs", "--tenant", "2"])):
        result = run(*status_argv)
        assert result.exit_code == 0, result.output
        assert result.stdout == run(*kbs_argv).stdout
    assert json.loads(run("status", "--json").stdout) == json.loads(run("kbs", "--json").stdout)
    assert [kb["name"] for kb in json.loads(run("status", "--json").stdout)["knowledge_bases"]] == ["one", "two"]


def test_status_without_kb_counts_the_open_dead_letters_of_every_kb_and_of_none(run, deps):  # noqa: F811
    deps.kbs.get_or_create(1, "one")
    assert "dead letters" not in run("status").stdout
    deps.dead_letters.insert(  # a producer's message to a KB that does not exist
        task_type="wiki_submit", tenant_id=1, scope="kb", scope_id=str(uuid.uuid4()), last_error="UnknownKnowledgeBase"
    )
    assert "open dead letters: 1 (kbwiki dead-letters list)" in run("status").stdout.splitlines()
    assert "dead letters" not in run("status", "--tenant", "2").stdout


# ---- kbwiki documents --------------------------------------------------------------------------


def test_documents_lists_id_source_title_status_and_citing_pages(run, deps):  # noqa: F811
    kb = deps.kbs.get_or_create(1, "docs-kb")
    cited = _doc(deps, kb, "guide/a.md", "done", title="A guide")
    failed = _doc(deps, kb, "b.md", "failed")
    bare = _doc(deps, kb, "", title="Sent without a source")  # a producer's document
    leaving = _doc(deps, kb, "leaving.md", "done")
    deps.docs.mark_deleting(kb.id, leaving.id)  # shown until its retract is applied
    gone = _doc(deps, kb, "gone.md")
    deps.docs.mark_deleting(kb.id, gone.id)
    deps.docs.mark_deleted([gone.id])
    _page(deps, kb, "doc-a", cited, page_type="summary")
    _page(deps, kb, "thing", cited, failed)
    _page(deps, kb, "old", cited)
    deps.pages.delete(kb.id, "old")  # a deleted page cites nothing
    other = deps.kbs.get_or_create(1, "other-kb")
    _page(deps, other, "stray", cited)  # another KB's page is not this KB's

    report = json.loads(run("documents", "--kb", "docs-kb", "--json").stdout)
    assert report["knowledge_base"] == {"name": "docs-kb", "id": kb.id, "tenant_id": 1}
    rows = report["documents"]
    assert [(d["source_uri"], d["id"], d["status"], d["pages"]) for d in rows] == [
        ("", bare.id, "pending", 0),
        ("b.md", failed.id, "failed", 1),
        ("guide/a.md", cited.id, "done", 2),
        ("leaving.md", leaving.id, "deleting", 0),
    ]
    assert rows[2]["title"] == "A guide"
    with deps.pool.connection() as conn:
        changed = conn.execute("SELECT updated_at FROM knowledges WHERE id = %s", (cited.id,)).fetchone()["updated_at"]
    assert rows[2]["updated_at"] == changed.isoformat(timespec="seconds")
    assert report["next_after"] is None

    result = run("documents", "--kb", "docs-kb")
    header, *lines, footer = result.stdout.splitlines()
    assert header.split() == ["ID", "STATUS", "PAGES", "UPDATED", "SOURCE", "URI", "TITLE"]
    assert [line.split()[:3] + line.split()[4:] for line in lines][2] == [
        cited.id,
        "done",
        "2",
        "guide/a.md",
        "A",
        "guide",
    ]
    assert lines[0].split()[4] == "-"  # no source URI
    assert footer == "end of list"

    failed_only = json.loads(run("documents", "--kb", "docs-kb", "--status", "failed", "--json").stdout)
    assert [d["id"] for d in failed_only["documents"]] == [failed.id]
    assert (
        run("documents", "--kb", "docs-kb", "--status", "skipped").stdout
        == "no document in status skipped in 'docs-kb'\n"
    )
    assert run("documents", "--kb", "docs-kb", "--status", "deleted").exit_code == 2  # not a listed status
    assert run("documents", "--kb", "docs-kb", "--tenant", "2", "--json").exit_code == 1  # tenant 1's KB


def test_documents_pages_through_the_kb_with_the_cursor_it_prints(run, deps):  # noqa: F811
    kb = deps.kbs.get_or_create(1, "paged kb")  # a name the next-page command must quote
    uris = [f"dir {i % 3}/doc-{i:02d}.md" for i in range(8)]
    docs = {uri: _doc(deps, kb, uri, "failed" if i % 2 else "done") for i, uri in enumerate(uris)}
    pages = _follow(run, ["documents", "--kb", "paged kb", "--limit", "3"])
    assert [len(p) for p in pages] == [3, 3, 2]
    assert [row.split()[0] for page in pages for row in page] == [docs[u].id for u in sorted(uris)]
    pages = _follow(run, ["documents", "--kb", "paged kb", "--status", "failed", "--limit", "3"])
    failed = sorted(u for i, u in enumerate(uris) if i % 2)
    assert [row.split()[0] for page in pages for row in page] == [docs[u].id for u in failed]

    result = run("documents", "--kb", "paged kb", "--after", encode_cursor("kbs", 1, "paged kb"))
    assert result.exit_code == 2 and "is not a cursor this command printed" in result.output


# ---- unknown KB names --------------------------------------------------------------------------


def test_an_unknown_kb_name_gets_the_close_names_or_the_count(run, deps):  # noqa: F811
    for name in ("MyDocs", "python-stdlib", "notes"):
        deps.kbs.get_or_create(1, name)

    result = run("documents", "--kb", "mydocs")
    assert result.exit_code == 1
    assert result.stderr == "Error: no knowledge base named 'mydocs' for tenant 1; did you mean 'MyDocs'?\n"
    assert "did you mean 'python-stdlib'?" in run("status", "--kb", "python-stdlb").stderr
    result = run("export", "--kb", "nothing-like-it", "out")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: no knowledge base named 'nothing-like-it' for tenant 1; tenant 1 has 3 knowledge bases"
        " (list them: kbwiki kbs --tenant 1)\n"
    )
    assert (
        "tenant 4 has no knowledge base (every tenant's: kbwiki kbs)"
        in run("lint", "--kb", "x", "--tenant", "4").stderr
    )


def test_the_names_compared_are_the_bounded_neighbourhood_in_case_insensitive_order(pool, deps):  # noqa: F811
    tenant = 900 + uuid.uuid4().int % 1000
    for i in range(40):
        deps.kbs.get_or_create(tenant, f"kb-{i:02d}")
    deps.kbs.get_or_create(tenant, "Zeta")
    repo = KnowledgeBaseRepository(pool)
    near = repo.names_near(tenant, "kb-2", each_side=5)
    assert near == ["kb-20", "kb-21", "kb-22", "kb-23", "kb-24", "kb-19", "kb-18", "kb-17", "kb-16", "kb-15"]
    assert repo.names_near(tenant, "zeta", each_side=1) == ["Zeta", "kb-39"]
    assert repo.count_live(tenant) == 41 and repo.count_live(tenant, cap=10) == 10
    with pool.connection() as conn:
        conn.execute("SET LOCAL enable_seqscan = off")  # the test table is small: is the index usable?
        plan = _plan(
            conn,
            "SELECT name FROM knowledge_bases WHERE tenant_id = 1 AND deleted_at IS NULL"
            " AND lower(name) >= lower('x') ORDER BY lower(name) LIMIT 5",
            {},
        )
    assert "idx_knowledge_bases_tenant_lower_name" in plan and "Sort" not in plan


# ---- plans -------------------------------------------------------------------------------------

N_DOCS = 3000


@pytest.fixture()
def big_kb(clean_db, deps, database_url):  # noqa: F811
    """A KB of 3,000 documents (97 % done) with a summary page each and 3,000 entity pages citing
    three documents each, written in three statements, then vacuumed and analyzed."""
    kb = deps.kbs.get_or_create(1, "big")
    with clean_db.connection() as conn:
        conn.execute(
            "INSERT INTO knowledges (id, tenant_id, knowledge_base_id, title, source_uri, content, status)"
            " SELECT 'doc-' || i, 1, %(kb)s, 'Document ' || i, 'dir' || (i %% 50) || '/doc-' || lpad(i::text, 5, '0'),"
            " 'text', CASE WHEN i %% 33 = 0 THEN 'failed' ELSE 'done' END FROM generate_series(1, %(n)s) i",
            {"kb": kb.id, "n": N_DOCS},
        )
        conn.execute(
            "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content, source_refs)"
            " SELECT 1, %(kb)s, 'doc-' || i, 'Document ' || i, 'summary', 'text',"
            " jsonb_build_array(jsonb_build_object('knowledge_id', 'doc-' || i, 'title', 'Document ' || i))"
            " FROM generate_series(1, %(n)s) i",
            {"kb": kb.id, "n": N_DOCS},
        )
        conn.execute(
            "INSERT INTO wiki_pages (tenant_id, knowledge_base_id, slug, title, page_type, content, source_refs)"
            " SELECT 1, %(kb)s, 'thing-' || i, 'Thing ' || i, 'entity', 'text', ("
            "  SELECT jsonb_agg(jsonb_build_object('knowledge_id', 'doc-' || (1 + (i * 7 + t * 13) %% %(n)s),"
            "   'title', 't')) FROM generate_series(0, 2) t)"
            " FROM generate_series(1, %(n)s) i",
            {"kb": kb.id, "n": N_DOCS},
        )
    with psycopg.connect(database_url, autocommit=True) as conn:  # VACUUM: as autovacuum would have
        conn.execute("VACUUM ANALYZE knowledges")
        conn.execute("VACUUM ANALYZE wiki_pages")
    return kb


def _plan(conn, query, params) -> str:
    """The plan of ``query`` (a string or a ``psycopg.sql`` composable) as JSON text."""
    query = query if isinstance(query, sql.Composable) else sql.SQL(query)
    row = conn.execute(sql.SQL("EXPLAIN (FORMAT JSON) ") + query, params).fetchone()
    return json.dumps(row["QUERY PLAN"])


def test_kbs_counts_with_index_only_passes_never_the_heap(big_kb, deps):  # noqa: F811
    with deps.pool.connection() as conn:
        scans = _scans(json.loads(_plan(conn, *kbs_query(tenant_id=None, after=None, limit=51))))
    assert ("Index Only Scan", "idx_knowledges_kb_status_updated", "knowledges") in scans
    assert ("Index Only Scan", "idx_wiki_pages_kb_type_updated", "wiki_pages") in scans
    assert not [s for s in scans if s[2] in ("knowledges", "wiki_pages") and s[0] != "Index Only Scan"], scans
    [kb] = deps.listing.knowledge_bases()
    assert kb.documents == {"done": N_DOCS - N_DOCS // 33, "failed": N_DOCS // 33}
    assert kb.pages == {"summary": N_DOCS, "entity": N_DOCS}


def test_a_page_of_documents_is_one_range_of_an_index_and_a_probe_per_document(big_kb, deps):  # noqa: F811
    for status, index in ((None, "idx_knowledges_kb_listed"), ("failed", "idx_knowledges_kb_status_listed")):
        query, params = documents_query(big_kb.id, status=status, after=("dir17/doc-01017", "doc-1017"), limit=51)
        with deps.pool.connection() as conn:
            plan = json.loads(_plan(conn, query, params))
        scans = _scans(plan)
        assert ("Index Scan", index, "knowledges") in scans, scans
        assert ("Bitmap Index Scan", "idx_wiki_pages_source_refs", None) in scans, scans
        assert not [s for s in scans if s[0] == "Seq Scan"], scans
    page = deps.listing.documents(big_kb.id, after=("dir17/doc-01017", "doc-1017"), limit=3)
    assert [d.source_uri for d in page] == ["dir17/doc-01067", "dir17/doc-01117", "dir17/doc-01167"]
    assert all(d.pages >= 1 for d in page)  # its summary, and the entity pages citing it


def _scans(plan) -> list[tuple[str, str | None, str | None]]:
    """(node type, index name, relation name) of every scan of a table or an index in an EXPLAIN
    (FORMAT JSON) plan (a bitmap index scan names no relation)."""
    found = []

    def walk(node):
        if "Relation Name" in node or "Index Name" in node:
            found.append((node["Node Type"], node.get("Index Name"), node.get("Relation Name")))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found
