"""The numbers an operator looks at first: pages, links, orphans, lanes, dead letters, and why
documents were not written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from wiki.models import KnowledgeBase

if TYPE_CHECKING:  # importing actors builds the broker: only once the servers are known
    from actors.deps import Deps

#: Skipped or failed documents shown with their reason; the rest are only counted.
NOT_WRITTEN_SAMPLE = 10
NOT_WRITTEN_STATUSES = ("skipped", "failed")  # document statuses that wrote no page
_REASON_CHARS = 200
NO_WORKER = (
    "no worker is alive for these servers (no heartbeat in the last {ttl:.0f} s): queued work waits"
    " until one runs (`kbwiki worker`)"
)


def no_worker_warning(deps: Deps) -> str | None:
    """The line to print when no worker has a fresh heartbeat in this database, else None."""
    ttl = deps.settings.worker_ttl_s
    return None if deps.workers.alive_count(ttl) else NO_WORKER.format(ttl=ttl)


def kb_status(deps: Deps, kb: KnowledgeBase) -> dict:
    """A JSON-ready report of one KB: pages by type, link stats, documents by status, lane rows,
    dead letters (``dead_letters_spooled``: those waiting in Redis because PostgreSQL was down when
    they failed; workers and ``kbwiki dead-letters`` move them into the table), live workers
    (``{"alive", "heartbeat_ttl_s"}``: any worker on these servers counts, whichever KB it works on),
    and ``not_written``: up to ``NOT_WRITTEN_SAMPLE`` skipped or failed documents as
    ``[{"status", "source_uri", "title", "reason"}]`` (failed first), with ``not_written_more``
    the number of further ones."""
    from actors.lanes import SCOPE_KB
    from repos.dead_letter_spool import DeadLetterSpool

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
        "not_written": sample,
        # Counts and sample are two reads: a document changing in between must not make this negative.
        "not_written_more": max(0, total - len(sample)),
    }


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
        if section in ("not_written", "not_written_more"):
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
    sample, more = report.get("not_written", []), report.get("not_written_more", 0)
    if sample or more:
        lines.append("not written:")
        for doc in sample:
            reason = _one_line(doc["reason"], _REASON_CHARS) or "(no reason recorded)"
            lines.append(f"  {doc['status']} {doc['source_uri'] or doc['title']}: {reason}")
        if more:
            lines.append(f"  ... and {more} more")
    return lines
