"""Dedup rules: which candidate page (if any) a new entity or concept is."""

from __future__ import annotations

import pytest

from wiki.dedup import FUZZY_MERGE_THRESHOLD, choose_existing
from wiki.models import PageLite
from wiki.slugs import slugify


def page(slug: str, title: str, aliases: list[str] | None = None, page_type: str = "entity",
         status: str = "published") -> PageLite:
    return PageLite(slug=slug, title=title, page_type=page_type, status=status, aliases=aliases or [])


def test_case_and_punctuation_variants_are_the_same_thing():
    assert choose_existing("ACME Corp", [], [page("acme-corp", "Acme Corp.")]) == "acme-corp"


def test_related_names_stay_two_pages():
    assert choose_existing("Acme Cloud", [], [page("acme-corp", "Acme Corp")]) is None
    assert choose_existing("IPv6", [], [page("ipv4", "IPv4")]) is None


def test_an_alias_on_either_side_matches_exactly():
    assert choose_existing("RCU", ["Read-Copy Update"], [page("read-copy-update", "Read-copy update")]) == "read-copy-update"
    assert choose_existing("Read-copy update", [], [page("rcu", "RCU", aliases=["read copy update"])]) == "rcu"


def test_spelling_variants_merge_at_the_threshold_and_the_best_wins():
    candidates = [page("python-software-foundations", "Python Software Foundations"),
                  page("python-software", "Python Software")]
    assert choose_existing("Python Software Foundation", [], candidates) == "python-software-foundations"
    assert FUZZY_MERGE_THRESHOLD >= 90  # documented: near-identical names only


def test_accented_and_cjk_names():
    assert choose_existing("Café Müller", [], [page("cafe-muller", "Cafe Muller")]) == "cafe-muller"
    assert choose_existing("上海中心大厦", [], [page("上海中心大厦", "上海中心大厦")]) == "上海中心大厦"
    assert choose_existing("上海中心", [], [page("上海中心大厦", "上海中心大厦")]) is None


def test_archived_summary_and_index_pages_never_match():
    assert choose_existing("Widget", [], [page("widget", "Widget", status="archived")]) is None
    assert choose_existing("Widget", [], [page("doc-widget", "Widget", page_type="summary")]) is None
    assert choose_existing("Index", [], [page("index", "Index", page_type="index")]) is None


def test_a_name_match_beats_an_alias_match_whatever_the_candidate_order():
    named = page("asyncio-cancellederror", "asyncio.CancelledError")
    aliased = page("cancellederror", "CancelledError")
    for candidates in ([named, aliased], [aliased, named]):
        assert choose_existing("asyncio.CancelledError", ["CancelledError"], candidates) == "asyncio-cancellederror"


def test_ties_go_to_the_smallest_slug():
    pages = [page("widget-b", "Widget"), page("widget-a", "Gadget", aliases=["widget"])]
    assert choose_existing("Widget", [], pages) == "widget-a"
    assert choose_existing("Widget", [], list(reversed(pages))) == "widget-a"


def test_which_name_is_the_title_does_not_matter():
    """Canonical naming may swap a page's title and alias; the decision must not change with it."""
    as_title = page("python-software-foundations", "Python Software Foundations", aliases=["PSF"])
    as_alias = page("python-software-foundations", "PSF", aliases=["Python Software Foundations"])
    for cand in (as_title, as_alias):
        assert choose_existing("Python Software Foundation", [], [cand]) == "python-software-foundations"
        assert choose_existing("PSF", [], [cand]) == "python-software-foundations"


@pytest.mark.parametrize("name, other", [
    ("ARM Cortex-A9", "ARM Cortex-A5"), ("IPv6", "IPv4"), ("Python 3", "Python 2"), ("ext4", "ext3"),
    ("Windows 10", "Windows 11"),
])
def test_names_differing_in_a_number_or_version_never_merge(name: str, other: str) -> None:
    page = PageLite(slug=slugify(other), title=other, page_type="entity")
    assert choose_existing(name, [], [page]) is None
    assert choose_existing(name, [], [page.model_copy(update={"aliases": [other + "s"]})]) is None


def test_case_and_plural_variants_still_merge() -> None:
    page = PageLite(slug="photons", title="photons", page_type="concept")
    for variant in ("Photons", "PHOTONS", "photon"):
        assert choose_existing(variant, [], [page]) == "photons"
