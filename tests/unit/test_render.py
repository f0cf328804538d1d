"""Page leads: the best defining sentence among a page's sources, whatever their order."""

from __future__ import annotations

import itertools

from wiki.render import best_lead, lead_rank, render_item_page

DESCRIPTIONS = [
    "The slab allocator is mentioned in passing here.",
    "Drivers free their buffers to the slab allocator on removal.",
    "The slab allocator provides caches of objects.",
    "The slab allocator is a cache of fixed-size objects that keeps fragmentation low.",
]


def test_lead_rank_prefers_what_it_is_over_what_it_does_over_anything_else() -> None:
    assert [lead_rank(d) for d in DESCRIPTIONS[1:]] == [0, 1, 2]
    assert lead_rank("北京大兴国际机场是位于北京的机场。") == 2
    assert lead_rank("電波塔とは電波を送る塔である。") == 2


def test_the_lead_is_the_best_definition_whatever_the_order_of_the_sources() -> None:
    leads = {best_lead(list(order)) for order in itertools.permutations(DESCRIPTIONS)}
    assert leads == {DESCRIPTIONS[3]}
    assert best_lead(["", ""]) == ""


def test_the_page_opens_with_the_best_lead_and_quotes_each_source() -> None:
    facts = {
        "k1": {
            "doc_title": "Drivers",
            "summary_slug": "doc-drivers",
            "description": DESCRIPTIONS[1],
            "evidence": [DESCRIPTIONS[1]],
            "seq": 1,
        },
        "k2": {
            "doc_title": "Memory",
            "summary_slug": "doc-memory",
            "description": DESCRIPTIONS[3],
            "evidence": [DESCRIPTIONS[3]],
            "seq": 2,
        },
    }
    page = render_item_page("slab allocator", facts, [], 2)
    assert page.splitlines()[0] == DESCRIPTIONS[3]
    assert f"- {DESCRIPTIONS[1]} ([[doc-drivers|Drivers]])" in page
