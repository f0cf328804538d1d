"""Counts with their noun in the right number (``wiki.plural``)."""

from __future__ import annotations

import pytest

from wiki.plural import counted, noun


@pytest.mark.parametrize(
    ("singular", "plural"),
    [
        ("page", "pages"),
        ("summary", "summaries"),
        ("entity", "entities"),
        ("try", "tries"),
        ("day", "days"),
        ("index", "indexes"),
        ("batch", "batches"),
        ("dead letter", "dead letters"),
        ("queued op", "queued ops"),
        ("cache hit", "cache hits"),
    ],
)
def test_a_noun_is_singular_for_one_and_plural_otherwise(singular, plural):
    assert noun(1, singular) == singular
    assert noun(0, singular) == noun(2, singular) == noun(1_000, singular) == plural


def test_counted_puts_the_count_before_the_noun_and_takes_an_irregular_plural():
    assert counted(1, "summary") == "1 summary"
    assert counted(3, "summary") == "3 summaries"
    assert counted(2, "analysis", "analyses") == "2 analyses"
    assert counted(1, "analysis", "analyses") == "1 analysis"


def test_the_lint_summary_line_counts_in_the_right_number():
    from datetime import UTC, datetime

    from stages.lint_checks import CHECKS
    from wiki.lint import LintReport, summary_line

    counts = {check.name: 0 for check in CHECKS} | {"broken_link": 1, "orphan": 2}
    report = LintReport(
        knowledge_base_id="kb",
        knowledge_base_name="kb",
        pages_checked=1,
        counts=counts,
        pages_affected=counts,
        fixed=dict.fromkeys(counts, 0),
        samples={},
        score=50,
        score_after_fix=50,
        summary="",
        fix=False,
        created_at=datetime.now(UTC),
        duration_ms=0,
    )
    line = summary_line(report, CHECKS)
    assert line.startswith("health 50/100 · 1 page · 1 broken link, 0 stale source refs, 2 orphans, 0 duplicates")
