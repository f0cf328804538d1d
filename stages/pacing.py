"""When cross-linking waits: while documents of a KB are still coming in, relinking a page after
every batch is mostly wasted, because a later batch's names send it back to be relinked anyway.

Cross-link and back-link runs of a KB wait while its ingest or reduce lane has rows, up to the
KB's defer (``wiki.settings.kb_tunables(...).link_defer_s``) after the oldest op of their own lane
was queued; then the back-link run merges what waited on the finalize lane with the pages
mentioning the new names, so each page is relinked once per round. On the demo, relinking after
every batch and again for back-links cost 10,311 page relinks (6,400 without back-links); one
round at the end costs about one per page (3,932).

The defer is ``DEFER_S`` (300 s) with the offline extractor: its ingest is CPU work, and every
relink during it takes a core from the extraction, so a round every few minutes is all a long
ingest should pay. With the model extractor (``KBWIKI_EXTRACTOR=llm``) the ingest is paced by the
model's latency and the CPU is mostly idle while calls are in flight: waiting for the last document
then only pushes all the linking into one round after it (bench/llm_pipeline.py, 500 documents at
1 s a call: 20-26 s after the model phase). Such a KB links in rounds of
``KBWIKI_LLM_LINK_DEFER_S`` (20 s) during the ingest, on the idle CPU, so the round after the last
document only has the last ~20 s of pages to link; the price is that a page mentioned again by a
later batch is relinked more than once. A KB's ``wiki_config.link_defer_s`` overrides either.

Page leads (``stages.leads``, model KBs only) wait for the ingest and reduce lanes the same way, and
linking also waits for the lead lane: a lead rewrites its page's text, so a page linked before its
lead was written would be linked twice (500 linux-doc files at 0.2 s a call: the round after the
last document took 32 s with leads and linking interleaved, the lead runs starved of the GIL by
cross-link threads in the same processes).

The back-link run that starts a round queues the waiting pages and those mentioning new names as
``OP_ROUND`` ops, which cross-link runs take at once: queued as fresh ops, they waited one more
defer, and the next round took them back before they were due, so during a model-paced ingest
cross-linking was pushed to the end (500 documents at 1 s a call: 1,832 pages after the last one).

A deferred run claims nothing and sends nothing; the next reduce batch triggers the lanes again,
and the step schedules one delayed re-check (``stages.triggers.Triggers.recheck``) for when the oldest op's
defer runs out, so a KB whose batches pause is still linked on time (the recovery sweeper's period
may be longer than a model KB's defer).
"""

from __future__ import annotations

from datetime import UTC, datetime

from repos.pending_ops import TaskPendingOpsRepository
from wiki.lanes import BACKLINK, FINALIZE, INGEST, LEAD, OP_ROUND, REDUCE, SCOPE_KB
from wiki.settings import OFFLINE_LINK_DEFER_S

#: Seconds a run waits for the KB's ingest and reduce lanes to empty before it goes ahead anyway,
#: with the offline extractor: a KB that never stops receiving documents still gets linked every
#: few minutes, in rounds large enough that a long ingest (linux-doc's is about 7 minutes) pays
#: for one or two.
DEFER_S = OFFLINE_LINK_DEFER_S


#: The lanes a run of each deferred lane waits to see empty: what still changes the pages it works on.
UPSTREAM = {LEAD: (INGEST, REDUCE), BACKLINK: (INGEST, REDUCE, LEAD), FINALIZE: (INGEST, REDUCE, LEAD)}


def link_wait_s(
    kb_id: str, lane: str, *, ops: TaskPendingOpsRepository, defer_s: float = DEFER_S, now: datetime | None = None
) -> float:
    """Seconds a run of ``lane`` should still wait: until the oldest op of ``lane`` is ``defer_s``
    old, while a lane ``UPSTREAM`` of it has rows; 0 (go ahead) when ``lane`` is empty, that op is
    already ``defer_s`` old, or the lanes upstream are empty."""
    oldest = ops.peek(lane, SCOPE_KB, kb_id, 1)
    if not oldest or oldest[0].op == OP_ROUND:  # a back-link round's pages: it has waited already
        return 0.0
    left = defer_s - ((now or datetime.now(UTC)) - oldest[0].enqueued_at).total_seconds()
    if left <= 0:
        return 0.0
    if any(ops.pending_count(upstream, SCOPE_KB, kb_id) for upstream in UPSTREAM.get(lane, (INGEST, REDUCE))):
        return left
    return 0.0
