"""Page leads: a model re-synthesises an entity or concept page's opening paragraph from its first
contributions (``wiki.render.lead_inputs``), outside any reduce transaction.

A reduce batch queues on the KB's lead lane the pages it wrote that at least two contributions
describe and that have no lead written for those contributions (``wiki.merge.lead_due``), one op
per page with its slug as the dedup key (none when one waits already). A run claims up to
``PAGES_PER_CALL`` pages, reads them without a lock, asks the model for the leads of
those still due in ONE call (``wiki.extract.llm.leads``; the KB's share of the shared rate limit, its
usage and budget), then, under the row locks, stores each lead only on a page whose lead key is
still the one asked about (a page a later batch changed meanwhile is queued again by that batch)
and queues the pages for cross-linking, since the new text can name other pages.

A lead is written again only when the page's title or first ``LEAD_SOURCES`` contributions change,
so a page cited by 1,000 documents costs about as many lead calls as one cited by 10. Runs wait
while documents are still coming, like linking (``stages.pacing``, the KB's ``link_defer_s``: 20 s
with a model): a page that gains its second, third and fourth source within a round is asked about
once, and a call carries up to 8 pages instead of the few one batch queues
(bench/llm_pipeline.py a, 500 files: 117 lead calls for 420 documents without the wait). Model work
of a paused KB waits; an out-of-credit or configuration error pauses the KB as map's does; a call
that fails for good after ``wiki_max_fail_retries`` tries leaves the page with its chosen lead
(``wiki.render.first_lead``): a lead refines a page, it never holds the KB's work.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime

import structlog

from repos.pending_ops import PendingOp, TaskPendingOpsRepository
from stages import llm_gate
from stages.claims import claim_lane, count_failure, released_on_failure, room_for_another_run
from stages.crosslink import enqueue_touched
from stages.delete import active_kb_or_drain
from stages.deps import Deps
from stages.pacing import link_wait_s
from wiki.errors import LLMConfigError, LLMError, error_text
from wiki.extract.llm.ratelimit import sharing
from wiki.lanes import LEAD, OP_TOUCH, SCOPE_KB, Actor
from wiki.merge import keep_lead, lead_due
from wiki.models import KnowledgeBase, Page
from wiki.revisions import Writer, written_by
from wiki.settings import kb_tunables

log = structlog.get_logger(__name__)


@dataclass
class LeadResult:
    """Ops claimed; pages asked about, given a lead, and changed meanwhile (``stale``); whether the
    KB's model work is paused; ops dropped (leads are off for the KB); ops left on the lane."""

    claimed: int = 0
    asked: int = 0
    written: int = 0
    stale: int = 0
    paused: bool = False
    dropped: int = 0
    remaining: int = 0
    wait_s: float = 0.0  # > 0: the run waited for the ingest (``stages.pacing``) and claimed nothing


def enqueue_leads(kb: KnowledgeBase, slugs: list[str], *, ops: TaskPendingOpsRepository, conn=None) -> int:
    """Queue ``slugs`` on the KB's lead lane, one op per slug (its dedup key); returns the ops written."""
    return ops.enqueue_keys(
        tenant_id=kb.tenant_id,
        task_type=LEAD,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_TOUCH,
        keys=sorted(slugs),
        conn=conn,
    )


def run_leads(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    fan_out=None,
    now: datetime | None = None,
) -> LeadResult | None:
    """Write the leads of up to ``PAGES_PER_CALL`` queued pages (see the module), then delete their ops.

    Claims nothing while the KB's model work is paused (``paused``) or documents are still coming
    (``wait_s``, ``stages.pacing.link_wait_s``); drops the lane's ops when the KB has no model or
    its ``page_leads`` is off. ``fan_out()`` is called after the claim when
    unclaimed ops remain and fewer than the KB's map slots are being written. Returns None when
    the KB is gone (its lanes drained). Raises what PostgreSQL raises (the op is released).
    """
    kb = active_kb_or_drain(tenant_id, knowledge_base_id, kbs=deps.kbs, ops=deps.ops)
    if kb is None:
        return None
    model = llm_gate.extractor_for(deps.extractor, kb.id, kbs=deps.kbs)
    if not llm_gate.is_llm(model) or not model.config.page_leads:
        dropped = claim_lane(LEAD, kb.id, 1000, deps)
        deps.ops.delete_by_ids([op.id for op in dropped])
        return LeadResult(dropped=len(dropped), remaining=deps.ops.pending_count(LEAD, SCOPE_KB, kb.id))
    if llm_gate.paused(model, kb.id, deps):
        return LeadResult(paused=True, remaining=deps.ops.pending_count(LEAD, SCOPE_KB, kb.id))
    from wiki.extract.llm.leads import PAGES_PER_CALL  # not at import: offline workers never load the SDK

    tunables = kb_tunables(deps.settings, kb)
    wait_s = link_wait_s(kb.id, LEAD, ops=deps.ops, defer_s=tunables.link_defer_s, now=now)
    if wait_s:
        return LeadResult(remaining=deps.ops.pending_count(LEAD, SCOPE_KB, kb.id), wait_s=wait_s)
    claimed = claim_lane(LEAD, kb.id, PAGES_PER_CALL, deps)
    result = LeadResult(claimed=len(claimed))
    if claimed and fan_out is not None:
        runs, per_run = tunables.map_parallel, PAGES_PER_CALL  # a run claims pages, up to 8
        if room_for_another_run(LEAD, kb.id, runs=runs, per_run=per_run, ops=deps.ops, settings=deps.settings):
            fan_out()
    with released_on_failure(claimed, deps):
        if claimed:
            _write_leads(kb, model, claimed, result, deps)
    result.remaining = deps.ops.pending_count(LEAD, SCOPE_KB, kb.id)
    return result


def _write_leads(kb: KnowledgeBase, model, claimed: list[PendingOp], result: LeadResult, deps: Deps) -> None:
    from wiki.extract.llm.leads import LeadQuestion, write_leads

    slugs = sorted({op.dedup_key for op in claimed})
    questions = [
        LeadQuestion(p.slug, p.title, p.page_type, tuple(due[0]), due[1])
        for p in deps.pages.get_many(kb.id, slugs).values()
        if (due := lead_due(p))
    ]
    result.asked = len(questions)
    leads: list[str] = []
    if questions:
        config = model.config
        try:
            with sharing(kb.id):
                leads, stats = write_leads(
                    model.client, questions, deadline=time.monotonic() + config.document_budget_s
                )
        except LLMConfigError as exc:  # out of credit or a refused configuration: the KB pauses
            llm_gate.record_config_error(model, kb.id, exc, llm_errors=deps.llm_errors)
            deps.ops.release([op.id for op in claimed], by=deps.worker_id, not_before_s=deps.settings.llm_pause_s)
            result.paused = True
            return
        except LLMError as exc:
            _count_failure(kb, claimed, exc, deps)
            return
        deps.llm_usage.add(
            kb.id,
            config.model,
            calls=stats.calls,
            prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens,
            estimated_tokens=stats.estimated_tokens,
        )
        if deps.llm_errors.clear(kb.id):  # the model answers again: a pause recorded earlier is over
            log.info("llm.config_error_cleared", knowledge_base_id=kb.id, model=config.model)
        written = sum(1 for lead in leads if lead)
        # an answer that is not the schema's JSON, or that leaves pages out: a warning, the pages keep first_lead
        (log.warning if stats.invalid or written < len(questions) else log.info)(
            "lead.invalid" if stats.invalid else "lead.written",
            knowledge_base_id=kb.id,
            model=config.model,
            pages=len(questions),
            leads=written,
            invalid=stats.invalid,
            unknown_handles=stats.unknown_handles,
            prompt_tokens=stats.prompt_tokens,
            completion_tokens=stats.completion_tokens,
        )
    with deps.pool.connection() as conn:
        deps.pages.lock_link_graph(kb.id, conn, shared=True)  # rewrites content, moves and deletes nothing
        answered = {q.slug: (q.key, lead) for q, lead in zip(questions, leads, strict=True) if lead}
        held = deps.pages.get_many(kb.id, answered, conn=conn, for_update=True)
        fresh: list[Page] = []
        for slug, page in held.items():
            key, lead = answered[slug]
            kept = keep_lead(page, page.model_copy(update={"lead": lead, "lead_key": key}))
            if kept.lead_key != key or kept.lead != lead:  # its title or first contributions changed meanwhile
                result.stale += 1
                continue
            fresh.append(kept)
        deps.pages.save_many(fresh, conn=conn, written_by=written_by(Writer.lead))
        enqueue_touched(kb, sorted(p.slug for p in fresh), ops=deps.ops, conn=conn)
        deps.ops.delete_by_ids([op.id for op in claimed], conn=conn)
    result.written = len(fresh)


def _count_failure(kb: KnowledgeBase, claimed: list[PendingOp], exc: Exception, deps: Deps) -> None:
    """A lead call that failed (transport retries or its deadline spent): release each page's op with
    its backoff, or drop it past ``wiki_max_fail_retries`` (the page keeps its chosen lead)."""
    dropped, delay = [], 0.0
    for op in claimed:
        failure = count_failure(op, deps)
        if failure is not None and failure.spent:
            deps.ops.delete_by_ids([op.id])
            dropped.append(op.dedup_key)
        elif failure is not None:
            delay = max(delay, failure.delay_s)
    log.warning(
        "lead.failed", knowledge_base_id=kb.id, error=error_text(exc), retry_in_s=round(delay, 1), gave_up=dropped
    )


def leads_step(tenant_id: int, knowledge_base_id: str, deps: Deps) -> LeadResult | None:
    """What ``wiki_write_leads`` does with a trigger: clear it, write one lead op's leads
    (:func:`run_leads`, fanning out to more runs), trigger cross-link for the pages written and the
    next run while ops are left."""
    triggers = deps.triggers(tenant_id, knowledge_base_id)
    triggers.clear(Actor.leads)
    result = run_leads(tenant_id, knowledge_base_id, deps, fan_out=lambda: triggers.send(Actor.leads, debounce=False))
    if result is None:
        return None
    if result.claimed or result.dropped:
        log.info(
            "lead.done",
            knowledge_base_id=knowledge_base_id,
            asked=result.asked,
            written=result.written,
            stale=result.stale,
            paused=result.paused,
            dropped=result.dropped,
            remaining=result.remaining,
        )
    if result.claimed and not result.remaining:
        # linking waited for the leads (stages.pacing): at once, the back-link run merges the touched pages
        triggers.send(Actor.backlink, debounce=False)
        triggers.send(Actor.crosslink)
    if result.wait_s:
        triggers.recheck(Actor.leads, result.wait_s)
    if result.claimed and result.remaining and not result.paused:  # at once: the model paces the runs
        triggers.send(Actor.leads, debounce=False)
    return result
