"""Deleting, changing and re-ingesting documents: the stage functions on real PostgreSQL and Redis.

The stages run synchronously here (pump -> map -> reduce -> cross-link -> index), driven by
``_settle``; the triggers they send go to the real broker of the ``actors`` package and are
never consumed. A scripted extractor makes every page predictable: a document line
``* Name (kind): sentence.`` becomes an item whose evidence is that sentence.
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.support.broker import drain
from tests.support.pipeline import settle
from wiki.links import parse_links
from wiki.models import ExtractedItem, Extraction

_ITEM = re.compile(r"^\* (.+?) \((entity|concept)\): (.+)$")


class ScriptedExtractor:
    """Items from ``* Name (kind): sentence.`` lines; counts its calls."""

    name = "scripted-v1"

    def __init__(self) -> None:
        self.calls = 0

    def extract(self, title: str, text: str) -> Extraction:
        self.calls += 1
        items, prose = [], []
        for line in text.splitlines():
            m = _ITEM.match(line.strip())
            if m:
                name, kind, sentence = m.groups()
                items.append(
                    ExtractedItem(
                        name=name, kind=kind, description=f"{name} as {title} describes it.", evidence=[sentence]
                    )
                )
            elif line.strip():
                prose.append(line.strip())
        body = "\n\n".join(prose) or title
        return Extraction(summary=prose[0] if prose else title, body=body, items=items)


@pytest.fixture()
def env(actors_broker, pool):  # noqa: F811
    """(deps with a counting scripted extractor, a fresh KB)."""
    from stages.deps import build_deps
    from wiki.settings import get_settings

    extractor = ScriptedExtractor()
    deps = build_deps(get_settings(), pool, extractor=extractor)
    kb = deps.kbs.get_or_create(1, f"retract-{uuid.uuid4().hex[:8]}")
    yield deps, kb
    deps.redis.close()


def _submit(deps, kb, name: str, *lines: str) -> str:
    from stages.ingest import submit_document

    content = f"{name} is a test document about the pipeline.\n" + "\n".join(lines)
    result = submit_document(
        deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=name, content=content, source_uri=f"test/{name}.md"
    )
    assert result.status in ("queued", "unchanged"), result
    return result.knowledge_id


def _settle(deps, kb, max_rounds: int = 50) -> None:
    """Run every stage of the KB until all its lanes are empty (fails when they never empty)."""
    settle(deps, kb, max_rounds)


def _pages(deps, kb) -> dict:
    return {p.slug: p for p in deps.pages.iter_pages(kb.id)}


def _assert_no_dead_links(deps, kb) -> None:
    pages = _pages(deps, kb)
    for page in pages.values():
        dead = {link.slug for link in parse_links(page.content)} - set(pages)
        assert not dead, (page.slug, dead)
    assert deps.pages.link_stats(kb.id)["dead_links"] == 0


def test_retract_deletes_doc_only_pages_and_rewrites_shared_ones(env):
    from stages.delete import delete_document

    deps, kb = env
    a = _submit(
        deps,
        kb,
        "alpha",
        "* Redis Broker (entity): Alpha keeps its locks in the Redis broker.",
        "* Alpha Widget (concept): The alpha widget only exists in alpha.",
    )
    b = _submit(
        deps,
        kb,
        "beta",
        "* Redis Broker (entity): Beta sends its triggers through the Redis broker.",
        "* Beta Gadget (concept): The beta gadget only exists in beta.",
    )
    _submit(
        deps,
        kb,
        "gamma",
        "Gamma works next to the Alpha Widget every day.",
        "* Gamma Tool (entity): The gamma tool is gamma's own.",
    )
    _settle(deps, kb)
    pages = _pages(deps, kb)
    assert {"doc-alpha", "doc-beta", "doc-gamma", "redis-broker", "alpha-widget", "beta-gadget"} <= set(pages)
    assert {r.knowledge_id for r in pages["redis-broker"].source_refs} == {a, b}
    # gamma's summary mentions the alpha-only page, so cross-linking pointed it there
    assert "alpha-widget" in {link.slug for link in parse_links(pages["doc-gamma"].content)}
    assert "doc-alpha" in {link.slug for link in parse_links(pages["index"].content)}
    gamma_version = pages["doc-gamma"].version

    assert delete_document(kb.tenant_id, kb.id, a, deps).status == "deleting"
    assert deps.docs.get(a).status == "deleting"
    _settle(deps, kb)

    pages = _pages(deps, kb)
    assert "doc-alpha" not in pages and "alpha-widget" not in pages  # only alpha said them
    redis_page = pages["redis-broker"]
    assert [r.knowledge_id for r in redis_page.source_refs] == [b]
    assert set(redis_page.facts) == {b}
    assert "Alpha keeps its locks" not in redis_page.content
    assert "Beta sends its triggers" in redis_page.content
    assert "doc-alpha" not in redis_page.content
    # gamma was not in the batch, yet its link to the deleted page is gone and its text kept
    gamma = pages["doc-gamma"]
    assert gamma.version > gamma_version
    assert "alpha-widget" not in {link.slug for link in parse_links(gamma.content)}
    assert "Alpha Widget" in gamma.content
    _assert_no_dead_links(deps, kb)
    index_links = {link.slug for link in parse_links(pages["index"].content)}
    assert "doc-alpha" not in index_links and "doc-beta" in index_links
    assert deps.docs.get(a).status == "deleted"
    assert deps.extractions.get(kb.id, a, deps.docs.get(a).content_hash, deps.extractor.name) is None
    # deleting again is a no-op
    assert delete_document(kb.tenant_id, kb.id, a, deps).status == "already_deleted"
    assert delete_document(kb.tenant_id, kb.id, "no-such-document", deps).status == "unknown"


@pytest.mark.parametrize("ingest_older", [True, False])
def test_ingest_racing_a_delete_in_one_batch_ends_deleted(env, ingest_older):
    from stages.delete import delete_document
    from stages.ingest import pump_ingest_lane
    from stages.map import map_document
    from stages.reduce import run_reduce_batch
    from wiki.lanes import INGEST, OP_INGEST, OP_RETRACT, REDUCE, SCOPE_KB

    deps, kb = env
    keep = _submit(deps, kb, "keeper", "* Shared Queue (concept): The keeper drains the shared queue.")
    _settle(deps, kb)
    doomed = _submit(
        deps,
        kb,
        "doomed",
        "* Shared Queue (concept): The doomed document fills the shared queue.",
        "* Doomed Thing (entity): The doomed thing lives here.",
    )
    pump_ingest_lane(kb.tenant_id, kb.id, deps)
    [op] = [o for o in deps.ops.peek(INGEST, SCOPE_KB, kb.id) if o.dedup_key == doomed]
    assert map_document(kb.tenant_id, kb.id, doomed, op.id, deps) == "mapped"
    [mapped] = deps.ops.peek(REDUCE, SCOPE_KB, kb.id)

    assert delete_document(kb.tenant_id, kb.id, doomed, deps).status == "deleting"
    # the delete took the mapped op out and put its retract straight in the reduce lane
    [retract] = deps.ops.peek(REDUCE, SCOPE_KB, kb.id)
    assert retract.op == OP_RETRACT
    # the racing ingest op in the same batch: a map or a duplicate message moving it in around the delete
    lane = {"tenant_id": kb.tenant_id, "task_type": REDUCE, "scope": SCOPE_KB, "scope_id": kb.id, "dedup_key": doomed}
    if ingest_older:  # ingest, then retract: the retract is the last op
        deps.ops.delete_by_ids([retract.id])
        deps.ops.enqueue(op=OP_INGEST, payload=mapped.payload, **lane)
        deps.ops.enqueue(op=OP_RETRACT, payload=retract.payload, **lane)
    else:  # the ingest arrives after the retract: its op is the last, the durable status still wins
        deps.ops.enqueue(op=OP_INGEST, payload=mapped.payload, **lane)
    ops = deps.ops.peek(REDUCE, SCOPE_KB, kb.id)
    assert [o.op for o in ops] == (["ingest", "retract"] if ingest_older else ["retract", "ingest"])
    result = run_reduce_batch(kb.tenant_id, kb.id, deps)
    assert result.retracted == 1 and result.documents == 0
    _settle(deps, kb)

    pages = _pages(deps, kb)
    assert deps.docs.get(doomed).status == "deleted"
    assert "doc-doomed" not in pages and "doomed-thing" not in pages
    assert [r.knowledge_id for r in pages["shared-queue"].source_refs] == [keep]
    _assert_no_dead_links(deps, kb)
    # an ingest op arriving after everything settled: map drops it without extracting
    calls = deps.extractor.calls
    stale = deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_INGEST,
        dedup_key=doomed,
        payload={"knowledge_id": doomed},
    )
    assert map_document(kb.tenant_id, kb.id, doomed, stale.id, deps) == "deleted"
    assert deps.extractor.calls == calls and deps.ops.get(stale.id) is None
    assert deps.docs.get(doomed).status == "deleted"


def test_a_claim_full_of_retracts_pumps_the_lane_again_at_once(env, actors_broker):  # noqa: F811
    from stages.delete import delete_document
    from stages.ingest import pump_ingest_lane
    from wiki.lanes import INGEST, REDUCE, SCOPE_KB
    from wiki.settings import get_settings

    deps, kb = env
    slots = get_settings().ingest_map_parallel
    ids = [_submit(deps, kb, f"gone{i}", f"* Thing {i} (entity): Thing {i} lives here.") for i in range(slots + 2)]
    _settle(deps, kb)
    for kid in ids:
        assert delete_document(kb.tenant_id, kb.id, kid, deps).status == "deleting"
    drain(actors_broker, "wiki")
    # retracts in the ingest lane: a dead letter's requeued, or queued before deletes put them in reduce
    deps.ops.move([op.id for op in deps.ops.peek(REDUCE, SCOPE_KB, kb.id)], INGEST)

    pump_ingest_lane(kb.tenant_id, kb.id, deps)
    assert len(deps.ops.peek(REDUCE, SCOPE_KB, kb.id)) == slots
    # no map will finish to pump the rest: the pump sent itself again, undelayed (it waited for a
    # recovery sweep, 30 s for each 6 documents deleted)
    assert [m.actor_name for m in drain(actors_broker, "wiki")].count("wiki_ingest") == 1
    pump_ingest_lane(kb.tenant_id, kb.id, deps)
    assert deps.ops.peek(INGEST, SCOPE_KB, kb.id) == []
    assert len(deps.ops.peek(REDUCE, SCOPE_KB, kb.id)) == slots + 2
    _settle(deps, kb)
    assert {deps.docs.get(kid).status for kid in ids} == {"deleted"}
    _assert_no_dead_links(deps, kb)


def test_tombstone_alone_keeps_a_document_out(env):
    from repos.coordination import tombstone_key
    from stages.ingest import pump_ingest_lane
    from stages.map import map_document
    from wiki.lanes import INGEST, SCOPE_KB

    deps, kb = env
    kid = _submit(deps, kb, "ghost", "* Ghost Page (entity): The ghost page must never be written.")
    deps.redis.set(tombstone_key(deps.settings.key_prefix, kb.id, kid), "1", ex=60)
    pump_ingest_lane(kb.tenant_id, kb.id, deps)
    [op] = deps.ops.peek(INGEST, SCOPE_KB, kb.id)
    assert map_document(kb.tenant_id, kb.id, kid, op.id, deps) == "deleted"
    assert deps.extractor.calls == 0
    _settle(deps, kb)
    assert not any(p.page_type != "index" for p in _pages(deps, kb).values())


def test_resubmitting_a_deleted_source_makes_a_new_document(env):
    from stages.delete import delete_document

    deps, kb = env
    old = _submit(deps, kb, "phoenix", "* Phoenix Bird (entity): The phoenix bird rises again.")
    _settle(deps, kb)
    delete_document(kb.tenant_id, kb.id, old, deps)
    new = _submit(deps, kb, "phoenix", "* Phoenix Bird (entity): The phoenix bird rises again.")
    assert new != old
    _settle(deps, kb)
    assert deps.docs.get(old).status == "deleted" and deps.docs.get(new).status == "done"
    pages = _pages(deps, kb)
    assert [r.knowledge_id for r in pages["phoenix-bird"].source_refs] == [new]
    assert [r.knowledge_id for r in pages["doc-phoenix"].source_refs] == [new]


def test_unchanged_content_costs_no_extraction_and_no_rewrite(env):
    from wiki.lanes import INGEST, OP_INGEST, SCOPE_KB

    deps, kb = env
    kid = _submit(deps, kb, "steady", "* Steady State (concept): The steady state never changes.")
    _settle(deps, kb)
    assert deps.extractor.calls == 1
    versions = {slug: p.version for slug, p in _pages(deps, kb).items() if slug != "index"}

    assert _submit(deps, kb, "steady", "* Steady State (concept): The steady state never changes.") == kid
    # even an ingest op for the same content (a producer re-sending it) hits the extraction cache
    deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_INGEST,
        dedup_key=kid,
        payload={"knowledge_id": kid},
    )
    _settle(deps, kb)
    assert deps.extractor.calls == 1
    assert {slug: p.version for slug, p in _pages(deps, kb).items() if slug != "index"} == versions


def test_a_new_extractor_version_rebuilds_unchanged_documents(env):
    from stages.ingest import submit_document

    deps, kb = env
    content = "upgrade is a test document about the pipeline.\n* Steady State (concept): It never changes."
    first = submit_document(
        deps,
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title="upgrade",
        content=content,
        source_uri="test/upgrade.md",
    )
    _settle(deps, kb)
    assert first.status == "queued" and deps.extractor.calls == 1

    deps.extractor.name = "scripted-v2"  # an upgraded extractor: the cached extraction is not its own
    again = submit_document(
        deps,
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title="upgrade",
        content=content,
        source_uri="test/upgrade.md",
    )
    assert again.status == "queued" and again.knowledge_id == first.knowledge_id
    _settle(deps, kb)
    assert deps.extractor.calls == 2 and deps.docs.get(first.knowledge_id).status == "done"
    third = submit_document(
        deps,
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title="upgrade",
        content=content,
        source_uri="test/upgrade.md",
    )
    assert third.status == "unchanged"


def test_changed_content_replaces_the_contribution_and_keeps_slugs(env):
    deps, kb = env
    other = _submit(deps, kb, "other", "* Cache Layer (concept): Other documents put a cache layer in front.")
    kid = _submit(
        deps,
        kb,
        "mutable",
        "* Cache Layer (concept): The first version caches everything forever.",
        "* Old Feature (entity): The old feature is removed in version two.",
    )
    _settle(deps, kb)
    before = _pages(deps, kb)
    assert "old-feature" in before

    assert (
        _submit(
            deps,
            kb,
            "mutable",
            "* Cache Layer (concept): The second version caches for one hour.",
            "* New Feature (entity): The new feature arrives in version two.",
        )
        == kid
    )
    _settle(deps, kb)
    assert deps.extractor.calls == 3
    pages = _pages(deps, kb)
    cache = pages["cache-layer"]
    assert "caches everything forever" not in cache.content
    assert "caches for one hour" in cache.content and "put a cache layer in front" in cache.content
    assert {r.knowledge_id for r in cache.source_refs} == {kid, other}
    assert "old-feature" not in pages and "new-feature" in pages
    assert "doc-mutable" in pages and pages["doc-mutable"].id == before["doc-mutable"].id
    assert cache.id == before["cache-layer"].id  # the same row: the page kept its slug
    _assert_no_dead_links(deps, kb)
    # only the current version stays in the extraction cache
    doc = deps.docs.get(kid)
    assert deps.extractions.get(kb.id, kid, doc.content_hash, deps.extractor.name) is not None


def test_retract_of_a_quoted_or_an_unquoted_source_leaves_no_fact_of_the_document(env):
    from stages.delete import delete_document
    from wiki.coverage import MAX_QUOTES
    from wiki.dedup import name_key

    deps, kb = env
    n = MAX_QUOTES + 3
    ids = [
        _submit(deps, kb, f"doc{i:02d}", f"* Popular Topic (concept): Document {i:02d} mentions the popular topic.")
        for i in range(n)
    ]
    _settle(deps, kb)
    page = deps.pages.get(kb.id, "popular-topic")
    key = name_key("Popular Topic")
    # the page quotes MAX_QUOTES of its documents; the mention index counts every one
    assert len(page.facts) == MAX_QUOTES and {r.knowledge_id for r in page.source_refs} == set(page.facts)
    assert deps.mentions.doc_counts(kb.id, [key]) == {key: n}
    with_fact = next(k for k in ids if k in page.facts)
    without_fact = next(k for k in ids if k not in page.facts)
    for kid in (with_fact, without_fact):
        delete_document(kb.tenant_id, kb.id, kid, deps)
    _settle(deps, kb)
    page = deps.pages.get(kb.id, "popular-topic")
    assert deps.mentions.doc_counts(kb.id, [key]) == {key: n - 2}
    assert len(page.facts) == MAX_QUOTES and set(page.facts) <= set(ids) - {with_fact, without_fact}
    gone = {deps.docs.get(k).title for k in (with_fact, without_fact)}
    assert not any(f"Document {t[3:]} mentions" in page.content for t in gone)
    listed = {kid for _, _, kid in deps.mentions.mentioned_in(kb.id, key, limit=100)}
    assert listed == set(ids) - {with_fact, without_fact}
    _assert_no_dead_links(deps, kb)


def test_deleting_a_kb_removes_its_lanes_and_pages_and_handlers_succeed(env):
    from actors.crosslink import wiki_crosslink
    from actors.index import wiki_rebuild_index
    from actors.ingest import wiki_ingest
    from actors.reduce import wiki_reduce
    from stages.crosslink import run_crosslink
    from stages.delete import delete_knowledge_base
    from stages.index import rebuild_index
    from stages.ingest import pump_ingest_lane
    from stages.reduce import run_reduce_batch
    from wiki.lanes import FINALIZE, INGEST, OP_INGEST, OP_TOUCH, REDUCE, SCOPE_KB

    deps, kb = env
    _submit(deps, kb, "first", "* Doomed Base (concept): The whole knowledge base goes away.")
    _settle(deps, kb)
    _submit(deps, kb, "second", "* Pending Work (concept): This document is still queued when the KB goes.")
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id)
    with pytest.raises(ValueError):  # a scoped delete with an empty key never means "everything"
        deps.ops.delete_by_dedup_key(INGEST, SCOPE_KB, kb.id, "")
    # a live KB of another tenant is refused, and its work is left alone
    assert pump_ingest_lane(kb.tenant_id + 1, kb.id, deps) == 0
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id)

    assert deps.pages.delete(kb.id, "doomed-base")  # a deleted page's row stays until the KB goes
    live = sum(deps.pages.counts_by_type(kb.id).values())  # what `status` shows
    result = delete_knowledge_base(kb.tenant_id, kb.id, deps)
    assert result.deleted and result.pages == live >= 2 and result.ops >= 1
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id) == {}
    assert list(deps.pages.iter_pages(kb.id)) == []
    assert deps.kbs.get(kb.id).deleted_at is not None
    assert deps.kbs.get_by_name(kb.tenant_id, kb.name) is None
    assert not delete_knowledge_base(kb.tenant_id, kb.id, deps).deleted

    # rows that raced the deletion are drained by whichever handler finds them, without raising
    for lane in (INGEST, REDUCE, FINALIZE):
        deps.ops.enqueue(
            tenant_id=kb.tenant_id,
            task_type=lane,
            scope=SCOPE_KB,
            scope_id=kb.id,
            op=OP_TOUCH if lane == FINALIZE else OP_INGEST,
            dedup_key="" if lane == FINALIZE else "x",
            payload={"slugs": ["doomed-base"]} if lane == FINALIZE else {},
        )
    assert pump_ingest_lane(kb.tenant_id, kb.id, deps) == 0
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id) == {}
    assert run_reduce_batch(kb.tenant_id, kb.id, deps).documents == 0
    assert run_crosslink(kb.tenant_id, kb.id, deps) is None
    assert rebuild_index(kb.tenant_id, kb.id, deps) is None
    assert list(deps.pages.iter_pages(kb.id)) == []
    # and the actors themselves return normally (no retry, no dead letter)
    from stages.deps import set_deps

    set_deps(deps)
    try:
        args = {"tenant_id": kb.tenant_id, "knowledge_base_id": kb.id}
        for actor in (wiki_ingest, wiki_reduce, wiki_crosslink, wiki_rebuild_index):
            actor(**args)
    finally:
        set_deps(None)


def test_cli_deletes_by_source_uri_and_deletes_a_kb_only_with_yes(env):
    from click.testing import CliRunner

    from kbwiki.cli import main

    deps, kb = env
    kid = _submit(deps, kb, "clidoc", "* Cli Thing (entity): The command line deletes this document.")
    _settle(deps, kb)
    assert "cli-thing" in _pages(deps, kb)
    runner = CliRunner()
    result = runner.invoke(main, ["delete", "--kb", kb.name, "test/clidoc.md", "no/such.md"])
    assert result.exit_code == 1  # one of the two was not found
    assert "Error: 1 of 2 documents not found" in result.output
    assert f"deleting {kid}" in result.output and "unknown no/such.md" in result.output
    assert deps.docs.get(kid).status == "deleting"
    _settle(deps, kb)
    assert "cli-thing" not in _pages(deps, kb) and deps.docs.get(kid).status == "deleted"

    result = runner.invoke(main, ["delete-kb", "--kb", kb.name])
    assert result.exit_code == 1 and "--yes" in result.output
    assert deps.kbs.get(kb.id).deleted_at is None
    result = runner.invoke(main, ["delete-kb", "--kb", kb.name, "--yes"])
    assert result.exit_code == 0, result.output
    # the index page is all that was left: "1 page", not "1 pages"
    assert result.output == f"deleted {kb.name}: 1 page, 0 documents, 0 queued ops\n"
    assert deps.kbs.get(kb.id).deleted_at is not None and list(deps.pages.iter_pages(kb.id)) == []
