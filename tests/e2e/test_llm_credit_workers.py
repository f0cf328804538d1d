"""Real worker processes (`kbwiki worker`) with the LLM extractor: a provider that answers 402
(out of credit) pauses the KB in `kbwiki status` and the log without spending retries, and
`kbwiki resume` lets every document finish at once (the pause's own recheck is 10 minutes away)."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.ingest import lane_rows
from kbwiki.status import kb_status, status_lines
from kbwiki.workers import start_workers
from stages.ingest import submit_document
from tests.e2e.conftest import wait_until
from tests.e2e.test_llm_workers import GOOD
from tests.e2e.test_recovery import _kill_tree
from tests.support.llm_deps import scripted_llm_env
from tests.support.llm_server import ScriptedLLM, realistic
from wiki.lanes import INGEST, SCOPE_KB

pytestmark = pytest.mark.e2e


def test_out_of_credit_pauses_the_kb_and_resume_finishes_every_document(deps, monkeypatch, tmp_path):
    credit = {"topped_up": False}

    def respond(request):
        if credit["topped_up"]:
            return realistic(request)
        return {"status": 402, "json": {"error": {"message": "Insufficient Balance", "type": "payment_required"}}}

    with ScriptedLLM(respond) as server:
        scripted_llm_env(
            monkeypatch,
            server.url,
            KBWIKI_HOME=str(tmp_path / "home"),
            KBWIKI_LLM_INDEX_INTRO="false",  # this test counts the calls of map only
            KBWIKI_LLM_PAGE_LEADS="false",
            KBWIKI_LLM_PAUSE_S="600",
        )
        kb = deps.kbs.get_or_create(1, f"llm-credit-{uuid.uuid4().hex[:6]}")
        for uri, (title, text) in GOOD.items():
            submit_document(deps, tenant_id=1, knowledge_base_id=kb.id, title=title, content=text, source_uri=uri)
        proc = start_workers(1, 2, tmp_path / "workers.log")
        try:
            [line] = wait_until(
                lambda: [line for line in status_lines(kb_status(deps, kb)) if line.startswith("model paused")],
                60,
                "the KB paused for credit in status",
            )
            assert line.startswith("model paused for credit: HTTP 402") and f"kbwiki resume --kb {kb.name}" in line
            wait_until(
                lambda: all(
                    op.claimed_at is None and op.not_before is not None
                    for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100)
                ),
                60,
                "every document released as paused",
            )
            ops = deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100)
            assert len(ops) == len(GOOD) and all(op.fail_count == 0 for op in ops)
            refused = server.calls
            assert 1 <= refused < len(GOOD)  # documents mapped while one call was refused; the others waited

            credit["topped_up"] = True
            result = CliRunner().invoke(main, ["resume", "--kb", kb.name], catch_exceptions=False)
            assert result.exit_code == 0, result.output
            assert f"resumed {kb.name} (was paused for credit: Insufficient Balance); 4 documents" in result.stdout
            wait_until(
                lambda: deps.docs.count_by_status(kb.id) == {"done": len(GOOD)} and lane_rows(deps, kb.id) == 0,
                120,
                "every document done after resume",
            )
        finally:
            _kill_tree(proc)
    assert server.calls == refused + len(GOOD)  # one call per document after resume: no retry spent
    assert deps.dead_letters.count(tenant_id=1, scope=SCOPE_KB, scope_id=kb.id) == 0
    log = (tmp_path / "workers.log").read_text()
    assert log.count('"llm.out_of_credit"') == 1 and '"llm.retry"' not in log and "map_failed" not in log
    assert not any(line.startswith("model paused") for line in status_lines(kb_status(deps, kb)))
    assert kb_status(deps, kb)["llm_usage"]["models"]["scripted"]["calls"] == len(GOOD)
