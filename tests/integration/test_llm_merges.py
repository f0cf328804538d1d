"""Merges the model decides (issue 16), through the map stage, the scripted OpenAI-compatible server
(real HTTP, the real SDK), reduce and the test database: which near names reach the model, what
its answer makes of the pages, and that a cached decision asks nothing again."""

from __future__ import annotations

import hashlib
import re
import uuid

import pytest

from stages.ingest import submit_document
from stages.map import map_document
from tests.support.llm_deps import scripted_llm_deps
from tests.support.llm_server import answer, fresh_llm, is_merge_request
from tests.support.pipeline import settle
from wiki.dedup import name_key
from wiki.extract.llm.merges import cache_name
from wiki.lanes import INGEST, SCOPE_KB

# title -> (text, [(item name, kind)]): each item's quote is the sentence of the text naming it.
FIRST = (
    "Platform",
    "PostgreSQL stores the catalogue of every service we run. "
    "Cortex-A9 boards run the edge gateways in every shop. "
    "Contoso Analytics Cloud hosts the dashboards of the sales team. "
    "The Query Planner picks the cheapest plan for each statement. "
    "The Virtual Filesystem Switch hides the differences between file systems.",
    [
        ("PostgreSQL", "entity"),
        ("Cortex-A9", "entity"),
        ("Contoso Analytics Cloud", "entity"),
        ("Query Planner", "concept"),
        ("Virtual Filesystem Switch", "concept"),
    ],
)
SECOND = (
    "Migration notes",
    "Postgres keeps running while the schema changes are applied. "
    "Cortex-A5 boards are too slow for the new gateway software. "
    "Contoso Analytics Corp sells the licences for the dashboards. "
    "Query Planning was measured on a copy of the production data. "
    "The Virtual File System caches directory entries for every mount.",
    [
        ("Postgres", "entity"),
        ("Cortex-A5", "entity"),
        ("Contoso Analytics Corp", "entity"),
        ("Query Planning", "entity"),
        ("Virtual File System", "concept"),
    ],
)
THIRD = (
    "Backups",
    "Postgres is backed up every night to a second data centre. "
    "The nightly dump is kept for thirty days and then deleted.",
    [("Postgres", "entity")],
)
_ITEM = re.compile(r'^(i\d+): "([^"]*)" \((entity|concept)\)', re.M)
_CANDIDATE = re.compile(r'^  (p\d+): "([^"]*)"', re.M)


def asked(request: dict) -> dict[str, tuple[str, dict[str, str]]]:
    """A merge request's items: name -> (item handle, {candidate title: handle})."""
    text = request["messages"][1]["content"]
    out: dict[str, tuple[str, dict[str, str]]] = {}
    current = None
    for line in text.splitlines():
        if m := _ITEM.match(line):
            current = m.group(2)
            out[current] = (m.group(1), {})
        elif (m := _CANDIDATE.match(line)) and current:
            out[current][1][m.group(2)] = m.group(1)
    return out


class Model:
    """The scripted model: extraction answers from the documents above, merge answers from
    ``decide`` (a function of the asked items returning the decisions list, or a raw answer text)."""

    def __init__(self) -> None:
        self.docs = {title: (text, items) for title, text, items in (FIRST, SECOND, THIRD)}
        self.decide = lambda items: []
        self.merges: list[dict] = []

    def __call__(self, request: dict) -> dict:
        if is_merge_request(request):
            self.merges.append(request)
            decided = self.decide(asked(request))
            return answer(decided if isinstance(decided, str) else {"decisions": decided})
        user = request["messages"][1]["content"]
        title = re.search(r'<document handle="d1" title="([^"]*)">', user).group(1)
        text, items = self.docs[title]
        sentences = re.split(r"(?<=\.) ", text)
        return answer(
            {
                "summary": sentences[0],
                "body": " ".join(sentences[:2]),
                "items": [
                    {
                        "name": name,
                        "kind": kind,
                        "same_as": None,
                        "aliases": [],
                        "description": f"{name} as the document uses it.",
                        "evidence": [{"source": "d1", "quote": next(s for s in sentences if name in s)}],
                    }
                    for name, kind in items
                ],
            }
        )


@pytest.fixture()
def model():
    m = Model()
    with fresh_llm(m) as server:
        m.server = server
        yield m


@pytest.fixture()
def deps(settings, clean_db, model):
    return scripted_llm_deps(settings, clean_db, model.server.url, llm_pause_s=60.0)


def ingest(deps, kb, *docs) -> None:
    for title, text, _ in docs:
        submit_document(
            deps, tenant_id=kb.tenant_id, knowledge_base_id=kb.id, title=title, content=text, source_uri=f"{title}.md"
        )
    settle(deps, kb)


def items_by_title(deps, kb):
    return {p.title: p for p in deps.pages.iter_pages(kb.id) if p.page_type in ("entity", "concept")}


def decisions(deps, kb) -> dict[str, str | None]:
    with deps.pool.connection() as conn:
        rows = conn.execute(
            "SELECT name_key, merge_into FROM wiki_merge_decisions WHERE knowledge_base_id = %s", (kb.id,)
        ).fetchall()
    return {r["name_key"]: r["merge_into"] for r in rows}


def test_the_model_merges_near_names_only_among_each_items_own_candidates_behind_the_guards(deps, model):
    kb = deps.kbs.get_or_create(1, f"merge-{uuid.uuid4().hex[:6]}")
    ingest(deps, kb, FIRST)
    assert model.merges == []  # nothing near existed: no merge call
    pages = items_by_title(deps, kb)
    assert {"PostgreSQL", "Cortex-A9", "Contoso Analytics Cloud", "Query Planner"} <= set(pages)

    def decide(items):
        # Postgres is PostgreSQL; the VFS item is answered with Postgres's candidate (not its own).
        postgres_handle, postgres_candidates = items["Postgres"]
        vfs_handle, _ = items["Virtual File System"]
        return [
            {"item": postgres_handle, "merge_into": postgres_candidates["PostgreSQL"]},
            {"item": vfs_handle, "merge_into": postgres_candidates["PostgreSQL"]},
            {"item": "i99", "merge_into": "p1"},
        ]

    model.decide = decide
    ingest(deps, kb, SECOND)
    [request] = model.merges
    offered = asked(request)
    # The guards refused the number and the related-not-same pairs before the model; the item whose
    # only near page is of the other type was never offered it.
    assert set(offered) == {"Postgres", "Virtual File System"}
    assert set(offered["Postgres"][1]) == {"PostgreSQL"}
    assert set(offered["Virtual File System"][1]) == {"Virtual Filesystem Switch"}
    assert "Query Planner" not in request["messages"][1]["content"]

    pages = items_by_title(deps, kb)
    assert "Postgres" not in pages
    assert "Postgres" in pages["PostgreSQL"].aliases
    assert len(pages["PostgreSQL"].source_refs) == 2
    # Refused by the guards or answered with another item's candidate: pages of their own.
    for title in ("Cortex-A5", "Contoso Analytics Corp", "Query Planning", "Virtual File System"):
        assert len(pages[title].source_refs) == 1, title
    assert pages["Query Planning"].page_type == "entity" and pages["Query Planner"].page_type == "concept"
    assert decisions(deps, kb) == {name_key("Postgres"): pages["PostgreSQL"].slug, "virtualfilesystem": None}

    # Another document naming Postgres meets the same candidate set: the cached decision, no call.
    calls = model.server.calls
    ingest(deps, kb, THIRD)
    assert model.server.calls == calls + 1  # the extraction only
    assert len(model.merges) == 1
    pages = items_by_title(deps, kb)
    assert "Postgres" not in pages and len(pages["PostgreSQL"].source_refs) == 3
    # The merge call is counted with its document's extraction: usage (and a budget) sees it.
    [usage] = deps.llm_usage.for_kb(kb.id)
    assert usage.calls == model.server.calls and usage.extractions == 3


def test_an_invalid_merge_answer_keeps_every_item_new_and_caches_nothing(deps, model):
    kb = deps.kbs.get_or_create(1, f"merge-{uuid.uuid4().hex[:6]}")
    ingest(deps, kb, FIRST)
    model.decide = lambda items: "Postgres and PostgreSQL are the same database."  # no JSON at all
    ingest(deps, kb, SECOND)
    assert len(model.merges) == 1
    pages = items_by_title(deps, kb)
    assert {"Postgres", "PostgreSQL", "Virtual File System"} <= set(pages)
    assert deps.docs.count_by_status(kb.id) == {"done": 2}
    assert decisions(deps, kb) == {}


GUARDED_ONLY = (
    "Hardware",
    "Cortex-A5 boards are too slow for the new gateway software. "
    "Contoso Analytics Corp sells the licences for the dashboards.",
    [("Cortex-A5", "entity"), ("Contoso Analytics Corp", "entity")],
)


def test_a_document_whose_near_names_the_guards_all_refuse_makes_no_merge_call(deps, model):
    kb = deps.kbs.get_or_create(1, f"merge-{uuid.uuid4().hex[:6]}")
    model.docs[GUARDED_ONLY[0]] = GUARDED_ONLY[1:]
    ingest(deps, kb, FIRST)
    calls = model.server.calls
    ingest(deps, kb, GUARDED_ONLY)
    assert model.server.calls == calls + 1 and model.merges == []  # the extraction only
    pages = items_by_title(deps, kb)
    assert {"Cortex-A5", "Cortex-A9", "Contoso Analytics Corp", "Contoso Analytics Cloud"} <= set(pages)


def test_a_retried_map_reuses_the_stored_decision(deps, model):
    kb = deps.kbs.get_or_create(1, f"merge-{uuid.uuid4().hex[:6]}")
    ingest(deps, kb, FIRST)
    model.decide = lambda items: [
        {"item": handle, "merge_into": candidates.get("PostgreSQL")} for handle, candidates in items.values()
    ]
    ingest(deps, kb, SECOND)
    assert len(model.merges) == 1
    with deps.pool.connection() as conn:
        row = conn.execute(
            "SELECT id, content_hash FROM knowledges WHERE knowledge_base_id = %s AND title = %s", (kb.id, SECOND[0])
        ).fetchone()
        conn.execute("DELETE FROM wiki_extractions WHERE knowledge_id = %s", (row["id"],))
    op = deps.ops.enqueue(
        tenant_id=1,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op="ingest",
        dedup_key=row["id"],
        payload={"knowledge_id": row["id"], "content_hash": row["content_hash"]},
    )
    calls = model.server.calls
    assert map_document(1, kb.id, row["id"], op.id, deps) == "mapped"
    assert model.server.calls == calls + 1 and len(model.merges) == 1  # extracted again, not asked again
    stored = deps.extractions.get(kb.id, row["id"], row["content_hash"], deps.extractor.name)
    postgres = next(i for i in stored.items if "Postgres" in i.aliases)
    assert postgres.name == "PostgreSQL"


def test_when_two_workers_ask_at_once_the_first_stored_answer_stands(deps, model):
    kb = deps.kbs.get_or_create(1, f"merge-{uuid.uuid4().hex[:6]}")
    ingest(deps, kb, FIRST)
    pg_slug = items_by_title(deps, kb)["PostgreSQL"].slug
    candidate_set = hashlib.sha256(pg_slug.encode()).hexdigest()[:16]

    def decide(items):
        # While this call runs, another worker stores "new" for the same question.
        with deps.pool.connection() as conn:
            conn.execute(
                "INSERT INTO wiki_merge_decisions (knowledge_base_id, decider, name_key, candidate_set, merge_into)"
                " VALUES (%s, %s, %s, %s, NULL)",
                (kb.id, cache_name(deps.extractor.config), name_key("Postgres"), candidate_set),
            )
        handle, candidates = items["Postgres"]
        return [{"item": handle, "merge_into": candidates["PostgreSQL"]}]

    model.decide = decide
    ingest(deps, kb, SECOND)
    assert len(model.merges) == 1
    pages = items_by_title(deps, kb)
    assert "Postgres" in pages and "Postgres" not in pages["PostgreSQL"].aliases
    assert decisions(deps, kb)[name_key("Postgres")] is None
