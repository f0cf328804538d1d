"""Dead letters whose document later finished are resolved, not open (issue 27, deliverable 3).

The fault run this comes from: during a long PostgreSQL outage, ``wiki_map`` messages used up
their retries and were dead-lettered (spooled in Redis, drained later), yet every document ended
``done``; ``kbwiki status`` said ``dead_letters: 6``. The stages run synchronously here
(``tests.support.pipeline.settle``) on real PostgreSQL and Redis.
"""

from __future__ import annotations

import uuid

import dramatiq
import pytest

from kbwiki.status import kb_status
from repos.dead_letter_spool import DeadLetterSpool
from repos.dead_letters import Resolution
from repos.web import WebRepository
from stages.requeue import unspool
from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import ScriptedExtractor
from tests.support.pipeline import settle
from wiki.lanes import SCOPE_KB


@pytest.fixture()
def env(actors_broker, pool):  # noqa: F811
    """(deps with a scripted extractor, a fresh KB)."""
    from stages.deps import build_deps
    from wiki.settings import get_settings

    deps = build_deps(get_settings(), pool, extractor=ScriptedExtractor())
    kb = deps.kbs.get_or_create(1, f"resolved-{uuid.uuid4().hex[:8]}")
    yield deps, kb
    deps.redis.close()


def _submit(deps, kb, name: str) -> str:
    from stages.ingest import submit_document

    result = submit_document(
        deps,
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title=name,
        content=f"{name} is a test document.\n* {name.title()} Tool (entity): {name} has its own tool.",
        source_uri=f"test/{name}.md",
    )
    return result.knowledge_id


def _letter(kb, actor_name: str, knowledge_id: str | None) -> dict:
    """The dead letter the middleware writes for a message of ``actor_name`` (its insert keywords);
    a ``wiki_map`` message names its document, a ``wiki_ingest`` trigger only the KB."""
    from middleware.dead_letter import probe_scope

    kwargs = {"tenant_id": kb.tenant_id, "knowledge_base_id": kb.id}
    if knowledge_id:
        kwargs |= {"knowledge_id": knowledge_id, "op_id": 1}
    scope = probe_scope((), kwargs)
    message = dramatiq.Message(queue_name="wiki", actor_name=actor_name, args=(), kwargs=kwargs, options={})
    return {
        "task_type": actor_name,
        "tenant_id": scope.tenant_id,
        "scope": scope.scope,
        "scope_id": scope.scope_id,
        "related_id": scope.knowledge_id or "",
        "payload": message.asdict(),
        "last_error": "PoolTimeout: couldn't get a connection after 30.00 sec",
        "fail_count": 584,
    }


def _open_count(deps, kb) -> int:
    return kb_status(deps, kb)["dead_letters"]


def test_dead_letters_of_a_document_are_resolved_in_the_batch_that_makes_it_done(env):
    deps, kb = env
    doc = _submit(deps, kb, "alpha")
    mapped = deps.dead_letters.insert(**_letter(kb, "wiki_map", doc))
    trigger = deps.dead_letters.insert(**_letter(kb, "wiki_ingest", None))
    assert mapped.resolved_at is None and _open_count(deps, kb) == 2

    settle(deps, kb)

    assert deps.docs.get(doc).status == "done"
    resolved = deps.dead_letters.get(mapped.id, tenant_id=kb.tenant_id)
    assert resolved.resolved_at is not None and resolved.resolution == Resolution.DOCUMENT_DONE
    # a KB-wide message names no document: nothing says its work was done
    assert deps.dead_letters.get(trigger.id, tenant_id=kb.tenant_id).resolved_at is None
    assert _open_count(deps, kb) == 1
    assert [r.id for r in deps.dead_letters.list(tenant_id=kb.tenant_id, scope_id=kb.id)] == [trigger.id]
    listed = deps.dead_letters.list(tenant_id=kb.tenant_id, scope_id=kb.id, resolved_too=True)
    assert [r.id for r in listed] == [trigger.id, mapped.id]
    web = WebRepository(deps.pool)
    assert web.dead_letters_by_type(kb.tenant_id).get("wiki_map", 0) == 0
    assert "wiki_map" not in {g.task_type for g in web.dead_letter_groups(kb.tenant_id)}


def test_dead_letters_of_a_document_deleted_on_purpose_are_resolved(env):
    from stages.delete import delete_document

    deps, kb = env
    doc = _submit(deps, kb, "beta")
    settle(deps, kb)
    deps.docs.set_status([doc], "failed", "extraction failed 6 times")  # the map gave up on it
    letter = deps.dead_letters.insert(**_letter(kb, "wiki_map", doc))
    assert letter.resolved_at is None

    assert delete_document(kb.tenant_id, kb.id, doc, deps).status == "deleting"
    assert deps.dead_letters.get(letter.id, tenant_id=kb.tenant_id).resolved_at is None  # not gone yet
    settle(deps, kb)

    assert deps.docs.get(doc).status == "deleted"
    assert deps.dead_letters.get(letter.id, tenant_id=kb.tenant_id).resolution == Resolution.DOCUMENT_DELETED
    assert _open_count(deps, kb) == 0


def test_a_spooled_dead_letter_drained_after_its_document_is_done_is_resolved(env):
    deps, kb = env
    doc = _submit(deps, kb, "gamma")
    spool = DeadLetterSpool(deps.redis, deps.settings.key_prefix)
    # failed while PostgreSQL was down; the document got done by a later message
    spool.put(f"map-{uuid.uuid4().hex}", _letter(kb, "wiki_map", doc))
    spool.put(f"ingest-{uuid.uuid4().hex}", _letter(kb, "wiki_ingest", None))
    settle(deps, kb)
    assert deps.docs.get(doc).status == "done"

    assert unspool(redis=deps.redis, settings=deps.settings, dead_letters=deps.dead_letters, tenant_id=None) >= 2

    letters = deps.dead_letters.list(tenant_id=kb.tenant_id, scope_id=kb.id, resolved_too=True)
    assert {(r.task_type, r.resolution) for r in letters} == {("wiki_map", "document_done"), ("wiki_ingest", "")}
    assert _open_count(deps, kb) == 1


def test_a_dead_letter_of_a_document_of_another_tenant_stays_open(env):
    deps, kb = env
    doc = _submit(deps, kb, "delta")
    settle(deps, kb)
    letter = deps.dead_letters.insert(**{**_letter(kb, "wiki_map", doc), "tenant_id": kb.tenant_id + 1})
    assert letter.resolved_at is None
    assert deps.dead_letters.resolve_finished([doc]) == 0


def test_deleting_a_kb_whole_resolves_every_letter_of_it(env):
    from stages.delete import delete_knowledge_base

    deps, kb = env
    docs = [_submit(deps, kb, name) for name in ("eps", "zeta")]
    deps.docs.set_status(docs, "failed", "extraction failed 6 times")
    letters = [deps.dead_letters.insert(**_letter(kb, "wiki_map", doc)) for doc in docs]
    letters.append(deps.dead_letters.insert(**_letter(kb, "wiki_reduce", None)))
    assert delete_knowledge_base(kb.tenant_id, kb.id, deps).deleted

    assert {deps.dead_letters.get(r.id, tenant_id=1).resolution for r in letters} == {"kb_deleted"}
    assert deps.dead_letters.count(tenant_id=None, scope=SCOPE_KB, scope_id=kb.id) == 0


def test_a_lane_triggers_letter_is_resolved_once_the_kbs_lanes_are_empty(env):
    from stages.recovery import LANE_ACTORS

    deps, kb = env
    doc = _submit(deps, kb, "eta")  # its ingest op waits in the lane: the trigger's work is not done
    trigger = deps.dead_letters.insert(**_letter(kb, "wiki_ingest", None))
    document_letter = deps.dead_letters.insert(**_letter(kb, "wiki_map", doc))
    deps.dead_letters.resolve_drained_triggers(list(LANE_ACTORS.values()))
    assert deps.dead_letters.get(trigger.id, tenant_id=1).resolved_at is None

    settle(deps, kb)
    assert deps.dead_letters.resolve_drained_triggers(list(LANE_ACTORS.values())) >= 1
    assert deps.dead_letters.get(trigger.id, tenant_id=1).resolution == "lane_drained"
    assert deps.dead_letters.get(document_letter.id, tenant_id=1).resolution == "document_done"
