"""Feeding a folder (or any iterable of documents) to a KB, waiting for the wiki to catch up, and
estimating what the model would cost first (``kbwiki ingest --estimate``)."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice

import psycopg
import psycopg_pool
from tqdm import tqdm

from actors.deps import Deps, run_stage
from kbwiki.corpus import CorpusDoc, Rejected, Skipped
from kbwiki.status import status_command
from repos.knowledge import content_hash
from stages.ingest import prepare_document, store_document, unchanged_sources
from wiki.errors import Interrupted, KnowledgeBaseDeleted, ServersUnreachable, UnknownKnowledgeBase
from wiki.lanes import BACKLINK, FINALIZE, INDEX, INGEST, LEAD, REDUCE, SCOPE_KB, WIKI_LANES
from wiki.llm_config import LLMConfig, config_from_settings, estimated_usd
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
        return self.counts["queued"]

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
        unchanged = run_stage(unchanged_sources, deps, kb.id, versions)
        for doc, prepared in zip(chunk, ready):
            counter.update()
            if isinstance(doc, Rejected):
                report.counts[doc.status] += 1
                report.problems.append(rejected_line(doc))
                continue
            if doc.source_uri in unchanged:
                report.counts["unchanged"] += 1
                continue
            result = run_stage(
                store_document,
                deps,
                tenant_id=kb.tenant_id,
                knowledge_base_id=kb.id,
                prepared=prepared,
                source_uri=doc.source_uri,
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


#: Characters per prompt token in the estimate: OpenAI's rule of thumb for English text. No
#: tokenizer is used: the registries' ones (tiktoken) download their vocabularies on first use.
CHARS_PER_TOKEN = 4
#: Completion tokens estimated per extraction call: this plus half the section's prompt tokens (the
#: answer's summary, body and evidence quotes restate part of the section), at most ``max_tokens``.
#: A high estimate on purpose: bounded answers measured 150-250 tokens (docs/decisions.md, issue 15).
ANSWER_BASE_TOKENS = 200

#: Merge calls (``stages.llm_merges``, ``wiki.extract.llm.merges``) per document extracted: about
#: 0.08. At most one per document, and only when one of its items new to the KB has near-named
#: candidate pages, so the rate depends on the corpus; this one was measured on 1,000 linux-doc
#: files through the scripted model: 73 merge calls for 920 documents (docs/decisions.md, "Merges
#: the model decides"). A new KB's first documents have no candidates, later ones more.
MERGE_CALLS_PER_DOCUMENT = 0.08
#: The typical merge call the estimate prices: this many items, each with this many candidate
#: pages, every description and summary at ``merges.MAX_CONTEXT_CHARS`` (200) characters.
MERGE_ITEMS, MERGE_CANDIDATES_PER_ITEM = 2, 2
#: Page-lead calls (``stages.leads``, ``wiki.extract.llm.leads``) per document extracted: about
#: 0.1. One call writes the leads of up to 8 pages that two or more sources describe, again only
#: when a page's first four contributions change; measured with bench/llm_pipeline.py a on the
#: first 500 linux-doc files (420 documents): 40 lead calls at 0.2 s a call, 51 at 1 s (more
#: linking rounds during a slower ingest, so a page's lead is written again more often).
LEAD_CALLS_PER_DOCUMENT = 0.1
#: Title length assumed for the typical merge prompt and for index summaries when no document's
#: title is at hand.
TYPICAL_TITLE_CHARS = 30


@dataclass(frozen=True)
class CallKind:
    """One kind of model call the pipeline makes, as the estimate counts it. ``about``: the calls
    come from a rate or a rule (merge, index intro), not one per counted section; ``basis``: how
    they were counted, as ``describe`` prints it. A new kind is one more entry of
    ``IngestEstimate.kinds``."""

    name: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    basis: str
    about: bool = False

    def as_dict(self) -> dict:
        return {
            "kind": self.name,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "about": self.about,
            "basis": self.basis,
        }


@dataclass
class IngestEstimate:
    """What ingesting a folder would cost the model, with no call made and nothing stored.

    ``documents``: would be extracted by the model; ``cached``: unchanged documents whose
    extraction the KB already holds (no call); ``skipped`` / ``rejected`` as ingest would report
    them; ``kinds``: the calls of each kind (``CallKind``), in the order the pipeline makes them:

    - extraction: one per section (``wiki.extract.llm.extractor.sections`` at ``section_chars``);
      prompt tokens are the rendered prompts' characters / ``CHARS_PER_TOKEN``, completion tokens
      ``ANSWER_BASE_TOKENS`` + half the prompt. Calls a truncated answer adds (a section halved and
      sent again) and the existing pages offered as handles are not counted.
    - merge: about ``MERGE_CALLS_PER_DOCUMENT`` (0.08, measured) per document extracted, each the
      rendered prompt of a typical question (``merge_call_tokens``).
    - page leads (only when the config's ``page_leads`` is on): about ``LEAD_CALLS_PER_DOCUMENT``
      (0.1, measured) per document extracted, each a full call (``lead_call_tokens``).
    - index intro (only when the config's ``index_intro`` is on): the calls ``intro.stale``'s rule
      makes for the new summaries arriving in batches of the KB's batch size
      (``intro_call_sizes``), each prompt one line per recent summary (``intro_call_tokens``).

    ``calls``, ``prompt_tokens`` and ``completion_tokens`` are the sums over the kinds."""

    config: LLMConfig
    llm_extractor: bool
    documents: int = 0
    cached: int = 0
    skipped: int = 0
    rejected: int = 0
    #: "rejected PATH: reason" / "skipped PATH: reason" lines, as ingest prints them
    problems: list[str] = field(default_factory=list)
    kinds: list[CallKind] = field(default_factory=list)
    budget_left: int | None = None

    @property
    def calls(self) -> int:
        return sum(k.calls for k in self.kinds)

    @property
    def prompt_tokens(self) -> int:
        return sum(k.prompt_tokens for k in self.kinds)

    @property
    def completion_tokens(self) -> int:
        return sum(k.completion_tokens for k in self.kinds)

    @property
    def estimated_usd(self) -> float | None:
        """The tokens at the configured prices, or None when no price is set."""
        return estimated_usd(self.config, self.prompt_tokens, self.completion_tokens)

    def as_dict(self) -> dict:
        """The estimate as JSON-ready numbers (``calls`` and the token counts are the totals of
        ``kinds``)."""
        return {
            "model": self.config.model,
            "documents": self.documents,
            "cached": self.cached,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "kinds": [k.as_dict() for k in self.kinds],
            "estimated_usd": self.estimated_usd,
            "budget_left": self.budget_left,
        }

    def describe(self) -> str:
        """The lines ``kbwiki ingest --estimate`` prints."""
        c = self.config
        price = self.estimated_usd
        about = any(k.about and k.calls for k in self.kinds)
        lines = [
            f"estimate for model {c.model} (no model call made, nothing stored or queued):",
            f"documents: {self.documents} to extract, {self.cached} already extracted (cache hits),"
            f" {self.skipped} skipped, {self.rejected} rejected",
            f"calls: {'about ' if about else ''}{self.calls} in all, by kind:",
        ]
        for k in self.kinds:
            calls = f"{'about ' if k.about else ''}{counted(k.calls, 'call')}"
            lines.append(
                f"  {k.name}: {calls}, {counted(k.prompt_tokens, 'token')} in, {k.completion_tokens} out ({k.basis})"
            )
        lines += [
            f"tokens: {self.prompt_tokens} in (prompt characters / {CHARS_PER_TOKEN}),"
            f" {self.completion_tokens} out, {self.prompt_tokens + self.completion_tokens} in all",
            f"estimated price: ${price:.4f} (at ${c.price_in_per_mtok} in / ${c.price_out_per_mtok} out per"
            " million tokens)"
            if price is not None
            else "estimated price: unknown (set KBWIKI_LLM_PRICE_IN_PER_MTOK and KBWIKI_LLM_PRICE_OUT_PER_MTOK)",
        ]
        if self.budget_left is not None:
            total = self.prompt_tokens + self.completion_tokens
            verdict = "fits" if total <= self.budget_left else "does not fit: the KB would pause when it is spent"
            lines.append(f"token budget: {counted(self.budget_left, 'token')} left of {c.token_budget}; this {verdict}")
        lines += problem_lines(self.problems)
        if not self.llm_extractor:
            lines.append(
                "note: this command's KBWIKI_EXTRACTOR is offline; the workers' setting decides whether"
                " ingest calls the model (this estimate is for the model and prices above)"
            )
        return "\n".join(lines)


def message_tokens(messages: Sequence[dict[str, str]]) -> int:
    """The estimate's prompt tokens of chat ``messages``: their characters / ``CHARS_PER_TOKEN``."""
    return sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN


def merge_call_tokens(config: LLMConfig) -> tuple[int, int]:
    """(prompt, completion) tokens of one typical merge call: ``merge_messages`` with the schema in
    the prompt, for ``MERGE_ITEMS`` items of ``MERGE_CANDIDATES_PER_ITEM`` candidates each, every
    description and summary ``MAX_CONTEXT_CHARS`` long (a line of about 200 characters); the answer
    is that many decisions as JSON (a few dozen tokens), at most ``max_tokens``."""
    import json

    from wiki.extract.llm.merges import MAX_CONTEXT_CHARS, Candidate, MergeQuestion, listing
    from wiki.extract.llm.prompts import merge_messages
    from wiki.models import ExtractedItem, PageLite, PageType

    filler = "x" * MAX_CONTEXT_CHARS
    name = "n" * (TYPICAL_TITLE_CHARS // 2)
    questions = [
        MergeQuestion(
            item=ExtractedItem(name=f"{name}{i}", kind="entity", description=filler),
            candidates=[
                Candidate(PageLite(slug=f"p{i}-{j}", title=f"{name}{i}{j}", page_type=PageType.entity), filler)
                for j in range(MERGE_CANDIDATES_PER_ITEM)
            ],
        )
        for i in range(MERGE_ITEMS)
    ]
    messages = merge_messages("t" * TYPICAL_TITLE_CHARS, listing(questions)[0], with_schema=True, fenced=False)
    answer = {"decisions": [{"item": f"i{i + 1}", "merge_into": None} for i in range(MERGE_ITEMS)]}
    return message_tokens(messages), min(config.max_tokens, len(json.dumps(answer)) // CHARS_PER_TOKEN + 1)


def lead_call_tokens(config: LLMConfig) -> tuple[int, int]:
    """(prompt, completion) tokens of one full page-lead call: ``lead_messages`` with the schema in
    the prompt, for ``PAGES_PER_CALL`` pages of ``LEAD_SOURCES`` contribution lines each (a
    description and a quote, about 360 characters); the answer is that many leads of about 240
    characters as JSON, at most ``max_tokens``."""
    import json

    from wiki.extract.llm.leads import PAGES_PER_CALL, LeadQuestion, listing
    from wiki.extract.llm.prompts import lead_messages
    from wiki.render import LEAD_QUOTE_CHARS, LEAD_SOURCES

    line = "d" * 200 + " (quoted: " + "q" * LEAD_QUOTE_CHARS + ")"
    questions = [
        LeadQuestion(f"p{i}", "t" * TYPICAL_TITLE_CHARS, "entity", (line,) * LEAD_SOURCES, "")
        for i in range(PAGES_PER_CALL)
    ]
    messages = lead_messages(listing(questions), with_schema=True, fenced=False)
    answer = {"leads": [{"page": f"p{i + 1}", "lead": "l" * 240} for i in range(PAGES_PER_CALL)]}
    return message_tokens(messages), min(config.max_tokens, len(json.dumps(answer)) // CHARS_PER_TOKEN + 1)


def intro_call_sizes(
    new_summaries: int, batch: int, recent: Sequence[str] = (), written_from: Sequence[str] | None = None
) -> list[int]:
    """The index-introduction calls ``new_summaries`` new summary pages would make, as the number
    of summaries each call's prompt lists: ``intro.stale`` asked after every batch of ``batch``
    documents (one index rebuild per reduce batch; one summary page per document), starting from
    the KB's ``recent`` summary slugs (most recent first) and the slugs its stored intro was
    written from (None: no intro yet).

    The rule, worked out: the intro is written again when fewer than 3/4 of the (at most 200)
    recent summaries are those it was written from. Under 200 summaries, that is when their count
    passes 4/3 of the count it was written from: 3 calls at the default batch of 50 (at 50, 100
    and 150 documents), 15 at batch 1 (at 1, 2, 3, 5, 7, ..., 114, 153); from 200 on, when more
    than 50 of the 200 are new: one call every ``batch * (50 // batch + 1)`` documents (100 at
    batch 50, 51 at batch 1). So about 3 + (N - 200) / 100 calls for N documents past 200 at the
    default batch (11 for 1,000). Smaller reduce batches than ``batch`` make more calls under 200
    summaries; index rebuilds coalesced under load make fewer."""
    from stages.index import RECENT_SUMMARIES
    from wiki.extract.llm.intro import stale

    shown = list(recent)[:RECENT_SUMMARIES]
    written = list(written_from) if written_from is not None else None
    sizes: list[int] = []
    done = 0
    while done < new_summaries:
        step = min(batch, new_summaries - done)
        shown = ([f"new-{done + i}" for i in range(step, 0, -1)] + shown)[:RECENT_SUMMARIES]
        done += step
        if stale(written, shown):
            written = shown
            sizes.append(len(shown))
    return sizes


def intro_call_tokens(config: LLMConfig, kb_name: str, summaries: int, title_chars: int) -> tuple[int, int]:
    """(prompt, completion) tokens of one index-introduction call listing ``summaries`` summaries:
    ``intro_messages`` with each summary's title ``title_chars`` long and its text at the
    ``SUMMARY_CHARS`` (240) cut; the answer at most ``MAX_INTRO_CHARS`` (900) characters (a
    paragraph), at most ``max_tokens``."""
    from wiki.extract.llm.intro import MAX_INTRO_CHARS, SUMMARY_CHARS, intro_messages
    from wiki.models import Page, PageType

    pages = [
        Page(
            slug=f"s{i}",
            title="t" * title_chars,
            page_type=PageType.summary,
            tenant_id=0,
            knowledge_base_id="",
            content="",
            summary="x" * SUMMARY_CHARS,
        )
        for i in range(summaries)
    ]
    return message_tokens(intro_messages(kb_name, pages)), min(config.max_tokens, MAX_INTRO_CHARS // CHARS_PER_TOKEN)


def estimate_docs(deps: Deps, kb: KnowledgeBase | None, docs: Iterable[CorpusDoc | Rejected]) -> IngestEstimate:
    """What ingesting ``docs`` into ``kb`` (None: a KB that does not exist yet) would cost the model
    configured for it (``KBWIKI_LLM_*`` with the KB's ``wiki_config.llm``), reading each document as
    ``submit_document`` would (``prepare_document``). A document whose source URI the KB holds with
    the same content hash and an extraction under one of the LLM extractor's cache keys is a cache
    hit. Counts extraction, merge and (when ``index_intro`` is on) index-introduction calls, see
    ``IngestEstimate``. Makes no model call (the extractor object only names the cache keys) and
    writes nothing."""
    from wiki.extract.llm.extractor import LLMExtractor, sections
    from wiki.extract.llm.prompts import map_messages

    settings = deps.settings
    config = config_from_settings(settings).with_override(kb.wiki_config.llm if kb else None)
    names = LLMExtractor(config).cache_names()
    estimate = IngestEstimate(config=config, llm_extractor=settings.extractor == "llm")
    if kb is not None and config.token_budget is not None:
        estimate.budget_left = max(0, config.token_budget - deps.llm_usage.budget_spent(kb.id))
    calls = prompt_tokens = completion_tokens = title_chars = 0
    for doc in docs:
        if isinstance(doc, Skipped):
            estimate.skipped += 1
            estimate.problems.append(rejected_line(doc))
            continue
        if isinstance(doc, Rejected):
            estimate.rejected += 1
            estimate.problems.append(rejected_line(doc))
            continue
        title, content, _, skip = prepare_document(doc.title, doc.text, settings)
        if skip:
            estimate.skipped += 1
            estimate.problems.append(f"skipped {doc.source_uri}: {skip}")
            continue
        if kb is not None and _extracted(deps, kb, doc.source_uri, content, names):
            estimate.cached += 1
            continue
        estimate.documents += 1
        title_chars += len(title)
        for section in sections(content, config.section_chars):
            messages = map_messages(title, section, [], with_schema=True, fenced=False, bounded=config.bounded_schema)
            prompt = message_tokens(messages)
            calls += 1
            prompt_tokens += prompt
            completion_tokens += min(config.max_tokens, ANSWER_BASE_TOKENS + prompt // 2)
    n = estimate.documents
    estimate.kinds.append(
        CallKind(
            "extraction",
            calls,
            prompt_tokens,
            completion_tokens,
            f"one per section of at most {config.section_chars} characters; out: {ANSWER_BASE_TOKENS} + half"
            f" the input per call, at most {config.max_tokens}",
        )
    )
    merges = int(n * MERGE_CALLS_PER_DOCUMENT + 0.5)
    merge_in, merge_out = merge_call_tokens(config)
    estimate.kinds.append(
        CallKind(
            "merge",
            merges,
            merges * merge_in,
            merges * merge_out,
            f"about {MERGE_CALLS_PER_DOCUMENT} per document extracted, the rate measured on linux-doc: 73"
            f" calls for 920 documents; in: {merge_in} per call, {MERGE_ITEMS} items with"
            f" {MERGE_CANDIDATES_PER_ITEM} candidate pages each",
            about=True,
        )
    )
    if config.page_leads:
        leads = int(n * LEAD_CALLS_PER_DOCUMENT + 0.5)
        lead_in, lead_out = lead_call_tokens(config)
        estimate.kinds.append(
            CallKind(
                "page leads",
                leads,
                leads * lead_in,
                leads * lead_out,
                f"about {LEAD_CALLS_PER_DOCUMENT} per document extracted, the rate measured on linux-doc: 40-51"
                f" calls for 420 documents; in: {lead_in} per call, 8 pages of 4 contributions each",
                about=True,
            )
        )
    if config.index_intro:
        from stages.index import RECENT_SUMMARIES
        from wiki.models import PageType
        from wiki.settings import kb_tunables

        batch = kb_tunables(settings, kb).batch_size if kb is not None else settings.ingest_batch_size
        recent: list[str] = []
        written_from = None
        if kb is not None:
            recent = deps.pages.recent_slugs(kb.id, PageType.summary, RECENT_SUMMARIES)
            stored = deps.index_intros.get(kb.id)
            written_from = stored.slugs if stored else None
        sizes = intro_call_sizes(n, batch, recent, written_from)
        average_title = title_chars // n if n else TYPICAL_TITLE_CHARS
        tokens = [intro_call_tokens(config, kb.name if kb else "", size, average_title) for size in sizes]
        estimate.kinds.append(
            CallKind(
                "index intro",
                len(sizes),
                sum(p for p, _ in tokens),
                sum(o for _, o in tokens),
                "written again when fewer than 3/4 of the 200 most recent summaries are those it was"
                f" written from, one check per batch of {batch} documents; in: one line per summary, its title and"
                " 240 characters",
                about=True,
            )
        )
    return estimate


def _extracted(deps: Deps, kb: KnowledgeBase, source_uri: str, content: str, names: list[str]) -> bool:
    """Whether the KB holds this document's content (by source URI) with an extraction under ``names``."""
    stored = deps.docs.find(kb.id, source_uri) if source_uri else None
    if stored is None or stored.content_hash != content_hash(content):
        return False
    return any(deps.extractions.get(kb.id, stored.id, stored.content_hash, name) is not None for name in names)
