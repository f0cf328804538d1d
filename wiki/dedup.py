"""Deciding whether a newly extracted entity or concept is an existing page.

The decision sees only a bounded candidate set (pages with the same slug, and the top-K
trigram-similar titles PostgreSQL returns), never the whole KB.
"""

from __future__ import annotations

from collections.abc import Sequence

from rapidfuzz import fuzz

from wiki.models import PageLite
from wiki.slugs import normalize_name

# rapidfuzz's normalized Indel ratio (0-100) on normalize_name() keys. 92 merges spelling variants
# ("Python Software Foundation" / "Python Software Foundations": 98) but keeps related names
# apart ("Acme Cloud" / "Acme Corp": 63, "IPv4" / "IPv6": 75, "os.path" / "os.pathsep": 82).
# Chosen on those pairs; the LLM extractor will later decide from the same candidate set.
FUZZY_MERGE_THRESHOLD = 92.0


def choose_existing(name: str, aliases: Sequence[str], candidates: Sequence[PageLite]) -> str | None:
    """The slug of the candidate page that names the same thing as ``name``, or None.

    Rules, in order: an exact ``normalize_name`` match of the name or one of its aliases with a
    candidate's title or alias; then the best rapidfuzz ratio ≥ ``FUZZY_MERGE_THRESHOLD`` between
    the name and a candidate title. Archived and summary/index candidates never match.
    """
    keys = {normalize_name(n) for n in [name, *aliases] if n}
    keys.discard("")
    live = [c for c in candidates if c.status != "archived" and c.page_type in ("entity", "concept")]
    for cand in live:
        cand_keys = {normalize_name(cand.title), *(normalize_name(a) for a in cand.aliases)}
        if keys & cand_keys:
            return cand.slug
    target = normalize_name(name)
    best: tuple[float, str] | None = None
    for cand in live:
        score = fuzz.ratio(target, normalize_name(cand.title))
        if score >= FUZZY_MERGE_THRESHOLD and (best is None or (score, cand.slug) > best):
            best = (score, cand.slug)
    return best[1] if best else None
