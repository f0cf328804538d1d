"""The same documents make the same wiki, whatever the order, the batch size and the history.

Thirty short articles (``tests/fixtures/convergence/``) name one another's subjects in every
form the pipeline has to reconcile: a title inside a longer one ("Hubble" / "Hubble Space
Telescope"), case variants ("Photons" / "photons" / "PHOTONS"), a concept named "Index", names
that are an entity in one article and a concept in another. Every stage runs for real (the
offline extractor, reduce, back-link, cross-link, index) in the test's thread until every lane
is empty; two KBs are then compared page by page: type, title, aliases, content, cited documents
and out-links (the index page names its KB, and these KBs have names of their own). The exported
vault of the module references under ``tests/data/corpus`` is compared byte for byte, the index
page and every file's front matter included.
"""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.support.pipeline import settle
from wiki.links import out_link_slugs

CORPUS = Path(__file__).parent.parent / "fixtures" / "convergence"
REFERENCE = Path(__file__).parent.parent / "data" / "corpus"


def _corpus() -> list[tuple[str, str, str]]:
    """(title, source uri, text) of every fixture article, in file-name order."""
    out = []
    for path in sorted(CORPUS.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        out.append((text.splitlines()[0].removeprefix("# ").strip(), f"convergence/{path.name}", text))
    return out


@pytest.fixture()
def make_kb(actors_broker, pool):  # noqa: F811
    """A factory of (deps, fresh KB with the given reduce batch size), all on the offline extractor."""
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import get_settings

    made = []

    def make(batch_size: int):
        deps = build_deps(get_settings(), pool, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(1, f"converge-{uuid.uuid4().hex[:8]}")
        deps.kbs.set_wiki_config(kb.id, {"ingest_batch_size": batch_size})
        made.append(deps)
        return deps, deps.kbs.get(kb.id)

    yield make
    for deps in made:
        deps.redis.close()


def _submit(deps, kb, docs) -> dict[str, str]:
    """Submit ``docs`` in the given order; returns {source uri: knowledge id}."""
    from stages.ingest import submit_document

    ids = {}
    for title, uri, text in docs:
        result = submit_document(
            deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=title, content=text, source_uri=uri
        )
        assert result.status == "queued", (title, result)
        ids[uri] = result.knowledge_id
    return ids


def _ingest(deps, kb, docs) -> dict[str, str]:
    ids = _submit(deps, kb, docs)
    settle(deps, kb)
    return ids


def _wiki(deps, kb) -> dict[str, tuple]:
    """slug -> (type, title, aliases, content, cited document titles, out-links): everything but ids."""
    return {
        p.slug: (
            p.page_type,
            p.title,
            tuple(p.aliases),
            p.content,
            tuple(sorted(r.title for r in p.source_refs)),
            tuple(sorted(out_link_slugs(p.content))),
        )
        for p in deps.pages.iter_pages(kb.id)
        if p.page_type != "index"
    }


def _assert_same(left: dict, right: dict) -> None:
    """Equal wikis; on failure, the first few pages that differ, field by field."""
    fields = ("type", "title", "aliases", "content", "sources", "links")
    diffs = [f"only in one: {sorted(left.keys() ^ right.keys())[:20]}"] if left.keys() ^ right.keys() else []
    for slug in sorted(left.keys() & right.keys()):
        for name, a, b in zip(fields, left[slug], right[slug]):
            if a != b:
                diffs.append(f"{slug}.{name}:\n  {a!r}\n  {b!r}")
    assert not diffs, f"{len(diffs)} differences:\n" + "\n".join(diffs[:12])


def _link_rows(deps, kb) -> int:
    return deps.pages.link_stats(kb.id)["links"]


def test_two_orders_and_two_batch_sizes_give_the_same_wiki(make_kb):
    docs = _corpus()
    assert len(docs) == 30
    shuffled = docs[:]
    random.Random(14).shuffle(shuffled)

    wikis = []
    for batch_size, order in ((50, docs), (3, shuffled), (7, docs[::-1])):
        deps, kb = make_kb(batch_size)
        _ingest(deps, kb, order)
        assert deps.pages.link_stats(kb.id)["dead_links"] == 0
        wikis.append((deps, kb, _wiki(deps, kb)))

    (deps0, kb0, first), *others = wikis
    counts = deps0.pages.counts_by_type(kb0.id)
    # pages must earn their place (docs/decisions.md): 30 module docs define about 25 things
    assert counts["summary"] == 30 and counts.get("entity", 0) + counts.get("concept", 0) >= 20
    assert sum(len(page[5]) for page in first.values()) > 50  # a linked wiki, not an empty one
    for deps, kb, wiki in others:
        _assert_same(first, wiki)
        assert _link_rows(deps, kb) == _link_rows(deps0, kb0)


def test_delete_ten_and_edit_five_equals_a_fresh_ingest_of_the_final_twenty(make_kb):
    from stages.delete import delete_document

    docs = _corpus()
    deleted, edited, kept = docs[:10], docs[10:15], docs[15:]
    extra = "\n\nRevised: the Rubin Observatory and Hubble both observe photons.\n\n"
    revised = [(title, uri, text.replace("\n\n", extra, 1)) for title, uri, text in edited]

    deps, kb = make_kb(4)
    ids = _ingest(deps, kb, docs)
    for _, uri, _ in deleted:
        delete_document(kb.tenant_id, kb.id, ids[uri], deps)
    _submit(deps, kb, revised)
    settle(deps, kb)

    fresh_deps, fresh = make_kb(4)
    _ingest(fresh_deps, fresh, [*revised, *kept])

    assert deps.pages.counts_by_type(kb.id)["summary"] == 20
    assert deps.pages.link_stats(kb.id)["dead_links"] == 0
    _assert_same(_wiki(fresh_deps, fresh), _wiki(deps, kb))
    assert _link_rows(deps, kb) == _link_rows(fresh_deps, fresh)


def test_documents_sharing_a_title_get_the_same_slugs_and_source_lists_in_every_ingest(make_kb):
    # two files titled alike: the second one's summary slug is suffixed by its source, not by
    # its knowledge id, and a page lists its sources by title, so two ingests give one wiki
    shared = [
        ("TODO list", f"todo/{area}.md", f"# TODO list\n\nThe {area} TODO list tracks open Photons work.\n")
        for area in ("drm", "gpu")
    ]
    docs = _corpus()[:6] + shared
    wikis = []
    for _ in range(2):
        deps, kb = make_kb(50)
        _ingest(deps, kb, docs)
        wikis.append(_wiki(deps, kb))
        refs = {p.slug: [r.title for r in p.source_refs] for p in deps.pages.iter_pages(kb.id)}
        assert all(titles == sorted(titles) for titles in refs.values()), refs
    summaries = sorted(slug for slug in wikis[0] if slug.startswith("doc-todo-list"))
    assert len(summaries) == 2, summaries
    _assert_same(wikis[0], wikis[1])


def _reference() -> list[tuple[str, str, str]]:
    """(title, source uri, text) of the module references under ``tests/data/corpus`` (classes and
    their members, bare names several modules share, names that slugify alike: the module
    ``wiki.links`` and the table ``wiki_links``), and two notes sharing a title, in file order."""
    out = []
    for path in sorted(REFERENCE.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        out.append((text.splitlines()[0].removeprefix("# ").strip(), f"reference/{path.name}", text))
    for area in ("a", "b"):
        text = f"# Release notes\n\nThe {area} release notes say what changed in wiki.links and in repos.lint.\n"
        out.append(("Release notes", f"notes/{area}.md", text))
    return out


def _vault(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.md"))}


def test_the_same_documents_export_the_same_vault_whatever_the_order_and_the_batch_size(
    actors_broker,  # noqa: F811
    pool,
    tmp_path,
):
    # one KB name in tenants of their own: the index page names its KB
    import difflib

    from kbwiki.export import export_vault
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import get_settings

    docs = _reference()
    shuffled = docs[:]
    random.Random(5).shuffle(shuffled)
    tenant = 1_000 + uuid.uuid4().int % 1_000_000_000
    vaults = []
    for i, (batch_size, order) in enumerate(((50, docs), (3, shuffled), (1, docs[::-1]))):
        deps = build_deps(get_settings(), pool, extractor=OfflineExtractor())
        kb = deps.kbs.get_or_create(tenant + i, "reference")
        deps.kbs.set_wiki_config(kb.id, {"ingest_batch_size": batch_size})
        _ingest(deps, deps.kbs.get(kb.id), order)
        export_vault(deps.pages, kb.id, tmp_path / str(i), kb_name=kb.name, mentions=deps.mentions)
        deps.redis.close()
        vaults.append(_vault(tmp_path / str(i)))

    first, *others = vaults
    assert len(first) > 150 and "summary/doc-release-notes.md" in first
    for other in others:
        assert first.keys() == other.keys(), sorted(first.keys() ^ other.keys())
        differing = [rel for rel in first if first[rel] != other[rel]]
        shown = [
            "".join(difflib.unified_diff(*(v[rel].decode().splitlines(True) for v in (first, other)), rel, rel))
            for rel in differing[:3]
        ]
        assert not differing, f"{len(differing)} files differ: {differing[:10]}\n" + "\n".join(shown)
