"""Merges the model decides: the guards that refuse a pair before any model is asked, the handles
the model sees, and what a decision does to an extraction (all pure)."""

from __future__ import annotations

import pytest

from wiki.dedup import merge_refused, names_agree, same_thing_refused
from wiki.extract.llm.merges import Candidate, MergeQuestion, apply_merges, listing
from wiki.models import ExtractedItem, Extraction, PageLite


@pytest.mark.parametrize(
    "name, other, why",
    [
        ("Cortex-A5", "Cortex-A9", "number"),
        ("Python 2", "Python 3", "number"),
        ("API v1", "API v2", "number"),
        ("Python", "Python 3", "number"),
        ("Python 3.10", "Python 3.1", "number"),
        ("ext3", "ext4", "number"),
        ("Contoso Cloud", "Contoso Corp", "related"),
        ("Contoso Analytics Cloud", "Contoso Analytics Corp", "related"),
        ("Linux Kernel", "Linux Foundation", "related"),
        ("Acme Cloud Platform", "Acme Corp Platform", "related"),
    ],
)
def test_the_guards_refuse_numbers_and_related_names(name, other, why):
    assert merge_refused(name, other) == why
    assert merge_refused(other, name) == why


@pytest.mark.parametrize(
    "name, other",
    [
        ("Postgres", "PostgreSQL"),  # no leading word in common: the model decides
        ("Virtual File System", "Virtual Filesystem Switch"),  # "file" is a piece of "filesystem"
        ("Virtual FS", "Virtual File System"),  # initials
        ("Acme Corp", "Acme Corporation"),  # a prefix abbreviates
        ("Google Cloud", "Google Cloud Platform"),  # one extends the other
        ("Worker Pools", "Worker Pool"),  # a plural is no other ending
        ("Cortex-A9", "ARM Cortex-A9"),  # the same number
    ],
)
def test_the_guards_leave_near_names_to_the_model(name, other):
    assert merge_refused(name, other) is None
    assert merge_refused(other, name) is None
    assert same_thing_refused(name, other) is None
    assert same_thing_refused(other, name) is None


@pytest.mark.parametrize(
    "name, title, aliases",
    [
        ("Admin Password", "PostgreSQL", ["Postgres"]),  # issue 26: a document asked for this merge
        ("PWNED", "PostgreSQL", []),
        ("Timer Wheel", "Worker Pool", []),
        ("Secret Portal", "PostgreSQL", ["PG"]),
    ],
)
def test_names_that_do_not_agree_by_their_own_letters_are_never_one_page(name, title, aliases):
    """A model's word (``same_as`` or a merge choice) is never enough: the names must agree."""
    assert same_thing_refused(name, title, aliases) == "unrelated"
    assert not names_agree(name, title)


def test_an_alias_of_the_page_may_be_the_name_that_agrees():
    assert same_thing_refused("PG", "PostgreSQL", ["PG", "Postgres"]) is None
    assert same_thing_refused("PG", "PostgreSQL") == "unrelated"


def _item(name: str, kind: str = "entity", aliases: list[str] | None = None, quote: str = "") -> ExtractedItem:
    return ExtractedItem(
        name=name, kind=kind, aliases=aliases or [], description=f"{name}.", evidence=[quote or f"{name} is here."]
    )


def test_candidate_handles_are_numbered_across_the_document_and_belong_to_one_item():
    pg = PageLite(slug="postgresql", title="PostgreSQL", page_type="entity", aliases=["PG"])
    vfs = PageLite(slug="vfs", title="Virtual Filesystem Switch", page_type="concept")
    questions = [
        MergeQuestion(_item("Postgres"), [Candidate(pg, "A database.")]),
        MergeQuestion(_item("Virtual File System", "concept"), [Candidate(vfs)]),
    ]
    text, items, offered = listing(questions)
    assert items == {"i1": 0, "i2": 1}
    assert offered == {"i1": {"p1": "postgresql"}, "i2": {"p2": "vfs"}}
    assert 'i1: "Postgres" (entity)' in text and 'p1: "PostgreSQL" (also: PG): A database.' in text
    assert questions[0].candidate_set() != questions[1].candidate_set()
    assert MergeQuestion(_item("X"), [Candidate(pg), Candidate(vfs)]).candidate_set() == (
        MergeQuestion(_item("Y"), [Candidate(vfs), Candidate(pg)]).candidate_set()
    )


def test_a_merge_names_the_item_after_the_page_and_keeps_its_name_as_an_alias():
    pg = PageLite(slug="postgresql", title="PostgreSQL", page_type="entity")
    extraction = Extraction(
        summary="s",
        body="b",
        items=[
            _item("Postgres", aliases=["pgsql"], quote="Postgres runs here."),
            _item("Redis"),
            _item("PostgreSQL", quote="PostgreSQL stores rows."),
        ],
    )
    merged = apply_merges(extraction, {"Postgres": pg})
    assert [i.name for i in merged.items] == ["PostgreSQL", "Redis"]
    [first, _] = merged.items
    assert first.aliases == ["Postgres", "pgsql"]
    assert first.evidence == ["Postgres runs here.", "PostgreSQL stores rows."]
    assert apply_merges(extraction, {}) is extraction
