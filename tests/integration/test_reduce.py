"""Reduce stage function against real PostgreSQL (no broker: the stage is plain Python)."""

from __future__ import annotations

import uuid

from stages.deps import build_deps
from stages.reduce import run_reduce_batch
from tests.support.lanes import mapped_document
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import REDUCE, SCOPE_KB
from wiki.models import ExtractedItem, Extraction


def _mapped(deps, kb, title: str, extraction: Extraction) -> str:
    return mapped_document(deps, kb, title, extraction)


def test_one_document_naming_a_thing_twice_gets_one_page(settings, clean_db):
    # Seen on linux-doc: an alias of one item equal to another item's name raised KeyError in the planner.
    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    items = [
        ExtractedItem(
            name="RCU",
            kind="entity",
            aliases=["Read-Copy Update"],
            description="RCU is a mechanism.",
            evidence=["RCU is a mechanism."],
        ),
        ExtractedItem(name="read-copy update", kind="concept", description="", evidence=["Read-copy update scales."]),
        ExtractedItem(name="rcu", kind="concept", description="", evidence=["rcu again."]),
    ]
    kid = _mapped(deps, kb, "RCU concepts", Extraction(summary="About RCU.", body="About RCU.", items=items))

    result = run_reduce_batch(kb.tenant_id, kb.id, deps)

    assert (result.documents, result.failed) == (1, 0)
    # "RCU" and "rcu" share a name key; an alias never merges, so "read-copy update" is its own page
    counts = deps.pages.counts_by_type(kb.id)
    assert counts == {"summary": 1, "entity": 1, "concept": 1}
    page = deps.pages.get(kb.id, "rcu")
    assert page is not None and [r.knowledge_id for r in page.source_refs] == [kid]
    assert "Read-Copy Update" in page.aliases  # kept for linking
    assert deps.pages.get(kb.id, "read-copy-update").page_type == "concept"
    assert deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id) == 0


def test_an_alias_never_decides_which_page_an_item_joins_whichever_came_first(settings, clean_db):
    # Seen: an item named like one page and aliased like another ("comp.lang.python", alias
    # "Python") joined whichever existed first; arriving first, it took a page of its own that
    # later items reached through its alias. Three documents then made one page or two depending
    # on their order. Only the name decides now, so every order gives the same two pages.
    def item(name, aliases=()):
        return ExtractedItem(
            name=name,
            kind="entity",
            aliases=list(aliases),
            description=f"{name} is a scheme.",
            evidence=[f"{name} is a scheme."],
        )

    docs = {"Intro": item("Read-Copy Update"), "Basics": item("RCU"), "Details": item("RCU", ["read copy update"])}
    outcomes = []
    for order in (["Intro", "Basics", "Details"], ["Details", "Intro", "Basics"], ["Basics", "Details", "Intro"]):
        deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
        for title in order:
            _mapped(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title}.", items=[docs[title]]))
            run_reduce_batch(kb.tenant_id, kb.id, deps)
        outcomes.append(_item_pages(deps, kb))
        assert deps.pages.get(kb.id, "rcu").aliases == ["read copy update"]  # still a display alias
    assert outcomes == [{"read-copy-update": {"Intro"}, "rcu": {"Basics", "Details"}}] * 3


def test_a_failing_batch_gives_its_claims_back_at_once(settings, clean_db):
    # Seen with 8 worker threads: a PoolTimeout in reduce left the batch's rows claimed until the
    # stale-claim threshold (5 minutes) passed.
    import pytest

    from wiki.lanes import REDUCE, SCOPE_KB

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    item = ExtractedItem(name="Widget", kind="entity", description="A widget.", evidence=["A widget."])
    _mapped(deps, kb, "Doc", Extraction(summary="Doc.", body="Doc.", items=[item]))

    def broken(*args, **kwargs):
        raise RuntimeError("pool exhausted")

    deps.pages.slugs_by_sources = broken
    with pytest.raises(RuntimeError):
        run_reduce_batch(kb.tenant_id, kb.id, deps)

    assert deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id) == 1
    assert deps.ops.claimed_count(REDUCE, SCOPE_KB, kb.id, settings.stale_claim_s) == 0


def _item_pages(deps, kb) -> dict[str, set[str]]:
    """slug -> titles of the documents an entity/concept page cites."""
    return {
        p.slug: {r.title for r in p.source_refs}
        for p in deps.pages.iter_pages(kb.id)
        if p.page_type in ("entity", "concept")
    }


def test_items_land_on_the_same_pages_in_one_batch_or_in_several(settings, clean_db):
    # Seen on the stdlib docs: "FileType" and "file type" merged when their documents shared a
    # batch (rapidfuzz over the batch) but not across batches (trigram similarity 0.58 < 0.6), and
    # an item named like one page and aliased like another went to whichever the batch saw first.
    # Now they share a name key (one page, titled by the smallest slug), and aliases never merge.
    def item(name, aliases=()):
        return ExtractedItem(
            name=name,
            kind="entity",
            aliases=list(aliases),
            description=f"{name} is a thing.",
            evidence=[f"{name} is a thing."],
        )

    docs = [
        ("argparse", [item("FileType")]),
        ("exceptions", [item("file type")]),
        ("futures", [item("CancelledError")]),
        ("taskgroups", [item("asyncio.CancelledError")]),
        ("timeouts", [item("asyncio.CancelledError", ["CancelledError"])]),
    ]
    outcomes = []
    settings = settings.model_copy(update={"ingest_batch_size": len(docs)})  # the e2e env may set a smaller one
    for batches in ([docs], [[d] for d in docs]):
        deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
        for batch in batches:
            for title, items in batch:
                _mapped(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title}.", items=items))
            assert run_reduce_batch(kb.tenant_id, kb.id, deps).documents == len(batch)
        outcomes.append(_item_pages(deps, kb))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["file-type"] == {"argparse", "exceptions"} and "filetype" not in outcomes[0]
    assert outcomes[0]["asyncio-cancellederror"] == {"taskgroups", "timeouts"}
    assert outcomes[0]["cancellederror"] == {"futures"}


def test_a_concept_named_index_never_takes_the_index_pages_slug(settings, clean_db):
    # Seen: a concept named "index" and the KB's index page overwrote each other.
    from stages.index import rebuild_index

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
    item = ExtractedItem(
        name="Index",
        kind="concept",
        description="An index is a catalogue number.",
        evidence=["An index is a catalogue number."],
    )
    _mapped(deps, kb, "Catalogues", Extraction(summary="Catalogues.", body="Catalogues.", items=[item]))
    run_reduce_batch(kb.tenant_id, kb.id, deps)  # before the KB has an index page
    rebuild_index(kb.tenant_id, kb.id, deps)
    # a later document names it again, once the index page exists
    _mapped(deps, kb, "Numbers", Extraction(summary="Numbers.", body="Numbers.", items=[item]))
    run_reduce_batch(kb.tenant_id, kb.id, deps)

    assert deps.pages.get(kb.id, "index").page_type == "index"
    concept = deps.pages.get(kb.id, "index-concept")
    assert concept is not None and concept.title == "Index" and len(concept.source_refs) == 2
    assert deps.pages.counts_by_type(kb.id) == {"summary": 2, "concept": 1, "index": 1}


def test_the_index_page_names_the_most_cited_entities_and_concepts(settings, clean_db):
    from stages.index import rebuild_index

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")

    def item(name, kind):
        return ExtractedItem(name=name, kind=kind, description=f"{name} is a thing.", evidence=[f"{name} is a thing."])

    for title, names in [("One", ["Acme", "Widget"]), ("Two", ["Acme", "Gizmo"]), ("Three", ["Acme", "Widget"])]:
        items = [item(n, "entity" if n == "Acme" else "concept") for n in names]
        _mapped(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title}.", items=items))
    run_reduce_batch(kb.tenant_id, kb.id, deps)

    content = rebuild_index(kb.tenant_id, kb.id, deps).content
    assert "## Most-cited entities\n\n- [[acme|Acme]] (quotes 3 documents)\n" in content
    concepts = "- [[widget|Widget]] (quotes 2 documents)\n- [[gizmo|Gizmo]] (quotes 1 document)\n"
    assert "## Most-cited concepts\n\n" + concepts in content
    assert [p.slug for p, _ in deps.pages.most_cited(kb.id, "concept", 1)] == ["widget"]


def test_names_that_slugify_alike_but_differ_in_key_keep_two_pages(settings, clean_db):
    # "C" and "C++" both slugify to "c"; "+" keeps their name keys apart, so the second takes the
    # slug suffixed with its kind, and a later "C++" finds its page by key, not by slug
    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")

    def item(name):
        return ExtractedItem(
            name=name, kind="entity", description=f"{name} is a language.", evidence=[f"{name} is a language."]
        )

    _mapped(deps, kb, "Languages", Extraction(summary="Languages.", body="Languages.", items=[item("C"), item("C++")]))
    run_reduce_batch(kb.tenant_id, kb.id, deps)
    _mapped(deps, kb, "Compilers", Extraction(summary="Compilers.", body="Compilers.", items=[item("C++")]))
    run_reduce_batch(kb.tenant_id, kb.id, deps)

    assert _item_pages(deps, kb) == {"c": {"Languages"}, "c-entity": {"Languages", "Compilers"}}
    assert deps.pages.get(kb.id, "c-entity").title == "C++"


def test_names_that_slugify_alike_get_the_same_slugs_whichever_came_first(settings, clean_db):
    # Seen on the tests' corpus: the module "wiki.links" and the table "wiki_links" both slugify to
    # "wiki-links", and the first to arrive took it. Pages sharing a slug share it out by (title,
    # key) now: "C" before "C++" in both orders, the page that had it first moving aside, with
    # the links to it
    def item(name):
        return ExtractedItem(
            name=name, kind="entity", description=f"{name} is a language.", evidence=[f"{name} is a language."]
        )

    def slugs(deps, kb):
        pages = [p for p in deps.pages.iter_pages(kb.id) if p.page_type == "entity"]
        return {p.slug: p.title for p in pages}

    outcomes = []
    for order in (["Compilers", "Languages"], ["Languages", "Compilers"]):
        deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
        names = {"Compilers": "C++", "Languages": "C"}
        for title in order:
            extraction = Extraction(summary=f"{title}.", body=f"{title}.", items=[item(names[title])])
            _mapped(deps, kb, title, extraction)
            run_reduce_batch(kb.tenant_id, kb.id, deps)
        outcomes.append(slugs(deps, kb))
        assert deps.pages.link_stats(kb.id)["dead_links"] == 0
        assert "[[c-entity|C++]]" in deps.pages.get(kb.id, "doc-compilers").content
    assert outcomes == [{"c": "C", "c-entity": "C++"}] * 2


def test_documents_sharing_a_title_share_its_summary_slug_by_source_whichever_came_first(settings, clean_db):
    # The first document of a title to arrive took its plain summary slug, and kept it: two
    # orders gave two wikis, and deleting it left the other suffixed where a fresh ingest of the
    # other alone gives it the plain slug
    from stages.delete import delete_document
    from wiki.slugs import summary_suffix

    def item(name):
        return ExtractedItem(
            name=name, kind="entity", description=f"{name} is a tool.", evidence=[f"{name} is a tool."]
        )

    def summaries(deps, kb):
        return {p.slug: p.source_refs[0].knowledge_id for p in deps.pages.iter_pages(kb.id) if p.page_type == "summary"}

    outcomes = []
    for order in (["b", "a"], ["a", "b"]):
        deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
        ids = {}
        for area in order:
            extraction = Extraction(summary="Notes.", body="Notes.", items=[item(f"Tool {area.upper()}")])
            ids[area] = mapped_document(deps, kb, "Notes", extraction, source_uri=f"{area}/notes.md")
            run_reduce_batch(kb.tenant_id, kb.id, deps)
        found = summaries(deps, kb)
        outcomes.append({slug: next(a for a, kid in ids.items() if kid == found[slug]) for slug in found})
        # the pages quoting a moved summary link it where it is now
        assert deps.pages.link_stats(kb.id)["dead_links"] == 0
        assert f"[[doc-notes-{summary_suffix('b/notes.md', '')}|Notes]]" in deps.pages.get(kb.id, "tool-b").content
        delete_document(kb.tenant_id, kb.id, ids["a"], deps)
        run_reduce_batch(kb.tenant_id, kb.id, deps)
        assert summaries(deps, kb) == {"doc-notes": ids["b"]}
        assert "[[doc-notes|Notes]]" in deps.pages.get(kb.id, "tool-b").content
    assert outcomes == [{"doc-notes": "a", f"doc-notes-{summary_suffix('b/notes.md', '')}": "b"}] * 2


def test_a_summary_lists_what_its_document_makes_a_page_of_whichever_came_first(settings, clean_db):
    # A document naming "Gizmo" as an item with nothing to quote makes it no page; another
    # document quoting it does. The first one's summary listed Gizmo only when the other had
    # arrived before it. It lists the items it makes pages of on its own now, in every order.
    quoted = ExtractedItem(name="Gizmo", kind="entity", description="Gizmo is a tool.", evidence=["Gizmo is a tool."])
    bare = ExtractedItem(name="Gizmo", kind="entity")
    own = ExtractedItem(name="Widget", kind="entity", description="Widget is a part.", evidence=["Widget is a part."])
    docs = {"Parts": [bare, own], "Tools": [quoted]}
    outcomes = []
    for order in (["Parts", "Tools"], ["Tools", "Parts"]):
        deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")
        for title in order:
            _mapped(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title}.", items=docs[title]))
            run_reduce_batch(kb.tenant_id, kb.id, deps)
        assert deps.pages.get(kb.id, "gizmo") is not None
        outcomes.append(deps.pages.get(kb.id, "doc-parts").content)
    assert outcomes[0] == outcomes[1]
    assert "[[widget|Widget]]" in outcomes[0] and "gizmo" not in outcomes[0]
