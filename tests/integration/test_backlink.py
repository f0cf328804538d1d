"""Back-links on real PostgreSQL: a page that appears later is linked from the pages that already
mention it, found through the full-text index in chunks, never by reading the KB."""

from __future__ import annotations

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import _settle, _submit, env  # noqa: F401  (env: fixture)
from wiki.links import out_link_slugs


def test_a_page_created_later_is_linked_from_the_pages_that_mentioned_it_first(env):  # noqa: F811
    deps, kb = env
    for name in ("Alpha", "Beta", "Gamma"):
        _submit(
            deps,
            kb,
            name,
            f"The {name} line mentions the Sprocket Drive in passing.",
            f"* {name} Part (entity): {name} Part is a part.",
        )
    _settle(deps, kb)
    assert deps.pages.get(kb.id, "sprocket-drive") is None

    _submit(deps, kb, "Delta", "* Sprocket Drive (entity): The Sprocket Drive turns every wheel.")
    _settle(deps, kb)

    for name in ("alpha", "beta", "gamma"):
        assert "sprocket-drive" in out_link_slugs(deps.pages.get(kb.id, f"doc-{name}").content), name
    assert deps.pages.pages_mentioning(kb.id, ["sprocket drive"]) == [
        "doc-alpha",
        "doc-beta",
        "doc-delta",
        "doc-gamma",
        "sprocket-drive",
    ]
    assert deps.pages.pages_mentioning(kb.id, ["SPROCKET  drive"], "doc-delta", 1) == ["doc-gamma"]
    assert deps.pages.pages_mentioning(kb.id, ["every sprocket", "  "]) == []


def test_linking_waits_while_documents_are_still_coming(env):  # noqa: F811
    from datetime import UTC, datetime, timedelta

    from stages.backlink import enqueue_keys, run_backlink
    from stages.crosslink import enqueue_touched, run_crosslink
    from stages.pacing import DEFER_S
    from wiki.lanes import BACKLINK, FINALIZE, INGEST, SCOPE_KB

    deps, kb = env
    _submit(
        deps,
        kb,
        "Alpha",
        "The Alpha line mentions the Sprocket Drive in passing.",
        "* Alpha Part (entity): Alpha Part is a part.",
    )
    _submit(deps, kb, "Beta", "* Beta Part (entity): Beta Part is a part.")
    _settle(deps, kb)
    enqueue_keys(kb, {"sprocket drive"}, ops=deps.ops)
    enqueue_touched(kb, ["doc-alpha", "doc-beta"], ops=deps.ops)
    deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op="ingest",
        dedup_key="a-document-being-mapped",
    )

    waiting = run_backlink(kb.tenant_id, kb.id, deps)
    assert waiting.deferred and waiting.claimed == 0 and waiting.remaining == 1
    assert run_crosslink(kb.tenant_id, kb.id, deps).claimed == 0

    later = datetime.now(UTC) + timedelta(seconds=DEFER_S + 1)  # a KB that never stops receiving documents
    done = run_backlink(kb.tenant_id, kb.id, deps, now=later)
    assert (done.deferred, done.claimed, done.found, done.queued) == (False, 1, 1, 2)
    assert deps.ops.pending_count(BACKLINK, SCOPE_KB, kb.id) == 0
    # the pages that waited and the pages mentioning the keys, each queued once
    assert [op.payload["slugs"] for op in deps.ops.peek(FINALIZE, SCOPE_KB, kb.id)] == [["doc-alpha", "doc-beta"]]


def test_a_title_that_goes_away_is_unlinked_from_the_pages_that_mentioned_it(env):  # noqa: F811
    from stages.delete import delete_document

    deps, kb = env
    _submit(
        deps,
        kb,
        "Alpha",
        "The Alpha line mentions the Sprocket Drive in passing.",
        "* Alpha Part (entity): Alpha Part is a part.",
    )
    delta = _submit(deps, kb, "Delta", "* Sprocket Drive (entity): The Sprocket Drive turns every wheel.")
    _settle(deps, kb)
    assert "sprocket-drive" in out_link_slugs(deps.pages.get(kb.id, "doc-alpha").content)

    delete_document(kb.tenant_id, kb.id, delta, deps)
    _settle(deps, kb)

    alpha = deps.pages.get(kb.id, "doc-alpha").content
    assert "sprocket-drive" not in out_link_slugs(alpha) and "Sprocket Drive" in alpha
