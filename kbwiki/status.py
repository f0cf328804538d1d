"""The numbers an operator looks at first: pages, links, orphans, lanes, dead letters, and why
documents were not written."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime

from repos.dead_letter_spool import DeadLetterSpool
from repos.rate_limit import read_notice
from stages.deps import Deps
from stages.llm_gate import RESUME_HINT
from wiki.lanes import SCOPE_KB
from wiki.llm_config import config_from_settings, estimated_usd
from wiki.models import DocStatus, KnowledgeBase
from wiki.plural import counted

#: Skipped or failed documents shown with their reason; the rest are only counted.
NOT_WRITTEN_SAMPLE = 10
NOT_WRITTEN_STATUSES = (DocStatus.skipped, DocStatus.failed)  # document statuses that wrote no page
_REASON_CHARS = 200
NO_WORKER = (
    "no worker is alive for these servers (no heartbeat in the last {ttl:.0f} s): queued work waits"
    " until one runs (`kbwiki worker`)"
)


def status_command(kb: KnowledgeBase) -> str:
    """The ``kbwiki status`` command line of ``kb``, to follow its work: ``kbwiki status --kb NAME``
    (the name quoted for a shell when it needs it), with ``--tenant N`` for a tenant other than 1."""
    tenant = f" --tenant {kb.tenant_id}" if kb.tenant_id != 1 else ""
    return f"kbwiki status --kb {shlex.quote(kb.name)}{tenant}"


def no_worker_warning(deps: Deps) -> str | None:
    """The line to print when no worker has a fresh heartbeat in this database, else None."""
    ttl = deps.settings.worker_ttl_s
    return None if deps.workers.alive_count(ttl) else NO_WORKER.format(ttl=ttl)


def kb_status(deps: Deps, kb: KnowledgeBase) -> dict:
    """A JSON-ready report of one KB: pages by type, link stats, documents by status, lane rows,
    open dead letters (resolved ones, whose document finished since, are history;
    ``dead_letters_spooled``: those waiting in Redis because PostgreSQL was down when they failed;
    workers and ``kbwiki dead-letters`` move them into the table), live workers
    (``{"alive", "heartbeat_ttl_s"}``: any worker on these servers counts, whichever KB it works on),
    and ``not_written``: up to ``NOT_WRITTEN_SAMPLE`` skipped or failed documents as
    ``[{"status", "source_uri", "title", "reason"}]`` (failed first), with ``not_written_more``
    the number of further ones; ``llm_paused``: why the KB's model work waits
    (``{"kind", "status", "message", "base_url", "model", "created_at", "last_seen_at", "resume"}``;
    kind ``config``, ``credit`` or ``budget``, ``resume`` says how to continue) or None;
    ``llm_notice``: what the KB's model calls wait for now (``{"text", "at"}``: "waiting 60 s for
    rate limit (HTTP 429)", "model slow: ...", said by the worker making the call) or None;
    ``llm_usage``: what its model work cost (:func:`llm_usage`)."""
    documents = deps.docs.count_by_status(kb.id)
    sample = deps.docs.sample_not_written(kb.id, NOT_WRITTEN_SAMPLE)
    total = sum(documents.get(s, 0) for s in NOT_WRITTEN_STATUSES)
    return {
        "knowledge_base": {"name": kb.name, "id": kb.id, "tenant_id": kb.tenant_id},
        "pages": deps.pages.counts_by_type(kb.id),
        "links": deps.pages.link_stats(kb.id),
        "documents": documents,
        "lanes": deps.ops.counts_by_lane(SCOPE_KB, kb.id),
        "dead_letters": deps.dead_letters.count(tenant_id=kb.tenant_id, scope=SCOPE_KB, scope_id=kb.id),
        "dead_letters_spooled": DeadLetterSpool(deps.redis, deps.settings.key_prefix).count(
            tenant_id=kb.tenant_id, scope_id=kb.id
        ),
        "workers": {
            "alive": deps.workers.alive_count(deps.settings.worker_ttl_s),
            "heartbeat_ttl_s": deps.settings.worker_ttl_s,
        },
        "llm_paused": _llm_paused(deps, kb),
        "llm_notice": read_notice(deps.redis, deps.settings.key_prefix, kb.id),
        "llm_usage": llm_usage(deps, kb),
        "not_written": sample,
        # Counts and sample are two reads: a document changing in between must not make this negative.
        "not_written_more": max(0, total - len(sample)),
    }


def _llm_paused(deps: Deps, kb: KnowledgeBase) -> dict | None:
    """Why the KB's model work waits (``wiki_llm_config_errors``) and how to resume it, or None."""
    row = deps.llm_errors.get(kb.id)
    if row is None:
        return None
    report = row.model_dump(mode="json", exclude={"knowledge_base_id", "fingerprint"})
    report["resume"] = RESUME_HINT.get(row.kind, RESUME_HINT["config"]).replace("NAME", kb.name)
    return report


def llm_usage(deps: Deps, kb: KnowledgeBase) -> dict:
    """The KB's model usage: ``{"models": {model: {"extractions", "failures", "calls",
    "prompt_tokens", "completion_tokens", "estimated_tokens", "cache_hits", "estimated_usd"}},
    "total": {... the same summed},
    "token_budget", "budget_spent_tokens"}``. ``estimated_usd`` is the tokens at the KB's prices
    (``KBWIKI_LLM_PRICE_IN_PER_MTOK`` / ``_OUT_PER_MTOK`` or ``wiki_config.llm``) for the KB's
    current model; None (unknown) for another model or when no price is set. ``token_budget``
    None: no budget; ``budget_spent_tokens`` counts since the last ``kbwiki resume --reset-budget``."""
    config = config_from_settings(deps.settings).with_override(kb.wiki_config.llm)
    fields = (
        "extractions",
        "failures",
        "calls",
        "prompt_tokens",
        "completion_tokens",
        "estimated_tokens",
        "cache_hits",
    )
    models: dict[str, dict] = {}
    total: dict = dict.fromkeys(fields, 0)
    for row in deps.llm_usage.for_kb(kb.id):
        entry = {f: getattr(row, f) for f in fields}
        price = estimated_usd(config, row.prompt_tokens, row.completion_tokens) if row.model == config.model else None
        entry["estimated_usd"] = None if price is None else round(price, 6)
        models[row.model] = entry
        for f in fields:
            total[f] += entry[f]
    prices = [m["estimated_usd"] for m in models.values()]
    total["estimated_usd"] = round(sum(prices), 6) if prices and None not in prices else None
    return {
        "models": models,
        "total": total,
        "token_budget": config.token_budget,
        "budget_spent_tokens": deps.llm_usage.budget_spent(kb.id),
    }


def usage_lines(usage: dict) -> list[str]:
    """The text form of :func:`llm_usage`: one line per model, and the budget when there is one.
    Tokens kbwiki counted itself (the server gave no plausible usage) are said to be estimated."""
    lines = []
    for model, u in usage.get("models", {}).items():
        price = (
            f"estimated ${u['estimated_usd']:.4f}"
            if u["estimated_usd"] is not None
            else "price unknown (set KBWIKI_LLM_PRICE_IN_PER_MTOK and _OUT_PER_MTOK)"
        )
        failed = f" ({counted(u['failures'], 'failed try', 'failed tries')})" if u.get("failures") else ""
        estimated = (
            f" ({u['estimated_tokens']} of them estimated: the server gave no usable count)"
            if u.get("estimated_tokens")
            else ""
        )
        lines.append(
            f"model usage {model}: {counted(u['extractions'], 'extraction')}{failed}, {counted(u['calls'], 'call')},"
            f" {counted(u['prompt_tokens'], 'token')} in, {u['completion_tokens']} out{estimated},"
            f" {counted(u['cache_hits'], 'cache hit')}, {price}"
        )
    if usage.get("token_budget") is not None:
        lines.append(f"token budget: {usage['budget_spent_tokens']} of {counted(usage['token_budget'], 'token')} spent")
    return lines


def _one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace runs as one space), cut to ``limit`` characters with "..."."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def status_lines(report: dict) -> list[str]:
    """The text form of a ``kb_status`` report: one ``section: key=value, ...`` line per count
    section, then the not-written sample, one ``  <status> <source_uri>: <reason>`` line each
    (the title when there is no source_uri), and ``  ... and N more`` when it was cut."""
    lines = []
    for section, values in report.items():
        if section in ("not_written", "not_written_more", "llm_paused", "llm_usage", "llm_notice"):
            continue
        if isinstance(values, dict):
            lines.append(
                f"{section}: " + ", ".join(f"{k}={v}" for k, v in sorted(values.items()))
                if values
                else f"{section}: none"
            )
        elif section == "dead_letters_spooled" and values:
            lines.append(
                f"{section}: {values} (in Redis: PostgreSQL was down when they failed;"
                " `kbwiki dead-letters list` moves them into the table)"
            )
        else:
            lines.append(f"{section}: {values}")
    workers = report.get("workers", {})
    if workers.get("alive") == 0:
        lines.append(NO_WORKER.format(ttl=workers["heartbeat_ttl_s"]))
    lines += usage_lines(report.get("llm_usage") or {})
    notice = report.get("llm_notice")
    if notice:
        at = datetime.fromtimestamp(notice["at"], UTC).strftime("%H:%M:%S UTC")
        lines.append(f"model: {_one_line(notice['text'], _REASON_CHARS)}, at {at}")
    paused = report.get("llm_paused")
    if paused:
        kind = paused.get("kind", "config")
        where = f"from {paused['base_url'] or 'the default endpoint'} for model {paused['model']}"
        message = _one_line(paused["message"], _REASON_CHARS)
        if kind == "budget":
            head = f"model paused: {message} (model {paused['model']}, since {paused['created_at']})"
        elif kind == "credit":
            head = f"model paused for credit: HTTP {paused['status']} {where} since {paused['created_at']}: {message}"
        else:
            head = f"model paused: HTTP {paused['status']} {where} since {paused['created_at']}: {message}"
        waits = "its model work waits: documents to map, page leads"
        if paused.get("probes"):
            waits += f"; {counted(paused['probes'], 'probe')} refused so far"
        lines.append(f"{head} ({waits}; {paused.get('resume') or RESUME_HINT['config']})")
    sample, more = report.get("not_written", []), report.get("not_written_more", 0)
    if sample or more:
        lines.append("not written:")
        for doc in sample:
            reason = _one_line(doc["reason"], _REASON_CHARS) or "(no reason recorded)"
            lines.append(f"  {doc['status']} {doc['source_uri'] or doc['title']}: {reason}")
        if more:
            lines.append(f"  ... and {more} more")
    return lines
