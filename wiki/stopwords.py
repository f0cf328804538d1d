"""The one English stopword list: yake's (574 words), for the extractor and for candidate phrases.

``wiki.links`` kept a list of its own (41 words, every one also in yake's) for the phrases a page
may mention; it was merged into this one: a phrase made only of these words can never be a page's
title anyway, since ``wiki.extract.validate_item_name`` refuses such names.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """yake's English stopword list (574 lower-case words), loaded once (importing yake is deferred
    to the first call)."""
    import yake

    return frozenset(w for w in yake.KeywordExtractor(lan="en").stopword_set if w)


def is_stopword(word: str) -> bool:
    """Whether ``word`` (any case) is in the English stopword list."""
    return word.lower() in english_stopwords()
