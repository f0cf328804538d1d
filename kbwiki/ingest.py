"""Feeding a folder (or any iterable of documents) to a KB, waiting for the wiki to catch up, and
estimating what the model would cost first (``kbwiki ingest --estimate``)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from tqdm import tqdm

from actors.deps import Deps, run_stage
from kbwiki.corpus import CorpusDoc, Rejected
from repos.knowledge import content_hash
from stages.ingest import prepare_document, submit_document
from wiki.lanes import INGEST, REDUCE, SCOPE_KB, WIKI_LANES
from wiki.llm_config import LLMConfig, config_from_settings, estimated_usd
from wiki.models import KnowledgeBase

POLL_S = 0.5


#: "rejected PATH: reason" / "skipped PATH: reason" lines printed at most, the rest counted.
PROBLEMS_SHOWN = 50


def rejected_line(doc: Rejected) -> str:
    """The line that says why an input was not stored."""
    return f"rejected {doc.path}: {doc.reason}"


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


def ingest_docs(deps: Deps, kb: KnowledgeBase, docs: Iterable[CorpusDoc | Rejected]) -> IngestReport:
    """Submit every document; rejected inputs (binary, undecodable) are reported, never stored."""
    report = IngestReport()
    for doc in docs:
        if isinstance(doc, Rejected):
            report.counts["rejected"] += 1
            report.problems.append(rejected_line(doc))
            continue
        result = run_stage(
            submit_document,
            deps,
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=doc.title,
            content=doc.text,
            source_uri=doc.source_uri,
        )
        report.counts[result.status] += 1
        if result.reason:
            report.problems.append(f"{result.status} {doc.source_uri}: {result.reason}")
    return report


def lane_rows(deps: Deps, kb_id: str) -> int:
    """Rows in every wiki lane of the KB (claimed ones included)."""
    counts = deps.ops.counts_by_lane(SCOPE_KB, kb_id)
    return sum(counts.get(lane, 0) for lane in WIKI_LANES)


#: Seconds without progress after which a wait on a KB whose model work is paused gives up: a
#: paused KB waits for `kbwiki resume` or a configuration change, never for time.
PAUSED_GIVE_UP_S = 10.0


def wait_for_lanes(deps: Deps, kb: KnowledgeBase, expected: int, timeout_s: float, progress: bool = True) -> bool:
    """Block until the KB's wiki is complete, with a progress bar of documents settled.

    Complete is every lane of the KB empty: documents mapped and reduced (``wiki:ingest``,
    ``wiki:reduce``), cross-links done (``wiki:finalize``) and the index page rebuilt after the last
    batch (``wiki:index``, see ``stages.index``); a running batch still holds its reduce-lane rows.
    Returns False when ``timeout_s`` passes first, or when the KB's model work is paused
    (``wiki_llm_config_errors``) and nothing moved for ``PAUSED_GIVE_UP_S``. Needs running
    workers (``kbwiki worker``).
    """
    deadline = time.monotonic() + timeout_s
    bar = tqdm(total=max(expected, 1), unit="doc", desc="wiki", disable=not progress or expected == 0, mininterval=1.0)
    last_rows, moved_at = None, time.monotonic()
    try:
        while time.monotonic() < deadline:
            counts = deps.ops.counts_by_lane(SCOPE_KB, kb.id)
            rows = sum(counts.get(lane, 0) for lane in WIKI_LANES)
            # documents still before or in reduce; the finalize lane holds slugs, not documents
            bar.update(max(0, expected - counts.get(INGEST, 0) - counts.get(REDUCE, 0)) - bar.n)
            bar.set_postfix(lane_rows=rows, refresh=False)
            if rows == 0:
                bar.n = expected
                bar.refresh()
                return True
            if rows != last_rows:
                last_rows, moved_at = rows, time.monotonic()
            elif time.monotonic() - moved_at >= PAUSED_GIVE_UP_S and deps.llm_errors.get(kb.id) is not None:
                return False
            time.sleep(POLL_S)
        return False
    finally:
        bar.close()


#: Characters per prompt token in the estimate: OpenAI's rule of thumb for English text. No
#: tokenizer is used: the registries' ones (tiktoken) download their vocabularies on first use.
CHARS_PER_TOKEN = 4
#: Completion tokens estimated per call: this plus half the section's prompt tokens (the answer's
#: summary, body and evidence quotes restate part of the section), at most ``max_tokens``. A high
#: estimate on purpose: bounded answers measured 150-250 tokens (docs/decisions.md, issue 15).
ANSWER_BASE_TOKENS = 200


@dataclass
class IngestEstimate:
    """What ingesting a folder would cost the model, with no call made and nothing stored.

    ``documents``: would be extracted by the model; ``cached``: unchanged documents whose
    extraction the KB already holds (no call); ``skipped`` / ``rejected`` as ingest would report
    them; ``calls``: one per section (``wiki.extract.llm.extractor.sections`` at ``section_chars``);
    ``prompt_tokens``: the rendered prompts' characters / ``CHARS_PER_TOKEN``;
    ``completion_tokens``: see ``ANSWER_BASE_TOKENS``. Calls a truncated answer adds (a section
    halved and sent again) and the existing pages offered as handles are not counted."""

    config: LLMConfig
    llm_extractor: bool
    documents: int = 0
    cached: int = 0
    skipped: int = 0
    rejected: int = 0
    #: "rejected PATH: reason" / "skipped PATH: reason" lines, as ingest prints them
    problems: list[str] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    budget_left: int | None = None

    @property
    def estimated_usd(self) -> float | None:
        """The tokens at the configured prices, or None when no price is set."""
        return estimated_usd(self.config, self.prompt_tokens, self.completion_tokens)

    def as_dict(self) -> dict:
        """The estimate as JSON-ready numbers."""
        return {
            "model": self.config.model,
            "documents": self.documents,
            "cached": self.cached,
            "skipped": self.skipped,
            "rejected": self.rejected,
            "calls": self.calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "estimated_usd": self.estimated_usd,
            "budget_left": self.budget_left,
        }

    def describe(self) -> str:
        """The lines ``kbwiki ingest --estimate`` prints."""
        c = self.config
        price = self.estimated_usd
        lines = [
            f"estimate for model {c.model} (no model call made, nothing stored or queued):",
            f"documents: {self.documents} to extract, {self.cached} already extracted (cache hits),"
            f" {self.skipped} skipped, {self.rejected} rejected",
            f"calls: {self.calls} (sections of at most {c.section_chars} characters)",
            f"tokens: {self.prompt_tokens} in (prompt characters / {CHARS_PER_TOKEN}),"
            f" {self.completion_tokens} out (estimated: {ANSWER_BASE_TOKENS} + half the input per call,"
            f" at most {c.max_tokens}), {self.prompt_tokens + self.completion_tokens} in all",
            f"estimated price: ${price:.4f} (at ${c.price_in_per_mtok} in / ${c.price_out_per_mtok} out per"
            " million tokens)"
            if price is not None
            else "estimated price: unknown (set KBWIKI_LLM_PRICE_IN_PER_MTOK and KBWIKI_LLM_PRICE_OUT_PER_MTOK)",
        ]
        if self.budget_left is not None:
            total = self.prompt_tokens + self.completion_tokens
            verdict = "fits" if total <= self.budget_left else "does not fit: the KB would pause when it is spent"
            lines.append(f"token budget: {self.budget_left} tokens left of {c.token_budget}; this {verdict}")
        lines += problem_lines(self.problems)
        if not self.llm_extractor:
            lines.append(
                "note: this command's KBWIKI_EXTRACTOR is offline; the workers' setting decides whether"
                " ingest calls the model (this estimate is for the model and prices above)"
            )
        return "\n".join(lines)


def estimate_docs(deps: Deps, kb: KnowledgeBase | None, docs: Iterable[CorpusDoc | Rejected]) -> IngestEstimate:
    """What ingesting ``docs`` into ``kb`` (None: a KB that does not exist yet) would cost the model
    configured for it (``KBWIKI_LLM_*`` with the KB's ``wiki_config.llm``), reading each document as
    ``submit_document`` would (``prepare_document``). A document whose source URI the KB holds with
    the same content hash and an extraction under one of the LLM extractor's cache keys is a cache
    hit. Makes no model call (the extractor object only names the cache keys) and writes nothing."""
    from wiki.extract.llm.extractor import LLMExtractor, sections
    from wiki.extract.llm.prompts import map_messages

    settings = deps.settings
    config = config_from_settings(settings).with_override(kb.wiki_config.llm if kb else None)
    names = LLMExtractor(config).cache_names()
    estimate = IngestEstimate(config=config, llm_extractor=settings.extractor == "llm")
    if kb is not None and config.token_budget is not None:
        estimate.budget_left = max(0, config.token_budget - deps.llm_usage.budget_spent(kb.id))
    for doc in docs:
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
        for section in sections(content, config.section_chars):
            messages = map_messages(title, section, [], with_schema=True, fenced=False, bounded=config.bounded_schema)
            prompt = sum(len(m["content"]) for m in messages) // CHARS_PER_TOKEN
            estimate.calls += 1
            estimate.prompt_tokens += prompt
            estimate.completion_tokens += min(config.max_tokens, ANSWER_BASE_TOKENS + prompt // 2)
    return estimate


def _extracted(deps: Deps, kb: KnowledgeBase, source_uri: str, content: str, names: list[str]) -> bool:
    """Whether the KB holds this document's content (by source URI) with an extraction under ``names``."""
    stored = deps.docs.find(kb.id, source_uri) if source_uri else None
    if stored is None or stored.content_hash != content_hash(content):
        return False
    return any(deps.extractions.get(kb.id, stored.id, stored.content_hash, name) is not None for name in names)
