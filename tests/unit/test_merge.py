"""Merge rules of a reduce batch that need no database (``wiki.merge``)."""

from __future__ import annotations

import itertools

from wiki.merge import SlugPlan, new_page_slugs, next_page
from wiki.models import PageType


def test_a_new_page_tries_its_slug_then_its_kind_suffixes():
    assert list(itertools.islice(new_page_slugs("C++", "entity"), 4)) == ["c", "c-entity", "c-entity-2", "c-entity-3"]
    assert next(new_page_slugs("Read-copy update", "concept")) == "read-copy-update"


def test_a_plan_without_sources_writes_nothing_and_one_with_sources_names_the_page_by_them():
    plan = SlugPlan(title="", page_type="")
    assert next_page(1, "kb", "gone", plan, None) == ("unchanged", None, None)
    plan = SlugPlan(
        title="RCU",
        page_type=PageType.entity,
        refs={"k1": "Doc"},
        add={
            "k1": {
                "name": "rcu",
                "aliases": ["RCU"],
                "kind": "concept",
                "description": "A sync.",
                "summary_slug": "doc-doc",
                "doc_title": "Doc",
                "evidence": [],
            }
        },
    )
    outcome, page, target = next_page(1, "kb", "rcu", plan, None)
    assert outcome == "written" and page.page_type == "concept" and page.title == "rcu" and target is None
    assert page.aliases == ["RCU"]
