"""Which pages the phrases of each page mention, in a few lookups whatever the number of pages.

Cross-link (a batch's touched pages) and lint (a window of its walk) ask it for many pages at
once; the lookup itself (a title-key query) is the caller's, so the rule is tested without a database.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping

from wiki.links import candidate_phrases
from wiki.models import PageLite

#: Distinct candidate phrases sent in one title-key lookup. A 3 KB page yields a few hundred; the
#: cap keeps the query's text and the phrase sets held for it to about a megabyte.
MENTION_PHRASES_PER_QUERY = 5000


def mentions_by_page(
    title_matches: Callable[[set[str]], list[tuple[str, PageLite]]], contents: Mapping[str, str]
) -> dict[str, dict[str, list[PageLite]]]:
    """Per page slug: {title key: pages} for the keys of entity/concept pages (titles and aliases)
    that are among the page's ``candidate_phrases``.

    Phrases of consecutive pages go into one ``title_matches`` query of about
    ``MENTION_PHRASES_PER_QUERY`` phrases. Keyed by the matched key so that a page gets exactly
    what a query of its own phrases returns.
    """
    out: dict[str, dict[str, list[PageLite]]] = {}
    pending: list[tuple[str, set[str]]] = []
    union: set[str] = set()

    def flush() -> None:
        by_key: dict[str, list[PageLite]] = defaultdict(list)
        for key, page in title_matches(union):
            by_key[key].append(page)
        for slug, phrases in pending:
            out[slug] = {key: found for key, found in by_key.items() if key in phrases}
        pending.clear()
        union.clear()

    for slug, content in contents.items():
        phrases = set(candidate_phrases(content))
        pending.append((slug, phrases))
        union.update(phrases)
        if len(union) >= MENTION_PHRASES_PER_QUERY:
            flush()
    if pending:
        flush()
    return out
