"""Every ``kbwiki`` command that takes ``--tenant`` reads and writes only that tenant's KB.

Tenants 1 and 2 each have a KB of the same name holding a document of the same source_uri and
pages of the same slugs (marked ``T1`` / ``T2``); each command runs for tenant 2 and tenant 1's
rows must come out untouched. (The ``dead-letters`` subcommands have their own tenant tests in
test_dead_letters_cmd.py; every repository read and delete in test_tenant_scope.py.)
"""

from __future__ import annotations

import json
import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from wiki.models import Page, SourceRef


@pytest.fixture()
def shared(clean_db, deps, tmp_path, monkeypatch):  # noqa: F811
    """``(name, {tenant: (kb, document)}, run)``: the two tenants' KBs, and ``run(*argv)`` for kbwiki."""
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))  # the commands' log file
    name = f"shared-{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\n" + "Alpha is the first letter of a shared alphabet. " * 4)
    runner = CliRunner()

    def run(*argv: str):
        return runner.invoke(main, list(argv), catch_exceptions=False)

    found = {}
    for tenant in (1, 2):
        result = run("ingest", str(folder), "--kb", name, "--tenant", str(tenant))
        assert result.exit_code == 0 and "queued=1" in result.stdout, result.output
        kb = deps.kbs.get_by_name(tenant, name)
        doc = deps.docs.find(kb.id, "a.md")
        ref = [SourceRef(knowledge_id=doc.id, title="Alpha")]
        for slug, page_type in (("doc-alpha", "summary"), ("alpha", "entity")):
            deps.pages.save(
                Page(
                    tenant_id=tenant,
                    knowledge_base_id=kb.id,
                    slug=slug,
                    title="Alpha",
                    page_type=page_type,
                    content=f"T{tenant} page {slug}.",
                    source_refs=ref,
                )
            )
        found[tenant] = (kb, doc)
    assert found[1][0].id != found[2][0].id
    return name, found, run


def _whole(deps, kb, doc) -> None:  # noqa: F811
    assert deps.kbs.get_active(kb.tenant_id, kb.id).deleted_at is None
    assert deps.docs.get(doc.id).status == "pending"
    assert deps.pages.counts_by_type(kb.id) == {"summary": 1, "entity": 1}


def test_ingest_stores_into_the_tenants_kb_only(shared, deps):  # noqa: F811
    name, found, _ = shared
    for tenant, (kb, doc) in found.items():
        assert doc.tenant_id == tenant and deps.docs.count_by_status(kb.id) == {"pending": 1}


def test_status_reports_the_tenants_kb(shared):
    name, found, run = shared
    report = json.loads(run("status", "--kb", name, "--tenant", "2", "--json").stdout)
    assert report["knowledge_base"] == {"name": name, "id": found[2][0].id, "tenant_id": 2}
    assert report["documents"] == {"pending": 1} and report["pages"] == {"summary": 1, "entity": 1}


def test_export_writes_the_tenants_pages(shared, tmp_path):
    name, _, run = shared
    out = tmp_path / "vault"
    assert run("export", "--kb", name, "--tenant", "2", str(out)).exit_code == 0
    texts = [p.read_text() for p in out.rglob("*.md")]
    assert texts and all("T1 " not in t for t in texts) and any("T2 page alpha." in t for t in texts)


def test_lint_walks_the_tenants_pages(shared, deps):  # noqa: F811
    name, found, run = shared
    report = json.loads(run("lint", "--kb", name, "--tenant", "2", "--json").stdout)
    assert report["knowledge_base_id"] == found[2][0].id and report["pages_checked"] == 2
    from repos.lint import LintRepository

    reports = LintRepository(deps.pool)
    assert reports.latest_report(found[2][0].id).pages_checked == 2
    assert reports.latest_report(found[1][0].id) is None


def test_delete_removes_the_tenants_document_only(shared, deps, actors_broker):  # noqa: F811
    name, found, run = shared
    result = run("delete", "--kb", name, "--tenant", "2", "a.md")
    assert result.exit_code == 0 and result.stdout.startswith(f"deleting {found[2][1].id}"), result.output
    assert deps.docs.get(found[2][1].id).status == "deleting"
    _whole(deps, *found[1])
    again = run("delete", "--kb", name, "--tenant", "2", "a.md")  # by its source URI, as the first time
    assert again.exit_code == 0 and again.stdout == f"already_deleted {found[2][1].id} a.md\n", again.output


def test_delete_kb_removes_the_tenants_kb_only(shared, deps):  # noqa: F811
    name, found, run = shared
    assert run("delete-kb", "--kb", name, "--tenant", "2", "--yes").exit_code == 0
    assert deps.kbs.get_by_name(2, name) is None
    _whole(deps, *found[1])
    assert run("status", "--kb", name, "--tenant", "2").exit_code == 1
