"""The names a mistyped one was likely meant to be ("did you mean ...?"), by rapidfuzz."""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz import fuzz, process, utils

#: The least ``fuzz.WRatio`` (0-100, on names lowercased with punctuation as spaces) of a name
#: suggested. Kept: a case difference (100), one letter missing or wrong in a 6-letter name (91),
#: the start of a longer name ("linux" for "linux-doc-20250101-1200", 90). Left out: names sharing
#: one short word with it ("docs" for "linux-doc", 77) or nothing ("foo" for "notes", 36).
#: Measured on the examples of tests/unit/test_suggest.py.
SUGGEST_CUTOFF = 85
#: Names suggested at most.
SUGGEST_LIMIT = 3


def _score(query: str, choice: str, **kwargs) -> float:
    # WRatio scores a name found inside what was typed at 90 ("a" in "research"): a name less than
    # half as long as the typed one is a fragment of it, not what was meant.
    if len(choice) * 2 < len(query):
        return 0.0
    return fuzz.WRatio(query, choice, **kwargs)


def close_names(name: str, candidates: Iterable[str], limit: int = SUGGEST_LIMIT) -> list[str]:
    """Up to ``limit`` of ``candidates`` that ``name`` was likely meant to be, the likeliest first;
    ``name`` itself is never among them, and the list is empty when none is close.

    The names equal to it but for case, when there are any (names are case-sensitive: the usual
    slip); else those scoring at least ``SUGGEST_CUTOFF`` (``fuzz.WRatio``, case-insensitive),
    ordered by plain similarity (``fuzz.ratio``: "docs" before "mydocs" for "doc"), then by name.
    """
    choices = sorted({c for c in candidates if c != name})
    same = [c for c in choices if c.casefold() == name.casefold()]
    if same:
        return same[:limit]
    found = process.extract(
        name, choices, scorer=_score, processor=utils.default_process, limit=None, score_cutoff=SUGGEST_CUTOFF
    )
    key = utils.default_process(name)
    found.sort(key=lambda hit: (-fuzz.ratio(key, utils.default_process(hit[0])), -hit[1], hit[0]))
    return [hit[0] for hit in found[:limit]]


def did_you_mean(names: list[str]) -> str:
    """``did you mean 'a'?``, ``'a' or 'b'?``, ``'a', 'b' or 'c'?`` for 1 to 3 names (repr-quoted)."""
    quoted = [repr(n) for n in names]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f"did you mean {listed}?"
