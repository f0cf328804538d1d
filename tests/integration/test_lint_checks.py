"""A lint check is one object: a check built here, and nothing else, is run, counted, scored,
summarised and fixed by the walk; the health score of the existing checks stays comparable."""

from __future__ import annotations

from stages.lint_checks import CHECKS, LintCheck, Mended, PageFix
from tests.integration.test_lint import PROSE, _healthy, wiki  # noqa: F401  (the fixture)
from wiki.lint import Finding, health_score, score_version


def _shout_fix(ctx: PageFix, page, issues, n: int) -> Mended:
    """Title-case a page title written in capitals, under the page's row lock."""
    with ctx.pool.connection() as conn:
        full = ctx.wiki_pages.get(ctx.kb.id, page.slug, conn=conn, for_update=True)
        if full is None or not full.title.isupper():
            return Mended()
        ctx.wiki_pages.save(full.model_copy(update={"title": full.title.title()}), conn=conn)
    return Mended(fixed=n, written=1)


#: The whole of a new check: no query (the page alone says enough), a rule, a weight and a fix.
SHOUTING = LintCheck(
    name="shouting_title",
    label="shouting title",
    severity="info",
    weight=5,
    fixable=True,
    find=lambda page, _, window: (
        [Finding(page.slug, f"title {page.title!r} is in capitals")] if page.title.isupper() else []
    ),
    fix=_shout_fix,
    fix_rank=5,
)


def test_a_check_added_as_one_object_is_walked_counted_scored_and_fixed(wiki):  # noqa: F811
    _healthy(wiki)
    wiki.page("gamma", "GAMMA RAYS", f"{PROSE} See [[alpha-engine]].")
    checks = (*CHECKS, SHOUTING)

    report = wiki.lint_with(checks)

    assert report.counts["shouting_title"] == 1 and report.pages_affected["shouting_title"] == 1
    issue = report.samples["shouting_title"][0]
    assert (issue.page, issue.severity, issue.fixable) == ("gamma", "info", True)
    assert "1 shouting title" in report.summary and "1 shouting titles" not in report.summary
    assert report.score_version == score_version(checks) and "shouting_title:5" in report.score_version
    # gamma is also an orphan: two of the checks find it, out of 5 pages
    assert report.score == health_score(5, {"orphan": 1, "shouting_title": 1}, checks)

    fixed = wiki.lint_with(checks, fix=True)
    assert fixed.fixed["shouting_title"] == 1
    assert wiki.get("gamma").title == "Gamma Rays"
    assert wiki.lint_with(checks).counts["shouting_title"] == 0


def test_the_score_of_the_old_checks_is_recovered_from_a_report_with_a_new_one(wiki):  # noqa: F811
    _healthy(wiki)
    wiki.page("gamma", "GAMMA RAYS", f"{PROSE} [[nowhere]]")

    before = wiki.lint_with(CHECKS)
    after = wiki.lint_with((*CHECKS, SHOUTING))

    assert before.score_version != after.score_version
    # the weights are relative: the new check rescales the others, and rescoring the new report
    # over the checks the old one ran gives the old score back
    assert health_score(after.pages_checked, after.pages_affected, CHECKS) == before.score
    assert after.score != before.score


def test_every_registered_check_is_consistent():
    names = [c.name for c in CHECKS]
    assert len(set(names)) == len(names)
    for check in CHECKS:
        assert check.weight > 0 and check.label and check.severity in ("error", "warning", "info")
        assert (check.fix is not None) == check.fixable, check.name
    assert {c.fix_rank for c in CHECKS if c.fix} == set(range(1, 1 + sum(1 for c in CHECKS if c.fix)))
