"""The index page's introduction written by the model (issue 16): from the recent summaries only,
asked again only when they changed enough, never blocking the index, offline never asked."""

from __future__ import annotations

import uuid

import pytest

from stages.index import rebuild_index
from tests.integration.test_llm_map import submit
from tests.support.llm_deps import scripted_llm_deps
from tests.support.llm_server import error, fresh_llm, intro_answer, is_intro_request, realistic
from tests.support.pipeline import settle
from wiki.extract.llm.intro import KEEP_OVERLAP
from wiki.slugs import INDEX_SLUG


def docs(n: int, tag: str) -> dict[str, tuple[str, str]]:
    return {
        f"{tag}-{i}.md": (
            f"Note {tag} {i}",
            f"The Frob Engine {tag}{i} turns widgets into gadgets for the build. It runs on every"
            f" machine of the lab {tag}{i}. The Frob Engine {tag}{i} keeps a log of each run.",
        )
        for i in range(n)
    }


@pytest.fixture()
def server():
    with fresh_llm(realistic) as s:
        yield s


def intro_calls(server) -> list[dict]:
    return [r for r in server.requests if is_intro_request(r)]


def test_the_model_writes_the_intro_from_the_recent_summaries_and_again_only_when_they_changed(
    settings, clean_db, server
):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_index_intro=True)
    kb = deps.kbs.get_or_create(1, f"intro-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(4, "a"))
    settle(deps, kb)
    [first] = intro_calls(server)
    assert first["messages"][0]["content"].count("\n- Note a") == 4  # the four summaries, by title
    index = deps.pages.get(kb.id, INDEX_SLUG)
    intro = intro_answer(first)["json"]["choices"][0]["message"]["content"]
    assert intro in index.content and index.content.index(intro) < index.content.index("## Pages by type")
    assert deps.index_intros.get(kb.id).intro == intro
    [usage] = deps.llm_usage.for_kb(kb.id)
    assert usage.calls == server.calls  # the intro's call counts with the KB's model work

    # Rebuilt with the same summaries: the stored intro, no call.
    rebuild_index(kb.tenant_id, kb.id, deps)
    assert len(intro_calls(server)) == 1
    # One new document of five: most of the summaries are the same, still no call.
    assert 4 / 5 >= KEEP_OVERLAP
    submit(deps, kb, docs(1, "b"))
    settle(deps, kb)
    assert len(intro_calls(server)) == 1
    # Four more: fewer than KEEP_OVERLAP of the recent summaries are the intro's, written again.
    submit(deps, kb, docs(4, "c"))
    settle(deps, kb)
    assert len(intro_calls(server)) == 2


def test_a_failing_intro_call_keeps_the_index_and_the_offline_extractor_never_asks(settings, clean_db, server):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_index_intro=True)
    server.responder = lambda request: error(503, "busy") if is_intro_request(request) else realistic(request)
    kb = deps.kbs.get_or_create(1, f"intro-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(2, "a"))
    settle(deps, kb)
    index = deps.pages.get(kb.id, INDEX_SLUG)
    assert intro_calls(server) and "## Pages by type" in index.content and deps.index_intros.get(kb.id) is None

    offline = scripted_llm_deps(settings, clean_db, server.url, extractor="offline")
    calls = server.calls
    rebuild_index(kb.tenant_id, kb.id, offline)
    assert server.calls == calls
