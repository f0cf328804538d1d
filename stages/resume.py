"""Resume: let a KB whose model work is paused (out of credit, token budget spent, or a refused
configuration) continue at once, instead of after a configuration change or the pause's recheck.

The pause lives in ``wiki_llm_config_errors`` and its ops were released with a ``not_before``
(``llm_pause_s``); resuming drops the pause, makes those ops claimable now and sends the KB's
ingest and page-lead triggers, so a running worker maps them within a trigger's round trip.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from repos.llm_errors import LLMConfigErrorRow
from stages.deps import Deps
from wiki.errors import ResumeRefused
from wiki.lanes import INGEST, LEAD, SCOPE_KB, Actor
from wiki.llm_config import config_from_settings
from wiki.plural import counted

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class ResumeResult:
    """What ``resume_kb`` did: the ``pause`` it dropped (None: the KB was not paused), the ops it
    made claimable now (``woken``), and with ``--reset-budget`` the tokens the budget had counted
    (``budget_reset_from``, else None)."""

    pause: LLMConfigErrorRow | None
    woken: int
    budget_reset_from: int | None


def resume_kb(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    reset_budget: bool = False,
) -> ResumeResult:
    """Drop the KB's pause, make its waiting ingest and lead ops claimable now and trigger those lanes.

    ``reset_budget`` starts the KB's token budget count from zero first (``wiki_llm_usage`` keeps
    the totals). Raises ``UnknownKnowledgeBase`` for an unknown or deleted KB, and
    ``ResumeRefused`` when the KB has a token budget that is still spent and ``reset_budget`` is
    not given (resuming would pause it again before its first call). Idempotent.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    budget = config_from_settings(deps.settings).with_override(kb.wiki_config.llm).token_budget
    with deps.pool.connection() as conn:
        reset_from = deps.llm_usage.reset_budget(kb.id, conn=conn) if reset_budget else None
        if not reset_budget and budget is not None:
            spent = deps.llm_usage.budget_spent(kb.id, conn=conn)
            if spent >= budget:
                raise ResumeRefused(
                    f"the token budget of {kb.name!r} is still spent ({spent} of {counted(budget, 'token')}): raise it"
                    " (wiki_config.llm.token_budget or KBWIKI_LLM_TOKEN_BUDGET) or pass --reset-budget"
                )
        pause = deps.llm_errors.clear(kb.id, conn=conn)
        woken = deps.ops.wake(INGEST, SCOPE_KB, kb.id, conn=conn) + deps.ops.wake(LEAD, SCOPE_KB, kb.id, conn=conn)
    triggers = deps.triggers(tenant_id, kb.id)
    for actor in (Actor.ingest, Actor.leads):
        triggers.send(actor, debounce=False)
    log.info(
        "llm.resumed",
        knowledge_base_id=kb.id,
        was_paused=pause.kind if pause else None,
        woken=woken,
        budget_reset_from=reset_from,
    )
    return ResumeResult(pause, woken, reset_from)
