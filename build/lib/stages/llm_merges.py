"""Map, after an LLM extraction: merges the model decides (issue 16).

For each entity or concept of the extraction whose ``wiki.dedup.name_key`` has no page yet, up to
``MAX_CANDIDATES_PER_ITEM`` live pages of the SAME type whose title or alias is trigram-similar
(``WikiPageRepository.similar_titles_many``, ``TRGM_THRESHOLD``), at most
``MAX_CANDIDATES_PER_DOCUMENT`` for the document; pairs ``wiki.dedup.same_thing_refused`` refuses
(different numbers, related-not-same, names that do not agree by their own letters: issue 26) are
dropped before any model sees them. Decisions cached
in ``wiki_merge_decisions`` (by KB, decider, name key and candidate set) are reused; the rest are
asked in ONE call (``wiki.extract.llm.merges.decide_merges``) and stored at once, so a retry or a
re-ingest asks nothing again. A merge names the item after the chosen page, its own name kept as
an alias, before the extraction is stored: reduce sees an item named like the page and files it
there by the name rule.

Runs in map, outside any reduce transaction; the offline extractor never comes here.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from repos.extractions import ExtractionRepository
from repos.pages import WikiPageRepository
from wiki.dedup import name_key, same_thing_refused
from wiki.models import Document, ExtractedItem, Extraction, PageLite

if TYPE_CHECKING:
    from wiki.extract.llm.extractor import LLMExtractor, RunStats

log = structlog.get_logger(__name__)

#: Candidate pages offered per item, and per document (all items together).
MAX_CANDIDATES_PER_ITEM = 5
MAX_CANDIDATES_PER_DOCUMENT = 40
#: Similar pages fetched per item before the type filter and the guards (twice what is offered,
#: so that pages of the other type or refused by a guard leave room for the rest).
SIMILAR_K = 10


@dataclass
class MergeCandidates:
    """What :func:`merge_candidates` found: the items whose name key has no page (``open_items``),
    those with candidates left after the type filter and the guards (``items``, in extraction
    order, each with its pages, most similar first) and the pairs refused, by guard."""

    open_items: int = 0
    items: list[tuple[ExtractedItem, list[PageLite]]] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)


def merge_candidates(kb_id: str, extraction: Extraction, *, pages: WikiPageRepository) -> MergeCandidates:
    """The bounded candidate sets of an extraction's items (see the module): two statements
    (``by_name_keys``, ``similar_titles_many``) whatever the number of items; no model call."""
    keys = {item.name: name_key(item.name) for item in extraction.items}
    have = pages.by_name_keys(kb_id, keys.values())
    open_items = [item for item in extraction.items if keys[item.name] not in have]
    out = MergeCandidates(open_items=len(open_items))
    if not open_items:
        return out
    similar = pages.similar_titles_many(kb_id, [item.name for item in open_items], k=SIMILAR_K)
    refused: Counter[str] = Counter()
    budget = MAX_CANDIDATES_PER_DOCUMENT
    for item in open_items:
        if budget <= 0:
            break
        offered: list[PageLite] = []
        for page in similar.get(item.name.lower(), []):
            if page.page_type != item.kind or len(offered) >= min(MAX_CANDIDATES_PER_ITEM, budget):
                continue
            why = same_thing_refused(item.name, page.title, page.aliases)
            if why:
                refused[why] += 1
                continue
            offered.append(page)
        if offered:
            out.items.append((item, offered))
            budget -= len(offered)
    out.refused = dict(refused)
    return out


def model_merges(
    extractor: LLMExtractor,
    kb_id: str,
    doc: Document,
    extraction: Extraction,
    *,
    pages: WikiPageRepository,
    extractions: ExtractionRepository,
    spent: RunStats | None = None,
) -> Extraction:
    """``extraction`` with the merges the model decided applied (see the module); unchanged when no
    item has a candidate. Costs at most one model call, none when every decision is cached; its
    calls and tokens are added to ``spent`` (the document's extraction stats) when given.

    Raises what ``decide_merges`` raises (``LLMConfigError``, ``LLMUnavailable``): map treats them
    as it treats the extraction's own. An invalid answer decides "new" for every item, uncached.
    """
    from wiki.extract.llm.merges import (
        Candidate,
        MergeQuestion,
        MergeStats,
        apply_merges,
        cache_name,
        deadline_for,
        decide_merges,
    )

    started = time.perf_counter()
    found = merge_candidates(kb_id, extraction, pages=pages)
    if not found.items:
        if found.open_items:
            log.info(
                "llm.merges",
                knowledge_id=doc.id,
                open_items=found.open_items,
                refused=found.refused,
                asked=0,
                lookup_ms=round((time.perf_counter() - started) * 1000, 1),
            )
        return extraction
    summaries = pages.summaries(kb_id, {p.slug for _, offered in found.items for p in offered})
    questions = [
        MergeQuestion(item, [Candidate(p, summaries.get(p.slug, "")) for p in offered]) for item, offered in found.items
    ]
    keys = {item.name: name_key(item.name) for item, _ in found.items}
    decider = cache_name(extractor.config)
    wanted = {id(q): (keys[q.item.name], q.candidate_set()) for q in questions}
    decided = extractions.merge_decisions(kb_id, decider, wanted.values())
    ask = [q for q in questions if wanted[id(q)] not in decided]
    lookup_ms = round((time.perf_counter() - started) * 1000, 1)
    stats = MergeStats()
    if ask:
        chosen, stats = decide_merges(extractor.client, doc.title, ask, deadline_for(extractor.config))
        if spent is not None:
            spent.calls += stats.calls
            spent.prompt_tokens += stats.prompt_tokens
            spent.completion_tokens += stats.completion_tokens
            spent.estimated_tokens += stats.estimated_tokens
        if not stats.invalid:
            answers = {wanted[id(q)]: slug for q, slug in zip(ask, chosen, strict=True)}
            extractions.put_merge_decisions(kb_id, decider, answers)
            # Another worker may have stored its answer for the same question first: that one
            # stands for every document, so two documents never file one name two ways.
            decided.update(extractions.merge_decisions(kb_id, decider, answers))
    merges = {}
    for q in questions:
        slug = decided.get(wanted[id(q)])
        page = next((c.page for c in q.candidates if c.page.slug == slug), None)
        if page is not None:
            merges[q.item.name] = page
    log.info(
        "llm.merges",
        knowledge_id=doc.id,
        model=extractor.config.model,
        open_items=found.open_items,
        refused=found.refused,
        with_candidates=len(questions),
        candidates=sum(len(q.candidates) for q in questions),
        cached=len(questions) - len(ask),
        asked=len(ask),
        merged=len(merges),
        invalid=stats.invalid,
        foreign_handles=stats.foreign_handles,
        calls=stats.calls,
        prompt_tokens=stats.prompt_tokens,
        completion_tokens=stats.completion_tokens,
        lookup_ms=lookup_ms,
    )
    return apply_merges(extraction, merges)
