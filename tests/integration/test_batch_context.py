"""The reduce batch's lazy lookups: each asked once per batch, answers shared across threads."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from stages.batch_context import BatchContext
from stages.deps import build_deps
from wiki.extract.offline import OfflineExtractor
from wiki.models import Page, SourceRef


class CountingPages:
    """The page repository with a count of calls per method (each call is one SQL statement)."""

    def __init__(self, pages):
        self.pages, self.calls = pages, {}

    def __getattr__(self, name):
        method = getattr(self.pages, name)

        def counted(*args, **kwargs):
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args, **kwargs)

        return counted


def _wiki(settings, pool):
    deps = build_deps(settings, pool=pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"ctx-{uuid.uuid4().hex[:6]}")
    doc, _ = deps.docs.upsert(kb, title="Intro", source_uri="intro.md", content="Intro text. " * 10)
    ref = [SourceRef(knowledge_id=doc.id, title="Intro")]
    for slug, title, page_type in [
        ("intro", "Intro", "summary"),
        ("read-copy-update", "Read-Copy Update", "concept"),
        ("widget", "Widget", "entity"),
    ]:
        deps.pages.save(
            Page(
                tenant_id=1,
                knowledge_base_id=kb.id,
                slug=slug,
                title=title,
                page_type=page_type,
                content=f"{title} body text.",
                source_refs=ref,
            )
        )
    return deps, kb, doc


def test_each_lookup_is_asked_once_per_batch(settings, clean_db):
    deps, kb, doc = _wiki(settings, clean_db)
    pages = CountingPages(deps.pages)
    ctx = BatchContext(pages, kb.id)

    assert set(ctx.lite(["widget", "nope"])) == {"widget"}
    assert set(ctx.lite(["widget", "nope", "intro"])) == {"widget", "intro"}  # only "intro" is fetched
    assert ctx.summary_of(doc.id) == "intro"  # fetches "read-copy-update", the one citing slug not seen yet
    assert ctx.summary_of(doc.id) == "intro"
    assert [p.slug for p in ctx.by_name_keys(["readcopyupdate"])["readcopyupdate"]] == ["read-copy-update"]
    assert [p.slug for p in ctx.by_name_keys(["readcopyupdate"])["readcopyupdate"]] == ["read-copy-update"]

    assert pages.calls == {"lite_by_slugs": 3, "slugs_by_sources": 1, "by_name_keys": 1}


def test_a_batch_asks_for_all_its_texts_and_documents_in_one_statement_each(settings, clean_db):
    deps, kb, doc = _wiki(settings, clean_db)
    pages = CountingPages(deps.pages)
    ctx = BatchContext(pages, kb.id)

    found = ctx.by_name_keys(["readcopyupdate", "widget", "intro", "nothinglikeit"])
    assert {k: [p.slug for p in v] for k, v in found.items()} == {  # a summary page has no name key
        "readcopyupdate": ["read-copy-update"],
        "widget": ["widget"],
        "intro": [],
        "nothinglikeit": [],
    }
    assert [p.slug for p in ctx.by_name_keys(["widget"])["widget"]] == ["widget"]  # a cache hit
    assert ctx.slugs_citing_many([doc.id, "unknown-doc"]) == {
        doc.id: ["intro", "read-copy-update", "widget"],
        "unknown-doc": [],
    }
    assert ctx.slugs_citing(doc.id) == ["intro", "read-copy-update", "widget"]

    assert pages.calls == {"by_name_keys": 1, "slugs_by_sources": 1}


def test_threads_share_one_answer(settings, clean_db):
    deps, kb, _ = _wiki(settings, clean_db)
    ctx = BatchContext(deps.pages, kb.id)
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: sorted(ctx.lite(["widget", "intro", "gone"])), range(64)))
    assert answers == [["intro", "widget"]] * 64
