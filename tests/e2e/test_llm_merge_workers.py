"""Real worker processes (`kbwiki worker`) with ``KBWIKI_EXTRACTOR=llm``: a merge the model decides
at map time reaches the page through reduce (one page, the item's name kept as an alias), and the
guards keep a number pair apart without asking the model."""

from __future__ import annotations

import uuid

import pytest

from kbwiki.ingest import lane_rows
from kbwiki.workers import start_workers
from stages.ingest import submit_document
from tests.e2e.conftest import wait_until
from tests.e2e.test_recovery import _kill_tree
from tests.integration.test_llm_merges import FIRST, SECOND, Model
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM

pytestmark = pytest.mark.e2e


def test_worker_processes_apply_the_models_merge_and_the_guards(deps, monkeypatch, tmp_path):
    model = Model()
    model.decide = lambda items: [
        {"item": handle, "merge_into": next(iter(candidates.values()))}
        for name, (handle, candidates) in items.items()
        if name == "Postgres"
    ]
    with ScriptedLLM(model) as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            model="scripted-merges",
        )
        kb = deps.kbs.get_or_create(1, f"llm-merge-{uuid.uuid4().hex[:6]}")
        proc = start_workers(2, 2, tmp_path / "workers.log")
        try:
            for n, (title, text, _) in enumerate((FIRST, SECOND), 1):
                submit_document(
                    deps, tenant_id=1, knowledge_base_id=kb.id, title=title, content=text, source_uri=f"{title}.md"
                )
                wait_until(
                    lambda n=n: deps.docs.count_by_status(kb.id) == {"done": n} and lane_rows(deps, kb.id) == 0,
                    120,
                    f"{n} documents done",
                )
        finally:
            _kill_tree(proc)
    pages = {p.title: p for p in deps.pages.iter_pages(kb.id) if p.page_type in ("entity", "concept")}
    assert "Postgres" not in pages and "Postgres" in pages["PostgreSQL"].aliases
    assert len(pages["PostgreSQL"].source_refs) == 2
    assert len(pages["Cortex-A5"].source_refs) == 1 and len(pages["Cortex-A9"].source_refs) == 1
    [request] = model.merges
    assert "Cortex" not in request["messages"][1]["content"]
    assert '"llm.merges"' in (tmp_path / "workers.log").read_text()
