"""Feeding a folder (or any iterable of documents) to a KB and waiting for the wiki to catch up
(the cost estimate of ``kbwiki ingest --estimate`` is ``kbwiki.estimate``)."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice

import psycopg
import psycopg_pool
from tqdm import tqdm

from kbwiki.corpus import CorpusDoc, Rejected
from kbwiki.status import status_command
from repos.knowledge import content_hash
from stages.deps import Deps
from stages.ingest import SubmitStatus, prepare_document, store_document, unchanged_sources
from wiki.errors import Interrupted, KnowledgeBaseDeleted, ServersUnreachable, UnknownKnowledgeBase
from wiki.lanes import BACKLINK, FINALIZE, INDEX, INGEST, LEAD, REDUCE, SCOPE_KB, WIKI_LANES
from wiki.models import KnowledgeBase
from wiki.plural import counted

POLL_S = 0.5
#: Errors of servers that went away while a command waits: it waits on (the servers outlive
#: commands and come back on their ports), up to its timeout.
SERVER_AWAY = (ServersUnreachable, psycopg.OperationalError, psycopg_pool.PoolTimeout)


#: "rejected PATH: reason" / "skipped PATH: reason" lines printed at most, the rest counted.
PROBLEMS_SHOWN = 50


def rejected_line(doc: Rejected) -> str:
    """The line that says why an input was not stored: "rejected PATH: reason", or "skipped PATH:
    reason" for a file left out on purpose (``kbwiki.corpus.Skipped``)."""
    return f"{doc.status} {doc.path}: {doc.reason}"


def problem_lines(problems: list[str]) -> list[str]:
    """The first ``PROBLEMS_SHOWN`` problem lines and a count of the rest."""
    more = len(problems) - PROBLEMS_SHOWN
    return problems[:PROBLEMS_SHOWN] + ([f"... {more} more"] if more > 0 else [])


@dataclass
class IngestReport:
    """Counts per outcome, and the reason of every skipped or rejected input."""

    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def queued(self) -> int:
        return self.counts[SubmitStatus.queued]

    def describe(self) -> str:
        head = ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())) or "no documents found"
        return "\n".join([head, *problem_lines(self.problems)])


#: Documents ``ingest_docs`` checks against the KB at once: the unchanged ones of a chunk are found
#: in two statements (``stages.ingest.unchanged_sources``), the others submitted one by one.
SUBMIT_CHUNK = 500


#: Seconds of reading and storing before ``ingest_docs`` shows its counter: a small folder is done
#: before it would show; a large one (about 10 ms a document on 2 cores) would be silent for minutes.
COUNTER_DELAY_S = 2.0


def ingest_docs(
    deps: Deps, kb: KnowledgeBase, docs: Iterable[CorpusDoc | Rejected], progress: bool = False
) -> IngestReport:
    """Submit every document; rejected inputs (binary, undecodable) and skipped ones (a symbolic
    link to a file read anyway) are counted and reported, never stored.
    With ``progress``, a counter of the documents done shows on stderr once they have taken
    ``COUNTER_DELAY_S``. Raises ``repos.knowledge.UnknownKnowledgeBase`` when the KB is (or gets)
    deleted, and ``Interrupted`` on Ctrl-C, saying what was stored so far (each document is stored
    and queued in a transaction of its own, so those stay and go on in the workers)."""
    report = IngestReport()
    counter = tqdm(desc="storing", unit="doc", delay=COUNTER_DELAY_S, mininterval=1.0, disable=not progress)
    try:
        with counter:
            _submit_all(deps, kb, docs, report, counter)
    except KeyboardInterrupt:
        so_far = ", ".join(f"{k}={v}" for k, v in sorted(report.counts.items())) or "nothing yet"
        raise Interrupted(
            f"ingest stopped (Ctrl-C); what it stored so far ({so_far}) stays and goes on in the workers;"
            " run the same ingest again to store the rest (unchanged documents are skipped)"
        ) from None
    return report


def _submit_all(
    deps: Deps, kb: KnowledgeBase, docs: Iterable[CorpusDoc | Rejected], report: IngestReport, counter: tqdm
) -> None:
    """Store and queue ``docs`` in chunks of ``SUBMIT_CHUNK``, counting each outcome in ``report``
    and each document done on ``counter``."""
    items = iter(docs)
    while chunk := list(islice(items, SUBMIT_CHUNK)):
        deps.kbs.get_active(kb.tenant_id, kb.id)
        ready = [prepare_document(d.title, d.text, deps.settings) if isinstance(d, CorpusDoc) else None for d in chunk]
        uris = Counter(doc.source_uri for doc in chunk if isinstance(doc, CorpusDoc))
        versions = {}
        for doc, prepared in zip(chunk, ready):
            # a source given twice in a chunk goes one by one: its first copy may change the row
            if prepared and doc.source_uri and uris[doc.source_uri] == 1:
                title, content, _, skip = prepared
                if not skip:
                    versions[doc.source_uri] = (title, content_hash(content))
        unchanged = unchanged_sources(kb.id, versions, deps)
        for doc, prepared in zip(chunk, ready):
            counter.update()
            if isinstance(doc, Rejected):
                report.counts[doc.status] += 1
                report.problems.append(rejected_line(doc))
                continue
            if doc.source_uri in unchanged:
                report.counts[SubmitStatus.unchanged] += 1
                continue
            result = store_document(
                deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, prepared=prepared, source_uri=doc.source_uri
            )
            report.counts[result.status] += 1
            if result.reason:
                report.problems.append(f"{result.status} {doc.source_uri}: {result.reason}")


def lane_rows(deps: Deps, kb_id: str) -> int:
    """Rows in every wiki lane of the KB (claimed ones included)."""
    counts = deps.ops.counts_by_lane(SCOPE_KB, kb_id)
    return sum(counts.get(lane, 0) for lane in WIKI_LANES)


#: Seconds without progress after which a wait on a KB whose model work is paused gives up: a
#: paused KB waits for `kbwiki resume` or a configuration change, never for time.
PAUSED_GIVE_UP_S = 10.0
#: Seconds between two looks at whether the KB is still live and how many workers are (two small
#: queries): a worker that dies shows this long after its heartbeat's TTL (``KBWIKI_WORKER_TTL_S``).
CHECK_EVERY_S = 2.0
#: The wait's state (stage, lane rows, live workers) is drawn at least this often, and at once
#: (at most once a second) when it changes: the bar alone only moves while documents settle, so
#: it stood still, silent, while the cross-links and the index were made or no worker ran.
STATE_EVERY_S = 10.0

#: What the wiki waits on while a lane has rows, in pipeline order: the first lane with rows names
#: the stage (the later ones wait for it).
STAGES = (
    (INGEST, "mapping documents"),
    (REDUCE, "writing pages"),
    (LEAD, "writing page leads"),
    (FINALIZE, "cross-linking"),
    (BACKLINK, "relinking"),
    (INDEX, "rebuilding the index page"),
)


def wait_state(counts: dict[str, int], workers_alive: int) -> str:
    """One line saying what a wait waits on: the stage, the rows of each wiki lane that has any
    (``ingest=3 finalize=12``) and the live workers, e.g. "cross-linking; finalize=12 index=1;
    2 workers alive", or "...; no worker alive: start one (kbwiki worker)". ``counts`` is
    ``counts_by_lane``'s ``{lane: rows}``."""
    stage = next((name for lane, name in STAGES if counts.get(lane)), "finishing")
    rows = " ".join(f"{lane.removeprefix('wiki:')}={counts[lane]}" for lane in WIKI_LANES if counts.get(lane))
    workers = (
        f"{counted(workers_alive, 'worker')} alive" if workers_alive else "no worker alive: start one (kbwiki worker)"
    )
    return f"{stage}; {rows}; {workers}"


def wait_stopped(deps: Deps, kb: KnowledgeBase) -> Interrupted:
    """The error of a wait the user stopped (Ctrl-C): waiting stopped, the queued work goes on in
    the workers (or waits for one, when none is alive), and the status command that follows it."""
    follow = f"follow it with `{status_command(kb)}`"
    try:
        alive = deps.workers.alive_count(deps.settings.worker_ttl_s)
    except (ServersUnreachable, psycopg.Error):  # the servers went too: say what is sure
        alive = None
    if alive == 0:
        return Interrupted(
            f"waiting stopped (Ctrl-C); the queued work is kept and waits for a worker (none is alive:"
            f" start one with `kbwiki worker`); {follow}"
        )
    return Interrupted(f"waiting stopped (Ctrl-C); the queued work goes on in the workers; {follow}")


def wait_for_lanes(deps: Deps, kb: KnowledgeBase, expected: int, timeout_s: float, progress: bool = True) -> bool:
    """Block until the KB's wiki is complete, with a progress bar of documents settled whose
    postfix says what the wait is on (:func:`wait_state`), drawn at least every ``STATE_EVERY_S``.

    Complete is every lane of the KB empty: documents mapped and reduced (``wiki:ingest``,
    ``wiki:reduce``), cross-links done (``wiki:finalize``) and the index page rebuilt after the last
    batch (``wiki:index``, see ``stages.index``); a running batch still holds its reduce-lane rows.
    Returns False when ``timeout_s`` passes first, or when the KB's model work is paused
    (``wiki_llm_config_errors``) and nothing moved for ``PAUSED_GIVE_UP_S``. Raises
    ``KnowledgeBaseDeleted`` when the KB is deleted meanwhile (its lanes empty then too, but the
    wiki is gone, not complete) and ``Interrupted`` on Ctrl-C (:func:`wait_stopped`). Needs
    running workers (``kbwiki worker``).
    """
    deadline = time.monotonic() + timeout_s
    # nothing new queued (the wait is on earlier work): no document count, only the time and the state
    shape = {"total": expected} if expected else {"total": None, "bar_format": "{desc}: waiting {elapsed}{postfix}"}
    bar = tqdm(**shape, unit="doc", desc="wiki", disable=not progress, mininterval=1.0)
    last_rows, moved_at = None, time.monotonic()
    checked_at = drawn_at = -math.inf
    alive, shown = 0, ""
    try:
        while time.monotonic() < deadline:
            try:
                counts = deps.ops.counts_by_lane(SCOPE_KB, kb.id)
                rows = sum(counts.get(lane, 0) for lane in WIKI_LANES)
                now = time.monotonic()
                if rows == 0 or now - checked_at >= CHECK_EVERY_S:
                    # before the bar moves: deleting a KB empties its lanes, which is no completion
                    try:
                        deps.kbs.get_active(kb.tenant_id, kb.id)
                    except UnknownKnowledgeBase:
                        raise KnowledgeBaseDeleted(
                            f"knowledge base {kb.name!r} was deleted while waiting: its pages and queued work are gone"
                        ) from None
                    alive, checked_at = deps.workers.alive_count(deps.settings.worker_ttl_s), now
                if rows == 0:
                    bar.n = expected
                    bar.set_postfix_str("complete", refresh=False)
                    bar.refresh()
                    return True
                state = wait_state(counts, alive)
                bar.set_postfix_str(state, refresh=False)  # before the update, which may draw the bar
                # documents still before or in reduce; the finalize lane holds slugs, not documents
                bar.update(max(0, expected - counts.get(INGEST, 0) - counts.get(REDUCE, 0)) - bar.n)
                if (state != shown and now - drawn_at >= 1.0) or now - drawn_at >= STATE_EVERY_S:
                    bar.refresh()
                    shown, drawn_at = state, now
                if rows != last_rows:
                    last_rows, moved_at = rows, now
                elif now - moved_at >= PAUSED_GIVE_UP_S and deps.llm_errors.get(kb.id) is not None:
                    return False
            except SERVER_AWAY:  # `kbwiki down`, a restart: the servers come back on the same ports
                bar.set_postfix_str("the database is not answering; waiting for it (`kbwiki up` starts it)")
            time.sleep(POLL_S)
        return False
    except KeyboardInterrupt:
        raise wait_stopped(deps, kb) from None
    finally:
        bar.close()
