"""Deps whose extractor is the LLM one on a scripted OpenAI-compatible server, and the map op a
test re-runs: one place for the settings every LLM integration test starts from."""

from __future__ import annotations

from typing import Any

from repos.pending_ops import PendingOp
from stages.deps import Deps, build_deps
from wiki.extract.llm import LLMExtractor
from wiki.lanes import INGEST, SCOPE_KB
from wiki.llm_config import config_from_settings

#: Fast failures: short timeouts, two transport tries, short waits and pauses, one op retry; no
#: index introduction, no page leads.
FAST = {
    "llm_timeout_s": 2.0,
    "llm_transport_attempts": 2,
    "llm_retry_max_wait_s": 0.2,
    "llm_pause_s": 0.2,
    "wiki_max_fail_retries": 1,
    "document_retry_backoff_ms": 0,
    "llm_index_intro": False,  # tests count the calls of map; tests/integration/test_index_intro.py turns it on
    "llm_page_leads": False,  # likewise; tests/integration/test_page_leads.py turns it on
}


def scripted_llm_deps(settings, pool, url: str, **changes: Any) -> Deps:
    """Deps on the test database whose extractor calls the scripted server at ``url`` as model
    ``scripted-model``, with ``FAST`` settings unless ``changes`` say otherwise; the KB pauses of
    earlier tests (``wiki_llm_config_errors``) are emptied first."""
    with pool.connection() as conn:
        conn.execute("TRUNCATE wiki_llm_config_errors")
    fast = settings.model_copy(
        update={
            "extractor": "llm",
            "llm_base_url": url,
            "llm_model": "scripted-model",
            "llm_api_key": "k",
            **FAST,
            **changes,
        }
    )
    return build_deps(fast, pool=pool, extractor=LLMExtractor(config_from_settings(fast)))


def ingest_op(deps: Deps, kb, doc) -> PendingOp:
    """A fresh ingest op for ``doc`` in ``kb``'s lane (for a test that maps it again)."""
    return deps.ops.enqueue(
        tenant_id=1,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op="ingest",
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
    )


def scripted_llm_env(monkeypatch, url: str, model: str = "scripted", **env: str) -> None:
    """Point worker processes (and commands) started by the test at the scripted server at ``url``:
    ``KBWIKI_EXTRACTOR=llm``, its base URL, ``model`` and a key, plus ``env`` (more ``KBWIKI_*``
    variables, by name)."""
    for key, value in {
        "KBWIKI_EXTRACTOR": "llm",
        "KBWIKI_LLM_BASE_URL": url,
        "KBWIKI_LLM_MODEL": model,
        "KBWIKI_LLM_API_KEY": "k",
        **env,
    }.items():
        monkeypatch.setenv(key, value)
