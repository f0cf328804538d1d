"""Which names have a page and what a page is made of, from the mention index's rows (``wiki.coverage``)."""

from __future__ import annotations

import itertools

from wiki.coverage import (
    MENTION_QUOTES,
    NAME_MANY_DOCS,
    NAME_MIN_DOCS,
    TERM_MIN_DOCS,
    KeyStats,
    best,
    facts_of,
    hub_worthy,
    name_deltas,
    page_worthy,
    rows_of,
    stats_after,
)
from wiki.dedup import name_key
from wiki.merge import item_type
from wiki.models import Document, ExtractedItem, Extraction


def _doc(i: int) -> Document:
    return Document(id=f"k{i}", tenant_id=1, knowledge_base_id="kb", title=f"Doc {i}")


def _rows(i: int, items=(), mentions=()):
    extraction = Extraction(summary="S.", body="B.", items=list(items), mentions=list(mentions))
    return rows_of(_doc(i), extraction, f"doc-{i}")


def _mention(name: str, **kw) -> ExtractedItem:
    kw.setdefault("kind", "entity")
    return ExtractedItem(name=name, **kw)


def _stats(*rows) -> KeyStats:
    return stats_after({}, [], [r for rs in rows for r in rs.values()]).popitem()[1]


def test_a_document_alone_makes_a_page_of_its_items():
    assert page_worthy(_stats(_rows(1, items=[_mention("Widget", description="Widget is a part.")])))


def test_a_name_gets_a_page_when_three_documents_name_it_and_one_says_something_of_it():
    said = _rows(1, mentions=[_mention("Kestrel", named=True, rank=1, description="Kestrel was founded in 1990.")])
    named = [_rows(i, mentions=[_mention("Kestrel", named=True, rank=0)]) for i in range(2, NAME_MIN_DOCS + 1)]
    assert not page_worthy(_stats(said, *named[:-1]))
    assert page_worthy(_stats(said, *named))
    # named by as many documents but never the subject of a sentence: nothing to lead with
    assert not page_worthy(_stats(*(_rows(i, mentions=[_mention("Kestrel", named=True)]) for i in range(9))))


def test_a_person_the_subject_of_two_sentences_of_one_document_gets_a_page():
    rows = _rows(
        1,
        mentions=[_mention("Oskar Venn", named=True, subject=2, rank=1, description="Oskar Venn was born in Bergen.")],
    )
    assert page_worthy(_stats(rows))


def test_a_term_defined_once_gets_a_page_when_another_document_names_it():
    defined = _rows(
        1,
        mentions=[
            _mention("page cache", kind="concept", rank=3, description="The page cache is a cache of file pages.")
        ],
    )
    used = [_rows(i, mentions=[_mention("page cache", kind="concept")]) for i in range(2, TERM_MIN_DOCS + 1)]
    assert not page_worthy(_stats(defined))
    assert page_worthy(_stats(defined, *used))
    assert not page_worthy(_stats(*used, _rows(9, mentions=[_mention("page cache", kind="concept")])))


def test_counters_go_back_to_nothing_when_the_rows_leave():
    rows = [r for i in range(3) for r in _rows(i, items=[_mention("Widget", description="Widget is a part.")]).values()]
    before = stats_after({}, [], rows)
    assert stats_after(before, rows, [])[name_key("Widget")] == KeyStats()
    assert name_deltas(rows, rows) == {}


def test_a_key_named_twice_by_one_document_is_one_row_with_both_names():
    rows = _rows(
        1,
        items=[
            _mention(
                "RCU",
                description="RCU is a synchronization mechanism.",
                evidence=["RCU is a synchronization mechanism."],
            )
        ],
        mentions=[_mention("rcu", sentences=4, subject=2)],
    )
    (row,) = rows.values()
    assert row.earned and row.name == "RCU" and row.aliases == ("rcu",) and row.sentences == 4 and row.rank == 3


def test_the_best_rows_and_the_page_facts_are_the_same_in_any_order_of_the_documents():
    rows = []
    for i, (rank, subject) in enumerate([(1, 0), (3, 1), (3, 4), (0, 0), (2, 2)]):
        description = f"Widget sentence {i} of rank {rank}." if rank else ""
        rows += _rows(
            i,
            mentions=[
                _mention("Widget", rank=rank, subject=subject, description=description, evidence=[f"Quote {i}."])
            ],
        ).values()
    chosen = {tuple(r.knowledge_id for r in best(list(order))) for order in itertools.permutations(rows)}
    assert chosen == {("k2", "k1", "k4", "k0", "k3")}  # a definition first, the one saying most of it before
    facts = facts_of(best(rows))
    assert [f.seq for f in facts.values()] == [1, 2, 3, 4, 5] and facts["k2"].description.startswith(
        "Widget sentence 2"
    )


def test_documents_that_only_name_a_subject_fill_its_quotes_only_up_to_a_few():
    rows = []
    for i in range(MENTION_QUOTES + 3):
        rows += _rows(i, mentions=[_mention("Widget", evidence=[f"Widget turns up in place {i}."])]).values()
    rows += _rows(99, mentions=[_mention("Widget", rank=3, description="A widget is a gadget.")]).values()
    chosen = best(rows)
    assert chosen[0].knowledge_id == "k99" and len(chosen) == MENTION_QUOTES


def test_a_lead_the_extractor_wrote_is_never_quoted_as_the_document_s_sentence():
    row = _rows(1, items=[_mention("x.Directory", rank=3, description="`Directory` is a class of `x`.")])
    facts = facts_of(best(row.values()))
    assert facts["k1"].description == "`Directory` is a class of `x`." and facts["k1"].evidence == []


def test_a_page_takes_the_kind_of_the_row_its_lead_comes_from():
    # the module a reference documents is an entity, though most documents name it as a word
    assert item_type(entity=1, docs=5, lead_kind="entity") == "entity"
    assert item_type(entity=4, docs=5, lead_kind="concept") == "concept"
    assert item_type(entity=1, docs=5) == "concept"


def test_a_name_many_documents_name_is_a_hub_page_by_the_shape_of_its_title():
    def stats(n: int, subject: int = 1) -> KeyStats:
        first = _rows(0, mentions=[_mention("kmalloc", named=True, subject=subject)])
        return _stats(first, *(_rows(i, mentions=[_mention("kmalloc", named=True)]) for i in range(1, n)))

    many = stats(NAME_MANY_DOCS)
    assert not page_worthy(many) and hub_worthy(many)
    for title in ("kmalloc", "UART", "PAGE_SIZE", "x86_64", "pg_hba.conf"):
        assert hub_worthy(many, title), title
    # first names, vendors, dictionary words and phrases are no hubs (linux-doc: "Alex", "instantiate")
    for title in ("Alex", "Samsung", "instantiate", "block layer"):
        assert not hub_worthy(many, title), title
    assert not hub_worthy(stats(NAME_MANY_DOCS - 1), "kmalloc")
    assert not hub_worthy(stats(NAME_MANY_DOCS, subject=0), "kmalloc")  # no sentence has it for subject


def test_a_term_many_documents_name_is_no_hub():
    rows = [_rows(i, mentions=[_mention("iterable", kind="concept", named=True, subject=1)]) for i in range(12)]
    assert not hub_worthy(_stats(*rows), "iterable")
