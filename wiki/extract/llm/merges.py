"""Merges the model decides: is a newly named item one of a few existing pages of near name?

``stages.llm_merges`` finds, for each entity or concept of a document whose ``name_key`` has no
page yet, a bounded set of same-type pages whose title or alias is trigram-similar, drops those the
guards refuse (``wiki.dedup.same_thing_refused``: numbers, related-not-same, unrelated), and asks here, in ONE call
per document, which candidate each item is, if any. Everything the model sees is a handle:

- items are ``i1``, ``i2``...; candidates ``p1``, ``p2``... numbered across the document, so a
  handle names one candidate of one item;
- an answer naming an unknown item, a handle that is not among that item's own candidates, or
  null means "new"; items the answer leaves out are new too;
- fields ``MergeAnswer`` does not have are ignored (``unknown_fields``);
- an answer that is not valid JSON of ``MergeAnswer``'s shape makes every item new (the merge is a
  refinement: without it the name rule still decides), and nothing is cached.

A merge names the item after the page, its own name kept as an alias (``apply_merges``), as the
extractor's ``same_as`` does.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from wiki.extract import validate_item_name
from wiki.extract.llm import unknown_fields
from wiki.extract.llm.client import ChatClient
from wiki.extract.llm.extractor import MAX_ALIASES, joined_item
from wiki.extract.llm.grounding import in_quotes
from wiki.extract.llm.prompts import MERGE_PROMPT_VERSION, merge_messages
from wiki.extract.llm.schema import MergeChoiceOut, MergeEnvelope, merge_schema
from wiki.extract.llm.structured import CallStats, ask, entries
from wiki.llm_config import LLMConfig
from wiki.models import ExtractedItem, Extraction, PageLite

log = structlog.get_logger(__name__)

#: Characters of an item's description and of a candidate's summary shown to the model.
MAX_CONTEXT_CHARS = 200


@dataclass(frozen=True)
class Candidate:
    """One page an item may be merged into, with its one-line summary (``""`` when none)."""

    page: PageLite
    summary: str = ""


@dataclass
class MergeQuestion:
    """One item and its candidates (bounded and guarded by ``stages.llm_merges.merge_candidates``)."""

    item: ExtractedItem
    candidates: list[Candidate]

    def candidate_set(self) -> str:
        """The cache key of the candidate set: 16 hex digits of the sorted candidate slugs."""
        slugs = "\n".join(sorted(c.page.slug for c in self.candidates))
        return hashlib.sha256(slugs.encode()).hexdigest()[:16]


@dataclass
class MergeStats(CallStats):
    """One merge call's tokens (logged as ``llm.merges_decided``); ``foreign_handles``: answers
    naming another item's candidate or an invented handle."""

    foreign_handles: int = 0


def cache_name(config: LLMConfig) -> str:
    """The merge-decision cache key of a configuration: ``<merge prompt version>:<model>`` (64
    characters at most, a long model name cut and hashed): a new prompt or model decides afresh,
    as a new prompt or model extracts afresh."""
    name = f"{MERGE_PROMPT_VERSION}:{config.model}"
    if len(name) > 64:
        digest = hashlib.sha256(config.model.encode()).hexdigest()[:8]
        name = f"{MERGE_PROMPT_VERSION}:{config.model[:40]}~{digest}"
    return name


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace('"', "'")[:MAX_CONTEXT_CHARS]


def listing(questions: Sequence[MergeQuestion]) -> tuple[str, dict[str, int], dict[str, dict[str, str]]]:
    """The prompt's text of ``questions``; the item handles (``i1`` → question index) and each item
    handle's candidate handles (``p3`` → slug). Candidate handles are numbered across the document."""
    lines: list[str] = []
    items: dict[str, int] = {}
    offered: dict[str, dict[str, str]] = {}
    n = 0
    for i, q in enumerate(questions, 1):
        handle = f"i{i}"
        items[handle] = i - 1
        offered[handle] = {}
        lines.append(f'{handle}: "{_one_line(q.item.name)}" ({q.item.kind}): {_one_line(q.item.description)}')
        for c in q.candidates:
            n += 1
            offered[handle][f"p{n}"] = c.page.slug
            aliases = ", ".join(_one_line(a) for a in c.page.aliases[:4])
            known = f" (also: {aliases})" if aliases else ""
            lines.append(f'  p{n}: "{_one_line(c.page.title)}"{known}: {_one_line(c.summary)}')
    return "\n".join(lines), items, offered


def decide_merges(
    client: ChatClient, title: str, questions: Sequence[MergeQuestion], deadline: float | None = None
) -> tuple[list[str | None], MergeStats]:
    """One call asking which candidate each question's item is; returns, per question in order,
    the chosen page's slug or None (new), and the call's stats.

    The output mode starts at the one the extractor remembered for this endpoint and model and
    moves down the same ladder on a 400. Raises ``LLMConfigError`` (a 400 in every mode, or 401,
    402, 403, 404, 422) and ``LLMUnavailable`` (transport retries or ``deadline`` spent); never
    ``LLMRefused``: an answer that is cut, filtered, empty or not the schema's JSON, and a prompt
    refused as too long for the context, decide "new" for every item (``stats.invalid``).
    """
    text, items, offered = listing(questions)
    stats = MergeStats()
    new: list[str | None] = [None] * len(questions)
    found = ask(
        client,
        lambda with_schema, fenced: merge_messages(title, text, with_schema=with_schema, fenced=fenced),
        merge_schema(),
        MergeEnvelope,
        stats,
        deadline=deadline,
    )
    if found is None:  # a context too small for the question, or no answer to read: no merge, not a paused KB
        return new, stats
    chosen = list(new)
    decided: set[str] = set()
    choices, unknown = entries(found, found.decisions, MergeChoiceOut, "decisions")
    for choice in choices:
        item = choice.item.strip().lower()
        if item not in items or item in decided:
            continue  # an unknown item, or the item's second answer: the first one stands
        decided.add(item)
        target = (choice.merge_into or "").strip().lower()
        if not target:
            continue
        slug = offered[item].get(target)
        if slug is None:
            stats.foreign_handles += 1  # another item's candidate or an invented handle: new
            continue
        chosen[items[item]] = slug
    unknown_fields.report(client.config.model, "merge", unknown)
    return chosen, stats


def apply_merges(extraction: Extraction, merges: dict[str, PageLite]) -> Extraction:
    """``extraction`` with every item whose name is a key of ``merges`` named after that page (its
    own name first among its aliases when its quotes hold it: ``grounding.in_quotes``, as every
    alias), and items that then share a name joined (aliases and quotes together, at most 3
    quotes, the first description). Items keep their order. Pure."""
    if not merges:
        return extraction
    joined: dict[str, ExtractedItem] = {}
    for item in extraction.items:
        page = merges.get(item.name)
        if page is not None and validate_item_name(page.title):
            own = [item.name] if in_quotes(item.name, item.evidence) else []
            aliases = own + [a for a in item.aliases if a.casefold() != page.title.casefold()]
            item = item.model_copy(update={"name": page.title, "aliases": aliases[:MAX_ALIASES]})
        key = item.name.casefold()
        seen = joined.get(key)
        if seen is None:
            joined[key] = item
            continue
        joined[key] = joined_item(seen, item)
    return extraction.model_copy(update={"items": list(joined.values())})


def deadline_for(config: LLMConfig) -> float:
    """The ``time.monotonic()`` by which a document's merge call must be done (its own budget)."""
    return time.monotonic() + config.document_budget_s
