"""The generated index page is never reported for unlinked mentions (found by a fresh-user trial:
every rebuild brought back what --fix had linked, so lint reported it again after each batch)."""

from __future__ import annotations

from wiki.lint import LintPage, unlinked_mentions
from wiki.models import PageLite

TARGET = PageLite(
    slug="garbage-collector", title="garbage collector", page_type="concept", status="published", aliases=[]
)
TEXT = "The garbage collector frees cycles that reference counting misses."


def _page(page_type: str) -> LintPage:
    return LintPage(
        id=1,
        slug="index" if page_type == "index" else "gc-notes",
        title="Notes",
        page_type=page_type,
        status="published",
        aliases=[],
        content=TEXT,
    )


def test_a_summary_mentioning_a_title_is_reported():
    issues = unlinked_mentions(_page("summary"), [TARGET], lambda phrases: [TARGET])
    assert [i.target for i in issues] == ["garbage-collector"]


def test_the_index_page_is_not():
    assert unlinked_mentions(_page("index"), [TARGET], lambda phrases: [TARGET]) == []
