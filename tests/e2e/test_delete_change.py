"""Deleting and changing real documents through the running pipeline leaves the wiki a fresh
ingest of the final documents would build: the same page slugs, citing the same documents."""

from __future__ import annotations

import uuid

import pytest

from kbwiki.corpus import CorpusDoc
from tests.e2e.conftest import wait_until
from tests.support.corpus import shipped_docs
from tests.support.pipeline import submit_all
from wiki.links import parse_links
from wiki.slugs import summary_slug

pytestmark = pytest.mark.e2e

N_DOCS, N_DELETED, N_EDITED = 49, 10, 5


def _edited(doc: CorpusDoc) -> CorpusDoc:
    """The document with its last third of paragraphs cut and one new paragraph: items come and go."""
    paragraphs = doc.text.split("\n\n")
    keep = paragraphs[: max(2, len(paragraphs) * 2 // 3)]
    extra = f"Revised notes on {doc.title}: the Revision Tracker keeps every edited module current."
    return CorpusDoc(doc.title, doc.source_uri, "\n\n".join([*keep, extra]))


def _submit_all(deps, kb, docs) -> dict[str, str]:
    return dict(zip((doc.source_uri for doc in docs), submit_all(deps, kb, docs), strict=True))


def _wait_settled(deps, kb, what: str) -> None:
    from kbwiki.ingest import lane_rows

    def settled():
        counts = deps.docs.count_by_status(kb.id)
        busy = sum(counts.get(s, 0) for s in ("pending", "mapped", "deleting"))
        if busy or lane_rows(deps, kb.id):
            return False
        return deps.pages.link_stats(kb.id)["dead_links"] == 0 and _index_current(deps, kb)

    wait_until(settled, 300, what)


def _index_current(deps, kb) -> bool:
    """The index lists exactly the live summaries (the first 200 A-Z, as it is built)."""
    index = deps.pages.get(kb.id, "index")
    if index is None:
        return False
    listed = {link.slug for link in parse_links(index.content.split("## Documents")[-1])}
    return listed == {p.slug for p in deps.pages.first_by_title(kb.id, "summary", 200)}


def _wiki(deps, kb) -> dict[str, tuple[str, ...]]:
    """slug -> the titles (unique module names) of the documents the page cites."""
    return {p.slug: tuple(sorted(r.title for r in p.source_refs)) for p in deps.pages.iter_pages(kb.id)}


def _differences(deps, kb, fresh, changed, expected) -> str:
    """Each page the two wikis disagree on: its title, aliases and cited documents in each."""
    lines = []
    for slug in sorted(
        changed.keys() ^ expected.keys() | {s for s in changed.keys() & expected.keys() if changed[s] != expected[s]}
    ):
        mine, theirs = deps.pages.get(kb.id, slug), deps.pages.get(fresh.id, slug)
        lines.append(
            f"{slug}: after changes {mine and (mine.title, mine.aliases, changed[slug])};"
            f" fresh {theirs and (theirs.title, theirs.aliases, expected[slug])}"
        )
    return "pages differ from a fresh ingest:\n" + "\n".join(lines)


def test_delete_and_change_equal_a_fresh_ingest_of_the_final_documents(deps, worker):
    from stages.delete import delete_document

    # the whole corpus: pages must earn their place, so its first 30 modules shared one page only
    docs = shipped_docs()[:N_DOCS]
    assert len(docs) == N_DOCS
    deleted = docs[1::3][:N_DELETED]
    kept = [d for d in docs if d not in deleted]
    edited = {d.source_uri: _edited(d) for d in kept[:N_EDITED]}
    final = [edited.get(d.source_uri, d) for d in kept]

    kb = deps.kbs.get_or_create(1, f"e2e-change-{uuid.uuid4().hex[:6]}")
    ids = _submit_all(deps, kb, docs)
    _wait_settled(deps, kb, f"{N_DOCS} documents reduced")
    before = _wiki(deps, kb)
    # shared pages exist, and a delete rewrites one of them rather than deleting it
    shared = {slug: refs for slug, refs in before.items() if len(refs) > 1}
    assert len(shared) >= 3, shared
    gone = {d.title for d in deleted}
    assert any(gone & set(refs) and set(refs) - gone for refs in shared.values()), shared

    for doc in deleted:
        assert delete_document(kb.tenant_id, kb.id, ids[doc.source_uri], deps).status == "deleting"
    # an edit is stored under the document's id
    assert _submit_all(deps, kb, list(edited.values())) == {uri: ids[uri] for uri in edited}
    _wait_settled(deps, kb, "deletes and edits applied")

    fresh = deps.kbs.get_or_create(1, f"e2e-fresh-{uuid.uuid4().hex[:6]}")
    _submit_all(deps, fresh, final)
    _wait_settled(deps, fresh, f"the final {len(final)} documents reduced in a fresh KB")

    changed, expected = _wiki(deps, kb), _wiki(deps, fresh)
    assert not any(gone & set(refs) for refs in changed.values())
    assert changed == expected, _differences(deps, kb, fresh, changed, expected)
    # the edits and deletes did change the wiki, and every edited document kept its summary page
    assert before.keys() - changed.keys() and before != changed
    assert all(summary_slug(d.title) in changed for d in edited.values())
    assert deps.pages.link_stats(kb.id)["dead_links"] == 0
