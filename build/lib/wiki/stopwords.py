"""The one English stopword list: yake's (574 words), for the extractor and for candidate phrases.

``wiki.links`` kept a list of its own (41 words, every one also in yake's) for the phrases a page
may mention; it was merged into this one: a phrase made only of these words can never be a page's
title anyway, since ``wiki.extract.validate_item_name`` refuses such names.
"""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def english_stopwords() -> frozenset[str]:
    """yake's English stopword list (574 lower-case words), loaded once from yake's package files,
    as ``yake.KeywordExtractor(lan="en")`` reads it, without importing yake: its import brings
    networkx and numpy (~35 MiB), which a process that only links pages (lint, export) never needs."""
    (package,) = importlib.util.find_spec("yake").submodule_search_locations
    text = (Path(package) / "core" / "StopwordsList" / "stopwords_en.txt").read_text(encoding="utf-8")
    return frozenset(w for w in text.lower().split("\n") if w)


def is_stopword(word: str) -> bool:
    """Whether ``word`` (any case) is in the English stopword list."""
    return word.lower() in english_stopwords()
