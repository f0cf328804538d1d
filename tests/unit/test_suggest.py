"""``wiki.suggest``: which existing KB names a mistyped one was likely meant to be."""

from __future__ import annotations

import pytest

from wiki.suggest import SUGGEST_LIMIT, close_names, did_you_mean

NAMES = [
    "mydocs",
    "MyDocs",
    "python-stdlib",
    "linux-doc-20250101-120000",
    "notes",
    "team-a",
    "team-b",
    "research papers",
    "docs",
    "a",
]


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("MYDOCS", ["MyDocs", "mydocs"]),  # differs in case only: those alone, not "docs" too
        ("Notes", ["notes"]),
        ("mydoc", ["MyDocs", "mydocs"]),  # one letter missing
        ("python-stdlb", ["python-stdlib"]),  # one letter missing inside
        ("linux", ["linux-doc-20250101-120000"]),  # the start of a timestamped name
        ("team", ["team-a", "team-b"]),
        ("doc", ["docs", "MyDocs", "mydocs"]),  # the most similar first
        ("research", ["research papers"]),  # not "a", a fragment of what was typed
        ("foo", []),
        ("linux-doc", ["linux-doc-20250101-120000"]),  # not "docs", one short word in common
    ],
)
def test_close_names(typed, meant):
    assert close_names(typed, NAMES) == meant


def test_the_typed_name_itself_is_never_suggested_and_at_most_the_limit_are():
    assert "MyDocs" not in close_names("MyDocs", NAMES)
    assert len(close_names("team", [f"team-{i}" for i in range(10)])) == SUGGEST_LIMIT
    assert close_names("x", []) == []


def test_did_you_mean_lists_one_two_or_three_names():
    assert did_you_mean(["a"]) == "did you mean 'a'?"
    assert did_you_mean(["a", "b"]) == "did you mean 'a' or 'b'?"
    assert did_you_mean(["a", "b", "c"]) == "did you mean 'a', 'b' or 'c'?"
