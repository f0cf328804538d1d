"""Page facts (``wiki.models.Fact``): rows the untyped code wrote still load, compare equal to the
facts built now (so a batch does not rewrite an unchanged page), and are stored compact."""

from __future__ import annotations

import json

from wiki.models import Fact, Page, facts_json
from wiki.render import first_lead, render_item_page

#: An entity page's ``wiki_pages.facts`` as the code before ``Fact`` wrote it: every key of every
#: contribution, empty ones too; the second is older than ``seq`` and has none.
OLD_ITEM_FACTS = {
    "k2": {
        "doc_title": "Gears",
        "summary_slug": "doc-gears",
        "description": "",
        "evidence": ["A widget turns the gear."],
        "name": "widget",
        "aliases": [],
        "kind": "entity",
        "seq": 1,
    },
    "k1": {"doc_title": "Parts", "summary_slug": "doc-parts", "description": "A widget is a part.", "evidence": []},
}
#: A summary page's, likewise: the (kind, slug, display, description) of the item pages it lists.
OLD_SUMMARY_FACTS = {"k1": {"links": [["entity", "widget", "Widget", "A widget is a part."]]}}


def _page(facts: dict, page_type: str = "entity") -> Page:
    # what ``repos.pages`` does with a row: jsonb comes back as dicts and lists
    row = {"tenant_id": 1, "knowledge_base_id": "kb", "slug": "widget", "title": "Widget", "page_type": page_type}
    return Page.model_validate({**row, "content": "", "facts": facts})


def test_an_item_page_row_the_untyped_code_wrote_loads_as_the_facts_built_now():
    page = _page(OLD_ITEM_FACTS)
    assert page.facts == {
        "k2": Fact(
            doc_title="Gears",
            summary_slug="doc-gears",
            evidence=["A widget turns the gear."],
            name="widget",
            kind="entity",
            seq=1,
        ),
        "k1": Fact(doc_title="Parts", summary_slug="doc-parts", description="A widget is a part."),
    }
    # the contribution without a seq sorts first (0), as the untyped code's .get("seq", 0) did
    assert first_lead(page.facts) == "A widget is a part."
    assert render_item_page(page.title, page.facts, []) == (
        "A widget is a part.\n\n## What the sources say\n\n- A widget turns the gear. ([[doc-gears|Gears]])\n"
    )


def test_facts_are_stored_without_their_defaults_and_read_back_equal():
    page = _page(OLD_ITEM_FACTS)
    stored = json.loads(json.dumps(facts_json(page.facts)))  # as jsonb holds it
    assert stored == {
        "k2": {
            "doc_title": "Gears",
            "summary_slug": "doc-gears",
            "evidence": ["A widget turns the gear."],
            "name": "widget",
            "kind": "entity",
            "seq": 1,
        },
        "k1": {"doc_title": "Parts", "summary_slug": "doc-parts", "description": "A widget is a part."},
    }
    assert _page(stored).facts == page.facts


def test_a_summary_page_row_keeps_its_links_and_is_stored_as_before():
    page = _page(OLD_SUMMARY_FACTS, "summary")
    built = {"k1": Fact(links=[("entity", "widget", "Widget", "A widget is a part.")])}  # as reduce builds it
    assert page.facts == built
    assert json.loads(json.dumps(facts_json(built))) == OLD_SUMMARY_FACTS
