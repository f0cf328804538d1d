"""A document whose extraction always raises: one ``wiki:ingest`` dead letter, the rest of its batches written."""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.e2e.conftest import wait_until
from tests.support.corpus import shipped_docs
from wiki.models import Extraction

pytestmark = pytest.mark.e2e

TITLES = [
    "wiki.links",
    "wiki.slugs",
    "repos.pages",
    "repos.task_queue",
    "wiki.text",
    "actors.reduce",
    "kbwiki.export",
    "wiki.dedup",
    "actors.delete",
]
POISON = "wiki.text"


class PoisonExtractor:
    """The real extractor, except that one title always raises (not ExtractionError: that is a skip)."""

    def __init__(self, inner, poison_title: str) -> None:
        self.inner = inner
        self.name = inner.name  # same cache key: the healthy documents behave exactly as without it
        self.poison_title = poison_title
        self.poison_calls = 0
        self._lock = threading.Lock()
        self.broken = True

    def extract(self, title: str, text: str) -> Extraction:
        if self.broken and title == self.poison_title:
            with self._lock:
                self.poison_calls += 1
            raise RuntimeError(f"extractor cannot cope with {title!r}")
        return self.inner.extract(title, text)


@pytest.fixture()
def poisoned(deps):
    """The process-wide Deps swapped for one whose extractor raises on POISON; restored afterwards."""
    from stages.deps import build_deps, set_deps

    extractor = PoisonExtractor(deps.extractor, POISON)
    set_deps(build_deps(deps.settings, pool=deps.pool, extractor=extractor))
    yield extractor
    set_deps(deps)


def test_poison_document_is_dead_lettered_once_and_the_others_are_written(deps, poisoned, worker):
    from kbwiki.ingest import lane_rows
    from stages.ingest import submit_document
    from stages.requeue import requeue_dead_letter
    from wiki.lanes import INGEST, SCOPE_KB

    kb = deps.kbs.get_or_create(1, f"poison-{uuid.uuid4().hex[:6]}")
    docs = {d.title: d for d in shipped_docs() if d.title in TITLES}
    assert set(docs) == set(TITLES)
    ids = {}
    for title in TITLES:  # the poison sits in the middle: it shares pump claims and batches with the others
        doc = docs[title]
        result = submit_document(
            deps, tenant_id=1, knowledge_base_id=kb.id, title=title, content=doc.text, source_uri=doc.source_uri
        )
        assert result.status == "queued"
        ids[title] = result.knowledge_id
    poison_id = ids[POISON]
    healthy = [kid for title, kid in ids.items() if title != POISON]

    def settled():
        counts = deps.docs.count_by_status(kb.id)
        return lane_rows(deps, kb.id) == 0 and counts.get("done", 0) == len(healthy) and counts.get("failed", 0) == 1

    wait_until(settled, 120, "the healthy documents written and the poison failed")

    budget = deps.settings.wiki_max_fail_retries
    assert budget == 5
    [letter] = deps.dead_letters.list(tenant_id=None, scope=SCOPE_KB, scope_id=kb.id)
    assert (letter.task_type, letter.scope, letter.scope_id, letter.related_id, letter.tenant_id) == (
        INGEST,
        "knowledge_base",
        kb.id,
        poison_id,
        1,
    )
    assert letter.fail_count == budget + 1 == poisoned.poison_calls
    assert (letter.payload["op"], letter.payload["dedup_key"]) == ("ingest", poison_id)
    assert f"RuntimeError: extractor cannot cope with {POISON!r}" in letter.last_error

    poison_doc = deps.docs.get(poison_id)
    assert poison_doc.status == "failed"
    assert poison_doc.error.startswith(f"extraction failed {budget + 1} times: RuntimeError(")
    assert deps.pages.slugs_by_source(kb.id, poison_id) == []
    for kid in healthy:
        assert deps.docs.get(kid).status == "done"
        pages = deps.pages.lite_by_slugs(kb.id, deps.pages.slugs_by_source(kb.id, kid))
        assert "summary" in {p.page_type for p in pages.values()}, kid
    assert deps.pages.counts_by_type(kb.id)["summary"] == len(healthy)

    # Once the extractor is fixed, requeueing the letter finishes the document with no other step.
    poisoned.broken = False
    assert requeue_dead_letter(letter.id, deps, tenant_id=kb.tenant_id) == "reinserted"
    assert deps.dead_letters.get(letter.id, tenant_id=None) is None
    wait_until(
        lambda: deps.docs.get(poison_id).status == "done" and lane_rows(deps, kb.id) == 0,
        60,
        "the requeued document written",
    )
    assert deps.pages.counts_by_type(kb.id)["summary"] == len(TITLES)
    assert deps.dead_letters.count(tenant_id=None, scope=SCOPE_KB, scope_id=kb.id) == 0
    assert poisoned.poison_calls == budget + 1
