"""Issue 23 on real PostgreSQL: pages made from every document's row of the mention index.

A name three documents name, one stating a central fact of it, gets a page that lists them all;
it goes when the document saying something of it goes. Two modules' classes of one bare name get
a disambiguation page each links to. A module's page lists its members and they link up to it."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.support.pipeline import settle
from wiki.dedup import name_key
from wiki.links import parse_links


@pytest.fixture()
def env(actors_broker, pool):  # noqa: F811
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import get_settings

    deps = build_deps(get_settings(), pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"coverage-{uuid.uuid4().hex[:8]}")
    yield deps, kb
    deps.redis.close()


def _submit(deps, kb, title: str, text: str) -> str:
    from stages.ingest import submit_document

    result = submit_document(
        deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=title, content=text, source_uri=f"docs/{title}.md"
    )
    assert result.status in ("queued", "unchanged"), result
    return result.knowledge_id


KESTREL = {
    "Company history": "Kestrel Labs was founded in Bergen in 1990 by three optics engineers. The founders "
    "wanted lenses that small telescopes could afford.",
    "Lens catalogue": "The lens catalogue lists every lens design of the year. Orders for designs by Kestrel Labs "
    "go to the sales office in Oslo.",
    "Shipping": "Parcels leave the warehouse every Tuesday and Friday. Kestrel Labs ships its lenses in foam "
    "crates to every country of Europe.",
}


def test_a_name_three_documents_name_gets_a_page_listing_them_and_goes_with_its_lead(env):
    from stages.delete import delete_document

    deps, kb = env
    ids = {title: _submit(deps, kb, title, text) for title, text in KESTREL.items()}
    settle(deps, kb)
    key = name_key("Kestrel Labs")
    page = next(p for p in deps.pages.by_name_keys(kb.id, [key])[key])
    full = deps.pages.get(kb.id, page.slug)
    assert full.content.startswith("Kestrel Labs was founded in Bergen in 1990")
    listed = {kid for _, _, kid in deps.mentions.mentioned_in(kb.id, key)}
    assert listed == set(ids.values()) and deps.mentions.doc_counts(kb.id, [key]) == {key: 3}

    delete_document(kb.tenant_id, kb.id, ids["Company history"], deps)
    settle(deps, kb)
    assert deps.pages.by_name_keys(kb.id, [key]).get(key, []) == []  # no document says anything of it now
    assert deps.mentions.doc_counts(kb.id, [key]) == {key: 2}


def _module(name: str, extra: str = "") -> str:
    return (
        f"# {name}\n\nA small queue library for the {name} scheduler.\n\n"
        "## Queue\n\nCreate a queue object with a given maximum size.\n\n"
        "### Queue.put\n\nPut an item into the queue, blocking while it is full.\n\n"
        "### Queue.get\n\nRemove and return an item from the queue.\n" + extra
    )


def test_two_modules_classes_of_one_bare_name_get_a_disambiguation_page_and_members_link_up(env):
    from stages.delete import delete_document

    deps, kb = env
    first = _submit(deps, kb, "frobq", _module("frobq"))
    _submit(deps, kb, "grobq", _module("grobq"))
    settle(deps, kb)
    frob = deps.pages.get(kb.id, "frobq-queue")
    grob = deps.pages.get(kb.id, "grobq-queue")
    assert frob.title == "frobq.Queue" and grob.title == "grobq.Queue" and "Queue" in frob.aliases
    assert {link.slug for link in parse_links(frob.content)} >= {"frobq", "frobq-queue-put", "queue-disambiguation"}
    disambiguation = deps.pages.get(kb.id, "queue-disambiguation")
    assert disambiguation.page_type == "disambiguation" and disambiguation.title == "Queue (disambiguation)"
    assert {link.slug for link in parse_links(disambiguation.content)} == {"frobq-queue", "grobq-queue"}
    put = deps.pages.get(kb.id, "frobq-queue-put")
    assert "frobq-queue" in {link.slug for link in parse_links(put.content)}  # "Member of"
    # a lower-case "queue" of another module shares the slug "queue-disambiguation" but not the page
    _submit(
        deps, kb, "hobq", "# hobq\n\nHelpers of the hob scheduler.\n\n## queue\n\nReturn the queue of a hob by name.\n"
    )
    settle(deps, kb)
    assert deps.pages.get(kb.id, "queue-disambiguation") is not None

    delete_document(kb.tenant_id, kb.id, first, deps)
    settle(deps, kb)
    assert deps.pages.get(kb.id, "queue-disambiguation") is None
    grob = deps.pages.get(kb.id, "grobq-queue")
    assert "queue-disambiguation" not in {link.slug for link in parse_links(grob.content)}
    dead = deps.pages.link_stats(kb.id)["dead_links"]
    assert dead == 0
