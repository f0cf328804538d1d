"""How long linking waits for a KB's ingest (``stages.pacing``), on real PostgreSQL and Redis: the
offline extractor's 300 s, the model extractor's ``llm_link_defer_s`` (issue 16: a model-paced
ingest leaves the CPU idle, so it links in rounds of ~20 s), a KB's own ``wiki_config.link_defer_s``,
and the delayed re-check a deferred run schedules. Time is passed as ``now=``, never slept."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import _settle, _submit, env  # noqa: F401  (env: fixture)
from wiki.lanes import BACKLINK, FINALIZE, INGEST, OP_ROUND, SCOPE_KB
from wiki.models import KnowledgeBase, WikiConfig
from wiki.settings import OFFLINE_LINK_DEFER_S, Settings, kb_tunables


def test_the_link_defer_is_the_offline_one_the_model_one_or_the_kbs_own(monkeypatch):
    kb = KnowledgeBase(id="kb", tenant_id=1, name="kb")
    assert kb_tunables(Settings(extractor="offline"), kb).link_defer_s == OFFLINE_LINK_DEFER_S == 300
    assert kb_tunables(Settings(extractor="llm"), kb).link_defer_s == 20
    monkeypatch.setenv("KBWIKI_LLM_LINK_DEFER_S", "7.5")
    assert kb_tunables(Settings(extractor="llm"), kb).link_defer_s == 7.5
    assert kb_tunables(Settings(extractor="offline"), kb).link_defer_s == 300  # only a model KB's
    own = kb.model_copy(update={"wiki_config": WikiConfig(link_defer_s=0)})
    assert kb_tunables(Settings(extractor="offline"), own).link_defer_s == 0  # a KB's own wins, 0 too
    assert kb_tunables(Settings(extractor="llm"), own).link_defer_s == 0
    for bad in ({"llm_link_defer_s": -1}, {"llm_link_defer_s": float("inf")}):
        with pytest.raises(ValueError):
            Settings(**bad)
    with pytest.raises(ValueError):
        WikiConfig.model_validate({"link_defer_s": -1})


def _waiting_kb(deps, kb):
    """Pages, one backlink op and one finalize op waiting, and a document still in the ingest lane."""
    from stages.backlink import enqueue_keys
    from stages.crosslink import enqueue_touched

    _submit(
        deps,
        kb,
        "Alpha",
        "The Alpha line mentions the Sprocket Drive in passing.",
        "* Alpha Part (entity): Alpha Part is a part.",
    )
    _submit(deps, kb, "Delta", "* Sprocket Drive (entity): The Sprocket Drive turns every wheel.")
    _settle(deps, kb)
    enqueue_keys(kb, {"sprocket drive"}, ops=deps.ops)
    enqueue_touched(kb, ["doc-alpha"], ops=deps.ops)
    deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op="ingest",
        dedup_key="a-document-being-mapped",
    )


def _oldest(deps, kb, lane):
    return deps.ops.peek(lane, SCOPE_KB, kb.id, 1)[0].enqueued_at


def test_a_model_kb_links_once_its_oldest_op_is_older_than_the_llm_defer_while_the_offline_one_waits(env):  # noqa: F811
    from stages.backlink import run_backlink
    from stages.crosslink import run_crosslink
    from stages.pacing import DEFER_S, link_wait_s

    deps, kb = env
    _waiting_kb(deps, kb)
    offline = deps.settings.model_copy(update={"extractor": "offline"})
    llm = deps.settings.model_copy(update={"extractor": "llm", "llm_link_defer_s": 20.0})
    after_llm_defer = _oldest(deps, kb, BACKLINK) + timedelta(seconds=21)

    # offline: 21 s is well inside DEFER_S, so both runs wait and claim nothing
    waiting = run_backlink(kb.tenant_id, kb.id, replace(deps, settings=offline), now=after_llm_defer)
    assert waiting.deferred and waiting.claimed == 0 and waiting.remaining == 1
    assert DEFER_S - 21 - 1 < waiting.wait_s <= DEFER_S - 21  # the rest of the 300 s
    crosslink_now = _oldest(deps, kb, FINALIZE) + timedelta(seconds=21)
    held = run_crosslink(kb.tenant_id, kb.id, replace(deps, settings=offline), now=crosslink_now)
    assert held.claimed == 0 and held.remaining == 1 and held.wait_s > 200
    assert link_wait_s(kb.id, BACKLINK, ops=deps.ops, now=after_llm_defer) > 0  # defer_s defaults to DEFER_S
    assert not link_wait_s(kb.id, BACKLINK, ops=deps.ops, defer_s=20, now=after_llm_defer)

    # the model KB before its 20 s are up: it waits, for the second that is left
    early = run_backlink(kb.tenant_id, kb.id, replace(deps, settings=llm), now=after_llm_defer - timedelta(seconds=2))
    assert early.deferred and early.claimed == 0 and 0 < early.wait_s <= 1

    # the model KB after 21 s: both go ahead although a document is still in the ingest lane
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == 1
    linked = run_crosslink(kb.tenant_id, kb.id, replace(deps, settings=llm), now=crosslink_now)
    assert (linked.claimed, linked.pages, linked.wait_s) == (1, 1, 0)
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 0
    done = run_backlink(kb.tenant_id, kb.id, replace(deps, settings=llm), now=after_llm_defer)
    assert (done.deferred, done.claimed, done.wait_s) == (False, 1, 0)
    assert done.found >= 2 and done.queued == done.found  # the pages mentioning "sprocket drive"
    assert deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id) == 0
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == 1


def test_a_kbs_own_link_defer_wins_over_the_extractors(env):  # noqa: F811
    from stages.backlink import run_backlink

    deps, kb = env
    _waiting_kb(deps, kb)
    deps.kbs.set_wiki_config(kb.id, {"link_defer_s": 5})
    offline = deps.settings.model_copy(update={"extractor": "offline"})
    oldest = _oldest(deps, kb, BACKLINK)
    assert run_backlink(
        kb.tenant_id, kb.id, replace(deps, settings=offline), now=oldest + timedelta(seconds=4)
    ).deferred
    done = run_backlink(kb.tenant_id, kb.id, replace(deps, settings=offline), now=oldest + timedelta(seconds=6))
    assert (done.deferred, done.claimed) == (False, 1)


class _SentActor:
    def __init__(self, name: str, sent: list) -> None:
        self.name, self.sent = name, sent

    def send_with_options(self, *, kwargs, delay=None):
        self.sent.append((self.name, kwargs["knowledge_base_id"], delay))


def test_a_deferred_run_rechecks_when_its_defer_runs_out_once_per_wait(env, monkeypatch):  # noqa: F811
    import stages.triggers
    from stages.backlink import backlink_step
    from stages.crosslink import crosslink_step

    deps, kb = env
    _waiting_kb(deps, kb)
    sent: list = []
    monkeypatch.setattr(stages.triggers, "get_actor", lambda name: _SentActor(name, sent))
    llm = deps.settings.model_copy(update={"extractor": "llm", "llm_link_defer_s": 20.0})

    assert crosslink_step(kb.tenant_id, kb.id, replace(deps, settings=llm)).wait_s > 0
    assert backlink_step(kb.tenant_id, kb.id, replace(deps, settings=llm)).deferred
    assert [(name, kb_id) for name, kb_id, _ in sent] == [("wiki_crosslink", kb.id), ("wiki_backlink", kb.id)]
    # due when the oldest op turns 20 s old: no later than the defer (the sweeper's 30 s would be)
    assert all(15_000 < delay <= 20_001 for _, _, delay in sent), sent
    marker = stages.triggers.recheck_key(llm, "wiki_crosslink", kb.id)
    assert 0 < deps.redis.pttl(marker) <= 20_001

    # a burst of triggers while the first re-check is queued sends no more of them
    crosslink_step(kb.tenant_id, kb.id, replace(deps, settings=llm))
    backlink_step(kb.tenant_id, kb.id, replace(deps, settings=llm))
    assert len(sent) == 2

    # once it is due (the marker gone), a run that still waits queues the next one
    deps.redis.delete(marker)
    crosslink_step(kb.tenant_id, kb.id, replace(deps, settings=llm))
    assert [name for name, _, _ in sent] == ["wiki_crosslink", "wiki_backlink", "wiki_crosslink"]
    deps.redis.delete(marker, stages.triggers.recheck_key(llm, "wiki_backlink", kb.id))


def test_the_pages_a_back_link_round_queues_are_cross_linked_at_once(env):  # noqa: F811
    """A round has waited its defer: its pages (OP_ROUND) do not wait another one while the ingest
    goes on (queued as fresh ops, the next round took them back before they were due)."""
    from stages.backlink import run_backlink
    from stages.crosslink import run_crosslink

    deps, kb = env
    _waiting_kb(deps, kb)
    llm = deps.settings.model_copy(update={"extractor": "llm", "llm_link_defer_s": 20.0})
    round_at = _oldest(deps, kb, BACKLINK) + timedelta(seconds=21)
    done = run_backlink(kb.tenant_id, kb.id, replace(deps, settings=llm), now=round_at)
    assert done.claimed == 1 and done.queued >= 2
    assert {op.op for op in deps.ops.peek(FINALIZE, SCOPE_KB, kb.id, 100)} == {OP_ROUND}
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == 1  # documents are still coming
    linked = run_crosslink(kb.tenant_id, kb.id, replace(deps, settings=llm), now=round_at)
    assert (linked.claimed, linked.wait_s) == (1, 0) and linked.pages == done.queued
