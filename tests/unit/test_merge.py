"""Page rules of a reduce batch that need no database (``wiki.merge``)."""

from __future__ import annotations

import itertools

from wiki.merge import keep_lead, lead_due, new_page_slugs, title_and_aliases
from wiki.models import Fact, Page
from wiki.render import lead_inputs, lead_key, render_item_page


def test_a_new_page_tries_its_slug_then_its_kind_suffixes():
    assert list(itertools.islice(new_page_slugs("C++", "entity"), 4)) == ["c", "c-entity", "c-entity-2", "c-entity-3"]
    assert next(new_page_slugs("Read-copy update", "concept")) == "read-copy-update"


def test_a_page_is_named_by_its_documents_names_and_keeps_the_others_as_aliases_in_any_order():
    names = {("rcu", False): 2, ("RCU", False): 5, ("Read-Copy Update", True): 1, ("gone", False): 0}
    for order in itertools.permutations(names.items()):
        assert title_and_aliases(dict(order)) == ("RCU", ["rcu", "Read-Copy Update"])
    # a name only ever given as an alias names the page when nothing else does
    assert title_and_aliases({("POSIX", True): 1}) == ("POSIX", [])


def _page(facts: dict[str, Fact], **update) -> Page:
    content = render_item_page("Frob", facts, [])
    return Page(
        tenant_id=1,
        knowledge_base_id="kb",
        slug="frob",
        title="Frob",
        page_type="entity",
        content=content,
        facts=facts,
        **update,
    )


FACTS = {
    f"k{i}": Fact(
        doc_title=f"D{i}",
        summary_slug=f"doc-d{i}",
        description=f"Frob is thing {i}.",
        evidence=[f"Frob is thing {i}."],
        seq=i,
    )
    for i in (1, 2)
}


def test_a_model_lead_is_kept_only_while_the_first_contributions_it_was_written_from_stand():
    page = _page(FACTS)
    due = lead_due(page)
    assert due is not None and due[1] == lead_key("Frob", lead_inputs(FACTS))
    stored = page.model_copy(update={"lead": "Frob is a thing of two sources.", "lead_key": due[1]})
    kept = keep_lead(page, stored)
    assert kept.content.splitlines()[0] == "Frob is a thing of two sources." and kept.lead_key == due[1]
    assert lead_due(kept) is None
    changed = _page({**FACTS, "k0": FACTS["k1"].model_copy(update={"description": "Frob is thing zero.", "seq": 0})})
    assert keep_lead(changed, stored) == changed  # its first contributions changed: the lead goes
    one = _page({"k1": FACTS["k1"]})
    assert lead_due(one) is None and keep_lead(one, stored) == one  # one source: nothing to synthesise
