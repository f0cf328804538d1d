"""Deciding whether a newly extracted entity or concept is an existing page.

The decision sees only a bounded candidate set (pages with the same slug, and the top-K
trigram-similar titles PostgreSQL returns, plus the pages the running batch creates), never the
whole KB. It depends only on each candidate's set of names (title and aliases), never on which
of them is the title or on the order candidates arrive in, so items reach the same page whether
their documents came in one batch or in several.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from rapidfuzz import fuzz

from wiki.models import PageLite
from wiki.slugs import normalize_name

# rapidfuzz's normalized Indel ratio (0-100) on normalize_name() keys. 92 merges spelling variants
# ("Python Software Foundation" / "Python Software Foundations": 98) but keeps related names
# apart ("Acme Cloud" / "Acme Corp": 63, "IPv4" / "IPv6": 75, "os.path" / "os.pathsep": 82).
# Chosen on those pairs; the LLM extractor will later decide from the same candidate set.
FUZZY_MERGE_THRESHOLD = 92.0

# pg_trgm similarity a title or alias must reach to be a candidate at all (the
# ``pg_trgm.similarity_threshold`` every pooled connection sets). 0.6 keeps the GIN lookup at a few
# ms at 40k pages (bench/scale.py); pairs below it ("filetype" / "file type": 0.58) never merge,
# in one batch or across batches alike.
TRGM_THRESHOLD = 0.6

_TRGM_WORDS = re.compile(r"[^\W_]+")
_NUMBERS = re.compile(r"\d+")


def numbers(name: str) -> tuple[str, ...]:
    """The digit runs of ``name`` with leading zeros dropped ("ARM Cortex-A9" -> ("9",)): names
    differing in a number or version ("Cortex-A5" / "Cortex-A9", "IPv4" / "IPv6", "Python 2" /
    "Python 3") name different things however close their letters."""
    return tuple(d.lstrip("0") or "0" for d in _NUMBERS.findall(name))


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm's trigram set of ``text``: lowercased alphanumeric words, each padded with two
    spaces before and one after (pg_trgm.c ``generate_trgm``)."""
    out: set[str] = set()
    for word in _TRGM_WORDS.findall(text.lower()):
        padded = f"  {word} "
        out.update(padded[i:i + 3] for i in range(len(padded) - 2))
    return frozenset(out)


def trigram_similarity(a: str, b: str) -> float:
    """pg_trgm's ``similarity(a, b)`` in 0..1: shared trigrams over the union of both sets."""
    ta, tb = trigrams(a), trigrams(b)
    if not ta or not tb:
        return 0.0
    shared = len(ta & tb)
    return shared / (len(ta) + len(tb) - shared)


def is_trigram_candidate(texts: Iterable[str], page: PageLite) -> bool:
    """Whether PostgreSQL's similar-title lookup for one of ``texts`` could return ``page``: some
    text and some title or alias of the page reach ``TRGM_THRESHOLD``."""
    names = [page.title, *page.aliases]
    return any(trigram_similarity(t, n) >= TRGM_THRESHOLD for t in texts for n in names)


def choose_existing(name: str, aliases: Sequence[str], candidates: Sequence[PageLite]) -> str | None:
    """The slug of the candidate page that names the same thing as ``name``, or None.

    Rules, in order, each over every live entity/concept candidate (archived, summary and index
    candidates never match), ties going to the smallest slug:
    1. the item's name, normalized (``normalize_name``), is one of the candidate's names (title
       or aliases);
    2. one of the item's aliases is one of the candidate's names;
    3. the best rapidfuzz ratio ≥ ``FUZZY_MERGE_THRESHOLD`` between the name and one of the
       candidate's names with the same ``numbers`` (a number or version never merges by likeness).
    """
    live = sorted((c for c in candidates if c.status != "archived" and c.page_type in ("entity", "concept")),
                  key=lambda c: c.slug)
    names = {c.slug: {normalize_name(n) for n in [c.title, *c.aliases]} - {""} for c in live}
    target = normalize_name(name)
    alias_keys = {normalize_name(a) for a in aliases} - {"", target}
    for cand in live:
        if target and target in names[cand.slug]:
            return cand.slug
    for cand in live:
        if alias_keys & names[cand.slug]:
            return cand.slug
    best: tuple[float, str] | None = None
    for cand in live:
        score = max((fuzz.ratio(target, n) for n in names[cand.slug] if numbers(n) == numbers(target)),
                    default=0.0)
        if score >= FUZZY_MERGE_THRESHOLD and (best is None or score > best[0]):
            best = (score, cand.slug)
    return best[1] if best else None
