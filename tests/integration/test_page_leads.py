"""Page leads the model writes (issue 16, deliverable 5): a page two or more sources describe
opens with a paragraph written from its first contributions, in one call per few pages, written
again only when those contributions change; a page cited by one source asks nothing; a failing or
paused model leaves the chosen lead and loses nothing."""

from __future__ import annotations

import json
import re
import uuid
from datetime import timedelta

import pytest

from stages.crosslink import enqueue_touched
from stages.leads import enqueue_leads, run_leads
from stages.pacing import link_wait_s
from stages.resume import resume_kb
from tests.integration.test_llm_map import submit
from tests.support.llm_deps import scripted_llm_deps
from tests.support.llm_server import answer, error, fresh_llm, is_lead_request, lead_content, realistic
from tests.support.pipeline import settle
from wiki.lanes import FINALIZE, LEAD, SCOPE_KB
from wiki.render import LEAD_SOURCES, first_lead, lead_inputs, lead_key


def docs(tags: list[str]) -> dict[str, tuple[str, str]]:
    """One document per tag, each naming the Frob Engine in its own words."""
    return {
        f"{tag}.md": (
            f"Note {tag}",
            f"The Frob Engine turns widget {tag} into gadget {tag} for the lab. It runs on machine {tag}"
            f" every night. The Frob Engine keeps a log of each run of {tag}.",
        )
        for tag in tags
    }


@pytest.fixture()
def server():
    with fresh_llm(realistic) as s:
        yield s


def lead_calls(server) -> list[dict]:
    return [r for r in server.requests if is_lead_request(r)]


def frob(deps, kb):
    return deps.pages.get(kb.id, "frob-engine")


def opening(page) -> str:
    """The page's first paragraph with its links shown as their display text."""
    return re.sub(r"\[\[[^|\]]+\|([^\]]+)\]\]", r"\1", page.content.split("\n")[0])


def test_a_page_two_sources_describe_opens_with_the_lead_the_model_wrote_from_its_first_contributions(
    settings, clean_db, server
):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(["b1"]))
    settle(deps, kb)
    assert lead_calls(server) == []  # one source: its own description is the lead
    assert frob(deps, kb).lead == ""

    submit(deps, kb, docs(["b2"]))
    settle(deps, kb)
    [call] = lead_calls(server)
    page = frob(deps, kb)
    inputs = lead_inputs(page.facts)
    assert len(inputs) == 2
    for line in inputs:  # the model saw the page's contributions, one line each
        assert line in call["messages"][-1]["content"]
    listing = call["messages"][-1]["content"]
    handle = re.search(rf'^(p\d+): "{re.escape(page.title)}"', listing, re.M).group(1)
    [expected] = [x["lead"] for x in lead_content(call)["leads"] if x["page"] == handle]
    assert page.lead == expected == opening(page)
    assert page.lead_key == lead_key(page.title, inputs)
    assert page.summary == expected[: len(page.summary)]
    [usage] = deps.llm_usage.for_kb(kb.id)
    assert usage.calls == server.calls  # the lead call counts with the KB's model work


def test_a_source_after_the_first_contributions_asks_nothing_and_one_among_them_asks_again(settings, clean_db, server):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs([f"c{i}" for i in range(LEAD_SOURCES)]))
    settle(deps, kb)
    calls = len(lead_calls(server))
    assert calls >= 1
    written = frob(deps, kb)
    assert written.lead

    # "Note z…" sorts after the first LEAD_SOURCES summaries: the lead's input is unchanged
    submit(deps, kb, docs(["z1", "z2"]))
    settle(deps, kb)
    page = frob(deps, kb)
    assert len(page.source_refs) == LEAD_SOURCES + 2
    assert len(lead_calls(server)) == calls and page.lead == written.lead == opening(page)

    # "Note a…" sorts first: the first contributions changed, the lead is written again from them
    submit(deps, kb, docs(["a1"]))
    settle(deps, kb)
    page = frob(deps, kb)
    assert len(lead_calls(server)) == calls + 1
    assert page.lead_key == lead_key(page.title, lead_inputs(page.facts)) != written.lead_key


def test_a_failing_lead_call_keeps_the_chosen_lead_and_a_paused_kb_keeps_its_lead_ops_until_resumed(
    settings, clean_db, server
):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True)
    server.responder = lambda request: error(503, "busy") if is_lead_request(request) else realistic(request)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(["d1", "d2"]))
    settle(deps, kb)  # the lead op backs off, then is dropped after wiki_max_fail_retries
    page = frob(deps, kb)
    assert lead_calls(server) and page.lead == ""
    assert opening(page) == first_lead(page.facts)
    assert deps.ops.pending_count(LEAD, SCOPE_KB, kb.id) == 0

    # out of credit: the KB pauses and its lead op waits for `kbwiki resume`
    server.responder = lambda request: (
        error(402, "insufficient credits") if is_lead_request(request) else realistic(request)
    )
    submit(deps, kb, docs(["d0"]))
    settle(deps, kb, leads=False)
    assert run_leads(kb.tenant_id, kb.id, deps).paused
    assert deps.llm_errors.get(kb.id).kind == "credit"
    waiting = deps.ops.pending_count(LEAD, SCOPE_KB, kb.id)
    assert waiting >= 1  # the pages' ops, kept
    calls = server.calls
    assert run_leads(kb.tenant_id, kb.id, deps).paused  # no call while paused
    assert server.calls == calls and frob(deps, kb).lead == ""
    assert deps.ops.pending_count(LEAD, SCOPE_KB, kb.id) == waiting

    # credit added, `kbwiki resume`: the leads are written
    server.responder = realistic
    resume_kb(kb.tenant_id, kb.id, deps)
    settle(deps, kb)
    page = frob(deps, kb)
    assert page.lead and page.lead_key == lead_key(page.title, lead_inputs(page.facts))


def test_leads_off_for_the_kb_drop_its_lead_ops_without_a_call(settings, clean_db, server):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    off = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=False)
    submit(deps, kb, docs(["e1", "e2"]))
    settle(deps, kb, leads=False)
    waiting = deps.ops.pending_count(LEAD, SCOPE_KB, kb.id)
    assert waiting >= 1
    result = run_leads(kb.tenant_id, kb.id, off)
    assert result.dropped == waiting and deps.ops.pending_count(LEAD, SCOPE_KB, kb.id) == 0
    assert lead_calls(server) == [] and frob(deps, kb).lead == ""


def test_lead_runs_wait_for_the_ingest_like_linking_and_a_page_waits_on_the_lane_once(settings, clean_db, server):
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True, llm_link_defer_s=20)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(["f1", "f2"]))
    settle(deps, kb, leads=False)
    assert enqueue_leads(kb, ["frob-engine"], ops=deps.ops) == 0  # a second batch: the page waits already
    waiting = deps.ops.pending_count(LEAD, SCOPE_KB, kb.id)
    [oldest] = deps.ops.peek(LEAD, SCOPE_KB, kb.id, 1)
    # no document is coming, but leads are: linking waits for them (a lead rewrites its page's text)
    enqueue_touched(kb, ["frob-engine"], ops=deps.ops)
    [touched] = deps.ops.peek(FINALIZE, SCOPE_KB, kb.id, 1)
    assert link_wait_s(kb.id, FINALIZE, ops=deps.ops, defer_s=20, now=touched.enqueued_at + timedelta(seconds=5)) > 14
    assert link_wait_s(kb.id, LEAD, ops=deps.ops, defer_s=20, now=oldest.enqueued_at + timedelta(seconds=5)) == 0

    submit(deps, kb, docs(["f3"]))  # a document still coming: the run waits out the KB's link defer
    early = run_leads(kb.tenant_id, kb.id, deps, now=oldest.enqueued_at + timedelta(seconds=5))
    assert early.claimed == 0 and 14 < early.wait_s <= 15 and lead_calls(server) == []
    late = run_leads(kb.tenant_id, kb.id, deps, now=oldest.enqueued_at + timedelta(seconds=21))
    assert late.claimed == late.asked == waiting
    assert len(lead_calls(server)) == 1 and deps.ops.pending_count(LEAD, SCOPE_KB, kb.id) == 0
    settle(deps, kb)
    assert link_wait_s(kb.id, FINALIZE, ops=deps.ops, defer_s=20) == 0


def test_a_lead_with_links_headings_or_nothing_in_it_never_reaches_a_reader_as_such(settings, clean_db, server):
    """Found by a new user: link syntax and headings in a lead were shown as written."""

    def respond(request):
        if not is_lead_request(request):
            return realistic(request)
        listing = request["messages"][-1]["content"]
        handles = re.findall(r'^(p\d+): "([^"]*)"', listing, re.M)
        leads = [
            {"page": h, "lead": f"## About\n{t} works with [[p9|the hub]] and [[{h}]].\n- see [docs](http://x)"}
            if t == "Frob Engine"
            else {"page": h, "lead": "  "}
            for h, t in handles
        ]
        return answer(json.dumps({"leads": [*leads, {"page": "p99", "lead": "an invented page"}]}))

    server.responder = respond
    deps = scripted_llm_deps(settings, clean_db, server.url, llm_page_leads=True)
    kb = deps.kbs.get_or_create(1, f"leads-{uuid.uuid4().hex[:6]}")
    submit(deps, kb, docs(["g1", "g2"]))
    settle(deps, kb)
    assert lead_calls(server)
    page = frob(deps, kb)
    # "see [docs](http://x)": its address is in none of the page's lines, so it goes (issue 26)
    assert page.lead == "Frob Engine works with the hub and Frob Engine." == opening(page)
    others = [
        p
        for p in deps.pages.iter_pages(kb.id)
        if p.page_type in ("entity", "concept") and p.slug != "frob-engine" and len(lead_inputs(p.facts)) >= 2
    ]
    assert others and all(p.lead == "" for p in others)  # an empty lead: the page keeps its chosen one
