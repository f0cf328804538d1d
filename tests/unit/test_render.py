"""Entity and concept pages: the lead is the best row's, quotes come one per document first."""

from __future__ import annotations

from wiki.links import parse_links
from wiki.models import Fact
from wiki.render import (
    MEMBERS,
    QUOTES_SHOWN,
    RELATED,
    LinkSection,
    first_lead,
    lead_rank,
    link_sections,
    listed_link_starts,
    render_item_page,
    with_lead,
)

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


def _fact(i: int, description: str, evidence: list[str]) -> Fact:
    return Fact(doc_title=f"D{i}", summary_slug=f"doc-d{i}", description=description, evidence=evidence, seq=i)


def test_the_page_opens_with_the_first_description_and_quotes_each_source_once_first() -> None:
    facts = {
        f"k{i}": _fact(i, DESCRIPTIONS[3 - i] if i < 4 else "", [f"Quote {i} a.", f"Quote {i} b."]) for i in range(10)
    }
    page = render_item_page("slab allocator", facts, ["slab"])
    assert page.splitlines()[0] == first_lead(facts) == DESCRIPTIONS[3]
    quotes = [line for line in page.splitlines() if line.startswith("- Quote")]
    # one quote of each of the first QUOTES_SHOWN documents, in their order, and no second quote
    assert quotes == [f"- Quote {i} a. ([[doc-d{i}|D{i}]])" for i in range(QUOTES_SHOWN)]
    few = render_item_page("x", {k: facts[k] for k in ("k0", "k1")}, [])
    assert [line for line in few.splitlines() if line.startswith("- Quote")] == [
        "- Quote 0 a. ([[doc-d0|D0]])",
        "- Quote 1 a. ([[doc-d1|D1]])",
        "- Quote 0 b. ([[doc-d0|D0]])",
        "- Quote 1 b. ([[doc-d1|D1]])",
    ]


def test_link_sections_are_kept_by_cross_linking_and_read_back_from_the_page() -> None:
    sections = [
        LinkSection(MEMBERS, [("queue-queue-get", "queue.Queue.get")], more=3),
        LinkSection(RELATED, [("lock", "Lock")]),
    ]
    page = render_item_page("queue.Queue", {"k1": _fact(1, "A queue.", ["Lock is used."])}, [], sections=sections)
    listed = listed_link_starts(page)
    assert {link.slug for link in parse_links(page) if link.start in listed} == {"queue-queue-get", "lock"}
    assert link_sections(page) == sections
    assert "- and 3 more" in page


def test_a_model_lead_replaces_the_first_line_only() -> None:
    page = render_item_page("x", {"k1": _fact(1, "X is a thing.", ["X is a thing."])}, [])
    swapped = with_lead(page, "X is what two sources say.")
    assert swapped.splitlines()[0] == "X is what two sources say." and swapped.splitlines()[1:] == page.splitlines()[1:]


def test_a_page_with_no_quote_cites_the_document_of_its_lead() -> None:
    fact = Fact(doc_title="dataclasses", summary_slug="doc-dataclasses", description="`dataclasses` is a module.")
    facts = {"k1": fact}
    content = render_item_page("dataclasses", facts, [])
    assert content.splitlines()[0] == "`dataclasses` is a module. ([[doc-dataclasses|dataclasses]])"
    assert "doc-dataclasses" in {link.slug for link in parse_links(content)}
    # a model's lead is no sentence of the document: it is not cited as one
    assert "[[" not in render_item_page("dataclasses", facts, [], lead="A module of the standard library.")
