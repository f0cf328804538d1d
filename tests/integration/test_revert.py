"""Reverting a page (``stages.revert``) on real PostgreSQL, through real reduce batches: who wrote
each version, what a revert restores and refuses, the locks it waits for, and the lint check that
reports a revert an ingest wrote over."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from stages.deps import build_deps
from stages.lint import run_lint
from stages.reduce import run_reduce_batch
from stages.revert import revert_page
from tests.support.lanes import mapped_document
from wiki.errors import RevertRefused, UnknownKnowledgeBase, UnknownPage
from wiki.extract.offline import OfflineExtractor
from wiki.lanes import FINALIZE, REDUCE, SCOPE_KB
from wiki.models import ExtractedItem, Extraction, Page, SourceRef

DEADLINE_S = 30


@pytest.fixture()
def deps(settings, clean_db):
    return build_deps(settings, pool=clean_db, extractor=OfflineExtractor())


@pytest.fixture()
def kb(deps):
    return deps.kbs.get_or_create(1, f"kb-{uuid.uuid4().hex[:6]}")


def _ingest(deps, kb, title: str, sentence: str) -> str:
    """Store a document naming the entity "Widget", map it (its extraction) and reduce its batch."""
    item = ExtractedItem(name="Widget", kind="entity", description=sentence, evidence=[sentence])
    return mapped_document(deps, kb, title, Extraction(summary=f"{title}.", body=f"{title} body.", items=[item]))


def _reduce(deps, kb) -> None:
    result = run_reduce_batch(kb.tenant_id, kb.id, deps)
    assert result.failed == 0


def _revert(deps, kb, slug: str, version: int, tenant: int = 1):
    return revert_page(tenant, kb.id, slug, version, deps)


def _lint(deps, kb):
    return run_lint(
        kb.tenant_id,
        kb.id,
        deps,
    )


def test_reduce_labels_its_writes_and_lint_reports_a_revert_an_ingest_wrote_over(deps, kb):
    first = _ingest(deps, kb, "First", "Widget is a small part that holds the frame.")
    _reduce(deps, kb)
    second = _ingest(deps, kb, "Second", "Widget is a part the second guide describes at length.")
    third = _ingest(deps, kb, "Third", "Widget is a part the third guide names twice.")
    _reduce(deps, kb)  # one batch, two documents change the page

    history = deps.revisions.history(1, kb.id, "widget")
    assert [h.version for h in history] == [2, 1]
    assert history[1].written_by == f"document:{first}"  # one document made it
    assert history[0].written_by.startswith("batch:")  # two documents of one batch changed it
    summary = deps.pages.get(kb.id, "doc-second")
    assert deps.revisions.history(1, kb.id, "doc-second")[0].written_by == f"document:{second}"
    old = deps.pages.get(kb.id, "widget")

    reverted = _revert(deps, kb, "widget", 1)
    assert (reverted.version, reverted.new_version) == (1, 3)
    page = deps.pages.get(kb.id, "widget")
    v1 = deps.revisions.since(1, kb.id, page.id, 1)[-1]
    assert page.content == v1.content and "holds the frame" in page.content
    assert [r.knowledge_id for r in page.source_refs] == [first]  # version 1's sources
    assert (page.title, page.facts) == (old.title, old.facts)  # the rest stays the current page's
    assert deps.revisions.history(1, kb.id, "widget")[0].written_by == "revert:1"
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) >= 1  # queued for cross-linking
    assert _lint(deps, kb).counts["overwritten_revert"] == 0  # the revert stands

    _ingest(deps, kb, "Fourth", "Widget is a part the fourth guide adds.")
    _reduce(deps, kb)
    report = _lint(deps, kb)
    assert report.counts["overwritten_revert"] == 1
    issue = report.samples["overwritten_revert"][0]
    assert issue.page == "widget" and issue.severity == "warning" and not issue.fixable
    assert "version 3 reverted it to version 1" in issue.description and "version 4" in issue.description
    assert summary is not None and third

    # reverting again stands until the next ingest: no report
    _revert(deps, kb, "widget", 1)
    assert _lint(deps, kb).counts["overwritten_revert"] == 0


def test_deleting_a_document_deletes_the_kept_versions_that_cite_it(deps, kb):
    _ingest(deps, kb, "First", "Widget is a small part that holds the frame.")
    _reduce(deps, kb)
    second = _ingest(deps, kb, "Second", "Widget is a part the second guide describes at length.")
    _reduce(deps, kb)
    _ingest(deps, kb, "Third", "Widget is a part the third guide names twice.")
    _reduce(deps, kb)
    assert [h.version for h in deps.revisions.history(1, kb.id, "widget")] == [3, 2, 1]

    deps.docs.mark_deleting(kb.id, second)
    deps.ops.enqueue(
        tenant_id=kb.tenant_id, task_type=REDUCE, scope=SCOPE_KB, scope_id=kb.id, op="retract", dedup_key=second
    )
    _reduce(deps, kb)

    page = deps.pages.get(kb.id, "widget")
    assert second not in {r.knowledge_id for r in page.source_refs}
    # versions 2 and 3 cited the deleted document (3 was replaced by this very batch): gone
    assert [h.version for h in deps.revisions.history(1, kb.id, "widget")] == [4, 1]
    kept = deps.revisions.since(1, kb.id, page.id, 1)
    assert "second guide" not in kept[0].content and [r.version for r in kept] == [1]
    assert "holds the frame" in page.content


def _saved(deps, kb, content: str, refs: list[SourceRef], slug: str = "gadget") -> Page:
    return deps.pages.save(
        Page(
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            slug=slug,
            title=slug.title(),
            page_type="entity",
            content=content,
            source_refs=refs,
        )
    )


def _doc_ref(deps, kb, title: str) -> SourceRef:
    doc, _ = deps.docs.upsert(kb, title=title, source_uri=f"{title}.md", content=f"{title} text " * 20)
    return SourceRef(knowledge_id=doc.id, title=title)


def test_a_revert_restores_links_and_refuses_what_it_cannot_do_writing_nothing(deps, kb):
    a, b = _doc_ref(deps, kb, "A"), _doc_ref(deps, kb, "B")
    _saved(deps, kb, "Gadget links [[alpha|Alpha]].\n", [a])
    _saved(deps, kb, "Gadget links [[beta|Beta]].\n", [a, b])
    _saved(deps, kb, "Gadget links [[beta|Beta]] still.\n", [a, b])  # version 3

    def unchanged():
        page = deps.pages.get(kb.id, "gadget")
        assert (page.version, page.content) == (3, "Gadget links [[beta|Beta]] still.\n")
        assert [h.version for h in deps.revisions.history(1, kb.id, "gadget")] == [3, 2, 1]

    with pytest.raises(UnknownPage, match="no live page 'nothing'"):
        _revert(deps, kb, "nothing", 1)
    with pytest.raises(UnknownPage, match=r"no kept version 7; its kept versions are 3 \(current\), 2, 1"):
        _revert(deps, kb, "gadget", 7)
    with pytest.raises(RevertRefused, match="version 3 is the current version"):
        _revert(deps, kb, "gadget", 3)
    with pytest.raises(UnknownKnowledgeBase):
        _revert(deps, kb, "gadget", 1, tenant=2)  # another tenant's KB
    deps.docs.mark_deleting(kb.id, a.knowledge_id)
    with pytest.raises(RevertRefused, match=r"cites 1 document deleted since \('A'\)"):
        _revert(deps, kb, "gadget", 1)
    unchanged()
    deps.docs.mark_deleting(kb.id, b.knowledge_id)  # every version cites a deleted document now
    with pytest.raises(RevertRefused, match="cites 2 documents"):
        _revert(deps, kb, "gadget", 2)
    unchanged()


def test_a_revert_rewrites_out_links_and_a_second_one_is_refused(deps, kb):
    a = _doc_ref(deps, kb, "A")
    _saved(deps, kb, "Gadget links [[alpha|Alpha]].\n", [a])
    _saved(deps, kb, "Gadget links [[beta|Beta]].\n", [a])

    assert _revert(deps, kb, "gadget", 1).new_version == 3
    with deps.pool.connection() as conn:
        links = conn.execute(
            "SELECT to_slug FROM wiki_links WHERE knowledge_base_id = %s AND from_slug = 'gadget'", (kb.id,)
        ).fetchall()
    assert [r["to_slug"] for r in links] == ["alpha"]
    with pytest.raises(RevertRefused, match="already has the content and sources of version 1"):
        _revert(deps, kb, "gadget", 1)
    assert [h.version for h in deps.revisions.history(1, kb.id, "gadget")] == [3, 2, 1]


def _waiting_for_a_lock(pool, application: str) -> bool:
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND state = 'active'"
            " AND query LIKE %s",
            (f"%{application}%",),
        ).fetchone()
    return row["n"] > 0


def test_a_revert_waits_for_a_writer_holding_the_page_and_keeps_its_version(deps, kb):
    a = _doc_ref(deps, kb, "A")
    _saved(deps, kb, "One.\n", [a])
    _saved(deps, kb, "Two.\n", [a])
    outcome = {}

    with deps.pool.connection() as writer:  # a writer (a reduce batch, a cross-link run) mid-transaction
        deps.pages.lock_link_graph(kb.id, writer, shared=True)
        held = deps.pages.get(kb.id, "gadget", conn=writer, for_update=True)
        thread = threading.Thread(target=lambda: outcome.update(done=_revert(deps, kb, "gadget", 1)))
        thread.start()
        deadline = time.monotonic() + DEADLINE_S
        while not _waiting_for_a_lock(deps.pool, "FOR UPDATE"):  # the revert is blocked on the row
            assert time.monotonic() < deadline and thread.is_alive()
            time.sleep(0.05)
        deps.pages.save(held.model_copy(update={"content": "Three, by the writer.\n"}), conn=writer)
    thread.join(DEADLINE_S)

    assert outcome["done"].new_version == 4  # after the writer's version 3
    history = deps.revisions.history(1, kb.id, "gadget")
    assert [h.version for h in history] == [4, 3, 2, 1]
    page = deps.pages.get(kb.id, "gadget")
    assert page.content == "One.\n"
    assert deps.revisions.since(1, kb.id, page.id, 3)[0].content == "Three, by the writer.\n"


def test_lint_mending_stale_sources_keeps_no_version_citing_them(deps, kb):
    a, b = _doc_ref(deps, kb, "A"), _doc_ref(deps, kb, "B")
    _saved(deps, kb, "Gadget, as A says, and a long enough sentence for lint to keep it.\n", [a])
    _saved(deps, kb, "Gadget, as A and B say, and a long enough sentence for lint to keep it.\n", [a, b])
    deps.docs.mark_deleting(kb.id, b.knowledge_id)  # deleted, its retract not run yet: a stale source

    report = run_lint(
        kb.tenant_id,
        kb.id,
        deps,
        fix=True,
    )

    assert report.fixed["stale_source"] == 1
    page = deps.pages.get(kb.id, "gadget")
    assert [r.knowledge_id for r in page.source_refs] == [a.knowledge_id]
    history = deps.revisions.history(1, kb.id, "gadget")
    assert [(h.version, h.written_by) for h in history] == [(3, "lint"), (1, "")]  # version 2 cited B


def test_a_version_quoting_a_document_changed_since_is_not_reverted_to(deps, kb):
    # the new-user trial: a sentence edited out of a document came back by a revert, attributed
    # to the new text
    def widget(sentence: str) -> Extraction:
        item = ExtractedItem(name="Widget", kind="entity", description=sentence, evidence=[sentence])
        return Extraction(summary="Guide.", body="Guide body.", items=[item])

    mapped_document(deps, kb, "Guide", widget("Widget is a secret part."), content="Widget is a secret part. " * 20)
    _reduce(deps, kb)
    mapped_document(deps, kb, "Guide", widget("Widget is a part."), content="Widget is a part. " * 20)
    _reduce(deps, kb)
    page = deps.pages.get(kb.id, "widget")
    assert page.version == 2 and "secret" not in page.content
    with pytest.raises(RevertRefused, match=r"quotes 1 document changed since it was written \('Guide'\)"):
        _revert(deps, kb, "widget", 1)
    assert deps.pages.get(kb.id, "widget").version == 2  # nothing written
