"""The quote normalisation (``wiki.extract.llm.quotes``): what it forgives, what it does not, and
that a match maps back to the document's own characters."""

from __future__ import annotations

import unicodedata

from wiki.extract.llm.quotes import QuoteSource, fold, folded


def test_the_stated_normalisation():
    assert folded("\u2018a\u2019 \u201cb\u201d \u00abc\u00bb \u2039d\u203a \u201ee\u201f \u201af\u201b") == (
        "'a' \"b\" \"c\" 'd' \"e\" 'f'"
    )
    assert folded("a\u2010b\u2011c\u2012d\u2013e\u2014f\u2015g") == "a-b-c-d-e-f-g"
    assert folded("wait\u2026") == "wait..." and folded("\ufb01le") == "file"
    assert folded(unicodedata.normalize("NFD", "Jos\u00e9")) == folded("Jos\u00e9") == "Jos\u00e9"
    assert folded("  a\u00a0\u00a0b\n\t c  ") == "a b c"
    assert folded("Case") != folded("case") and folded("a;b") != folded("a,b")


def test_every_folded_character_points_into_the_text_it_came_from():
    text = "  Caf\u00e9\u2019s  \u201cmenu\u201d\u2026 e\u0301 "
    out, starts, ends = fold(text)
    assert len(out) == len(starts) == len(ends)
    assert all(0 <= s < e <= len(text) for s, e in zip(starts, ends, strict=True))
    assert list(starts) == sorted(starts)


def test_a_match_is_the_documents_own_spelling_on_one_line():
    source = QuoteSource("Intro.\n\nThe caf\u00e9\u2019s \u201cmenu\u201d\n   changes\u2026 daily.\n")
    assert source.find("the cafe") is None  # neither case nor an accent is typography
    found = source.find('"The caf\u00e9\'s "menu" changes... daily."', 8)
    assert found == "The caf\u00e9\u2019s \u201cmenu\u201d changes\u2026 daily."
    assert source.find("changes", 8) is None  # under the shortest quote that proves something
