"""Where a model's quote occurs in its document, forgiving typography and nothing else.

A quote and the document are compared under one normalisation, the same for both:

1. Unicode NFKC, per base character and the combining marks after it (so ``e`` + U+0301 and
   ``é`` compare equal, and so do ``…`` and ``...``, ``ﬁ`` and ``fi``, a no-break space and a
   space, full-width and ASCII forms);
2. the quote families as ASCII: ``‘ ’ ‚ ‛ ‹ ›`` as ``'`` and ``“ ” „ ‟ « »`` as ``"``;
3. the dash family ``‐ ‑ ‒ – — ―`` as ``-``;
4. every whitespace run as one space, none at either end.

Nothing else is forgiven: a word, a letter's case, a digit or other punctuation that differs
leaves the quote unmatched (the extractor drops it). A match is mapped back to the document's own
characters: the quote kept is the document's spelling of the span, whitespace runs as one space (a
quote is shown on one line; its line breaks were layout, not words).
"""

from __future__ import annotations

import unicodedata
from array import array

#: Characters compared as ``'``, ``"`` and ``-`` (after NFKC, which leaves them as they are).
SINGLE_QUOTES = "\u2018\u2019\u201a\u201b\u2039\u203a"
DOUBLE_QUOTES = "\u201c\u201d\u201e\u201f\u00ab\u00bb"
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015"
_FOLD = str.maketrans(
    {**dict.fromkeys(SINGLE_QUOTES, "'"), **dict.fromkeys(DOUBLE_QUOTES, '"'), **dict.fromkeys(DASHES, "-")}
)


def _clusters(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` spans of ``text`` that NFKC may change, each a base character and the
    marks after it (combining marks, and Hangul vowel and final jamo, which NFKC composes with what
    precedes); ASCII characters not followed by a mark are left out (NFKC keeps them)."""
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and (unicodedata.combining(text[j]) or "\u1160" <= text[j] <= "\u11ff"):
            j += 1
        if j > i + 1 or not text[i].isascii():
            spans.append((i, j))
        i = j
    return spans


def fold(text: str) -> tuple[str, array, array]:
    """``text`` under the module's normalisation, and for each of its characters the start and end
    offsets (two arrays) of the characters of ``text`` it came from."""
    out: list[str] = []
    starts, ends = array("l"), array("l")

    def put(piece: str, start: int, end: int) -> None:
        for char in piece.translate(_FOLD):
            if char.isspace():
                if not out or out[-1] == " ":
                    if out:  # a whitespace run: its one space spans the whole run
                        ends[-1] = end
                    continue
                char = " "
            out.append(char)
            starts.append(start)
            ends.append(end)

    done = 0
    for start, end in _clusters(text):
        for k in range(done, start):  # ASCII: one character each, as it is
            put(text[k], k, k + 1)
        put(unicodedata.normalize("NFKC", text[start:end]), start, end)
        done = end
    for k in range(done, len(text)):
        put(text[k], k, k + 1)
    if out and out[-1] == " ":
        out.pop()
        starts.pop()
        ends.pop()
    return "".join(out), starts, ends


def folded(text: str) -> str:
    """``text`` under the module's normalisation (:func:`fold` without the offsets)."""
    return fold(text)[0]


class QuoteSource:
    """A document, folded once, that quotes are looked up in (two offsets of 8 bytes per character
    of the document beside its folded text: built once per document, not per quote)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.folded, self._starts, self._ends = fold(text)

    def find(self, quote: str, min_chars: int = 0) -> str | None:
        """The document's own spelling of where ``quote`` occurs (whitespace runs as one space),
        or None when it does not occur, or is shorter than ``min_chars`` once folded. Quote marks
        around the whole quote are not part of it (a model often wraps what it copies in them)."""
        needle = folded(quote).strip("\"' ")
        if len(needle) < max(min_chars, 1):
            return None
        at = self.folded.find(needle)
        if at < 0:
            return None
        start, end = self._starts[at], self._ends[at + len(needle) - 1]
        return " ".join(self.text[start:end].split())
