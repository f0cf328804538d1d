"""What the model would cost a batch of documents before any is sent: ``kbwiki ingest --estimate``.

Calls per kind (extraction sections, merges, leads, the index intro), their prompt and completion
tokens, the documents whose extraction is already stored (free), and the price of the whole from
the configured per-token prices.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kbwiki.corpus import CorpusDoc, Rejected, Skipped
from kbwiki.ingest import problem_lines, rejected_line
from repos.knowledge import content_hash
from stages.deps import Deps
from stages.index import RECENT_SUMMARIES
from stages.ingest import prepare_document
from wiki.llm_config import LLMConfig, config_from_settings, estimated_usd
from wiki.models import ExtractedItem, KnowledgeBase, Page, PageLite, PageType
from wiki.plural import counted
from wiki.render import LEAD_QUOTE_CHARS, LEAD_SOURCES
from wiki.settings import kb_tunables

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
    from wiki.extract.llm.merges import MAX_CONTEXT_CHARS, Candidate, MergeQuestion, listing
    from wiki.extract.llm.prompts import merge_messages

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
    from wiki.extract.llm.leads import PAGES_PER_CALL, LeadQuestion, listing
    from wiki.extract.llm.prompts import lead_messages

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


def _per_document(
    name: str, documents: int, rate: float, measured: str, tokens: tuple[int, int], each: str
) -> CallKind:
    """The ``about`` kind of ``rate`` calls per document extracted (``documents`` of them; rounded
    to the nearest call), each of ``tokens`` (prompt, completion). Its basis names the rate's
    measure on linux-doc (``measured``) and what a call holds (``each``)."""
    calls = int(documents * rate + 0.5)
    basis = (
        f"about {rate} per document extracted, the rate measured on linux-doc: {measured};"
        f" in: {tokens[0]} per call, {each}"
    )
    return CallKind(name, calls, calls * tokens[0], calls * tokens[1], basis, about=True)


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
    each = f"{MERGE_ITEMS} items with {MERGE_CANDIDATES_PER_ITEM} candidate pages each"
    tokens = merge_call_tokens(config)
    estimate.kinds.append(
        _per_document("merge", n, MERGE_CALLS_PER_DOCUMENT, "73 calls for 920 documents", tokens, each)
    )
    if config.page_leads:
        each, tokens = "8 pages of 4 contributions each", lead_call_tokens(config)
        estimate.kinds.append(
            _per_document("page leads", n, LEAD_CALLS_PER_DOCUMENT, "40-51 calls for 420 documents", tokens, each)
        )
    if config.index_intro:
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
