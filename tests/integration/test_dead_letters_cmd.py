"""``kbwiki dead-letters list|show|requeue|purge`` through click's CliRunner on the test database and Redis.

DATABASE_URL and REDIS_URL come from ``pipeline_env``, so ``services()`` starts nothing and the
command talks to the same database and broker namespace as the test.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, timedelta

import dramatiq
import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.dead_letters_cmd import SinceType
from tests.e2e.conftest import actors_broker, deps, pipeline_env  # noqa: F401  (fixtures)
from tests.support.broker import drain
from wiki.errors import error_headline

TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1, in f\nRuntimeError: extractor exploded\n'


@pytest.fixture()
def run(clean_db, deps):  # noqa: F811
    """Invoke ``kbwiki`` with arguments; returns click's Result (stdout and stderr apart)."""
    from middleware.logging import configure_logging

    # Logging is process-global and other tests reset it to structlog's defaults (print to stdout);
    # the project's configuration sends JSON logs to the stderr of now, outside the command's output.
    configure_logging("INFO")
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return invoke


def _kb(deps, name=None):  # noqa: F811
    return deps.kbs.get_or_create(1, name or f"dl-{uuid.uuid4().hex[:6]}")


def _wiki_dead_letter(deps, kb, title="doc", fails=6):  # noqa: F811
    """A document op that used up its budget, dead-lettered the way map does it."""
    from wiki.lanes import INGEST, OP_INGEST, SCOPE_KB

    doc, _ = deps.docs.upsert(kb, title=title, source_uri=f"{title}.md", content=f"{title} " * 20)
    op = deps.ops.enqueue(
        tenant_id=kb.tenant_id,
        task_type=INGEST,
        scope=SCOPE_KB,
        scope_id=kb.id,
        op=OP_INGEST,
        dedup_key=doc.id,
        payload={"knowledge_id": doc.id, "content_hash": doc.content_hash},
    )
    row = deps.dead_letters.move_op_to_dead_letters(
        op.model_copy(update={"fail_count": fails}), task_type=INGEST, error=TRACEBACK
    )
    deps.docs.set_status([doc.id], "failed", f"extraction failed {fails} times")
    return row, doc


def _message_dead_letter(deps, actor_name, kwargs, options=None, scope=("unknown", "")):  # noqa: F811
    """A dead letter as the middleware writes it: the payload is the whole message."""
    message = dramatiq.Message(queue_name="wiki", actor_name=actor_name, args=(), kwargs=kwargs, options=options or {})
    return deps.dead_letters.insert(
        task_type=actor_name,
        tenant_id=kwargs.get("tenant_id", 0),
        scope=scope[0],
        scope_id=scope[1],
        payload=message.asdict(),
        last_error="RuntimeError: boom\nTraceback ...",
        fail_count=3,
    )


# ---- parsing helpers ---------------------------------------------------------------------------


def test_error_headline_is_the_exception_line():
    assert error_headline(TRACEBACK) == "RuntimeError: extractor exploded"
    assert error_headline("ValueError: bad\nTraceback (most recent call last):\n ...") == "ValueError: bad"
    assert error_headline("") == ""
    assert len(error_headline("x" * 1000)) == 160


def test_since_accepts_ages_and_iso_times():
    since = SinceType()
    now = since.convert("2024-05-01T12:00", None, None)
    assert now.tzinfo == UTC and now.hour == 12
    assert since.convert("2024-05-01T12:00+02:00", None, None).utcoffset() == timedelta(hours=2)
    assert since.convert("3d", None, None) - since.convert("2h", None, None) == pytest.approx(
        timedelta(days=-3, hours=2), abs=timedelta(seconds=5)
    )


# ---- list / show -------------------------------------------------------------------------------


def test_list_filters_by_kb_task_type_and_since_and_pages(run, deps):  # noqa: F811
    kb, other = _kb(deps), _kb(deps)
    first, doc = _wiki_dead_letter(deps, kb, "alpha")
    second, _ = _wiki_dead_letter(deps, kb, "beta")
    _wiki_dead_letter(deps, other, "gamma")
    reduce = _message_dead_letter(
        deps, "wiki_reduce", {"tenant_id": 1, "knowledge_base_id": kb.id}, scope=("knowledge_base", kb.id)
    )

    result = run("dead-letters", "list", "--kb", kb.name)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [int(line.split("\t")[0]) for line in lines[:-1]] == [reduce.id, second.id, first.id]
    assert lines[-1] == "3 dead letters, end of list"
    fields = lines[2].split("\t")
    assert fields[2:] == [
        "wiki:ingest",
        f"knowledge_base/{kb.id}",
        doc.id,
        "alpha.md",
        "fails=6",
        "RuntimeError: extractor exploded",
    ]

    result = run("dead-letters", "list", "--kb", kb.name, "--task-type", "wiki:ingest", "--limit", "1")
    assert result.stdout.splitlines() == [result.stdout.splitlines()[0], f"next page: --cursor {second.id}"]
    assert result.stdout.startswith(f"{second.id}\t")
    result = run("dead-letters", "list", "--kb", kb.name, "--task-type", "wiki:ingest", "--cursor", str(second.id))
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
        str(first.id),
        "1 dead letter, end of list",
    ]

    after_first = (first.failed_at + timedelta(microseconds=1)).isoformat()
    result = run("dead-letters", "list", "--kb", kb.name, "--since", after_first)
    assert {int(line.split("\t")[0]) for line in result.stdout.splitlines()[:-1]} == {second.id, reduce.id}
    assert len(run("dead-letters", "list", "--since", "2h").stdout.splitlines()) == 5  # 4 rows + footer


def test_list_shows_the_source_uri_of_the_document_a_letter_names(run, deps):  # noqa: F811
    kb = _kb(deps)
    ingest, doc = _wiki_dead_letter(deps, kb, "guide")  # names the document by its knowledge id
    mapped = deps.dead_letters.insert(  # an actor's message naming it (the middleware's related id)
        task_type="wiki_map", tenant_id=1, scope="knowledge_base", scope_id=kb.id, related_id=doc.id, fail_count=3
    )
    submitted = _message_dead_letter(  # a document never stored: the message carries its source URI
        deps, "wiki_submit", {"tenant_id": 1, "knowledge_base_id": kb.id, "title": "N", "source_uri": "new/n.md"}
    )
    reduce = _message_dead_letter(deps, "wiki_reduce", {"tenant_id": 1, "knowledge_base_id": kb.id})
    other = deps.kbs.get_or_create(2, kb.name)
    _, theirs = _wiki_dead_letter(deps, other, "secret")
    foreign = deps.dead_letters.insert(task_type="wiki_map", tenant_id=1, related_id=theirs.id, fail_count=1)

    result = run("dead-letters", "list")
    assert result.exit_code == 0, result.output
    sources = {int(f[0]): (f[4], f[5]) for f in (line.split("\t") for line in result.stdout.splitlines()) if len(f) > 5}
    assert sources == {
        ingest.id: (doc.id, "guide.md"),
        mapped.id: (doc.id, "guide.md"),
        submitted.id: ("-", "new/n.md"),
        reduce.id: ("-", "-"),
        foreign.id: (theirs.id, "-"),  # another tenant's document is not named
    }


def test_a_done_documents_letter_is_listed_with_resolved_only_and_not_requeued(run, deps, actors_broker):  # noqa: F811
    kb = _kb(deps)
    failing, _ = _wiki_dead_letter(deps, kb, "alpha")
    doc, _ = deps.docs.upsert(kb, title="beta", source_uri="beta.md", content="beta " * 20)
    deps.docs.set_status([doc.id], "done")
    # a map message that ran out of retries in an outage, written after its document got done
    late = deps.dead_letters.insert(
        task_type="wiki_map", tenant_id=1, scope="knowledge_base", scope_id=kb.id, related_id=doc.id, fail_count=584
    )

    result = run("dead-letters", "list", "--kb", kb.name)
    assert [line.split("\t")[0] for line in result.stdout.splitlines()] == [
        str(failing.id),
        "1 dead letter, end of list",
    ]
    lines = run("dead-letters", "list", "--kb", kb.name, "--resolved").stdout.splitlines()
    assert [line.split("\t")[0] for line in lines[:-1]] == [str(late.id), str(failing.id)]
    assert lines[0].endswith("\tresolved=document_done") and "resolved=" not in lines[1]
    shown = run("dead-letters", "show", str(late.id)).stdout
    assert "\nresolution: document_done\n" in shown

    result = run("dead-letters", "requeue", "--all", "--kb", kb.name)
    assert result.stdout.splitlines()[-1] == "requeued 1, failed 0"
    assert deps.dead_letters.get(failing.id, tenant_id=1) is None
    assert deps.dead_letters.get(late.id, tenant_id=1) is not None  # history, not work
    drain(actors_broker, "wiki")


def test_list_refuses_a_bad_cursor_and_an_unknown_kb(run):
    result = run("dead-letters", "list", "--cursor", "abc")
    assert result.exit_code == 2 and "cursor" in result.output
    result = run("dead-letters", "list", "--kb", "no-such-kb")
    assert result.exit_code == 1 and "no knowledge base named 'no-such-kb'" in result.output


def test_show_prints_the_payload_as_json_and_the_whole_error(run, deps):  # noqa: F811
    long_error = "\n".join(f"line {i}" for i in range(300))
    row = deps.dead_letters.insert(
        task_type="wiki_map",
        scope="knowledge",
        scope_id="k1",
        related_id="k1",
        payload={"kwargs": {"knowledge_id": "k1"}, "nested": [1, "é"]},
        last_error=long_error,
        fail_count=4,
    )  # no tenant: tenant 0
    result = run("dead-letters", "show", "--tenant", "0", str(row.id))
    assert result.exit_code == 0
    head, _, rest = result.stdout.partition("payload:\n")
    payload_text, _, error = rest.partition("last_error:\n")
    assert f"id: {row.id}\n" in head and "related_id: k1\n" in head and "fail_count: 4\n" in head
    assert json.loads(payload_text) == {"kwargs": {"knowledge_id": "k1"}, "nested": [1, "é"]}
    assert error == long_error + "\n"
    result = run("dead-letters", "show", str(row.id + 1000))
    assert result.exit_code == 1 and f"no dead letter {row.id + 1000}" in result.output


# ---- requeue -----------------------------------------------------------------------------------


def test_requeue_wiki_op_goes_back_to_the_ingest_lane_with_a_fresh_budget(run, deps, actors_broker):  # noqa: F811
    from wiki.lanes import INGEST, SCOPE_KB

    kb = _kb(deps)
    row, doc = _wiki_dead_letter(deps, kb)
    drain(actors_broker, "wiki")
    result = run("dead-letters", "requeue", str(row.id))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"{row.id}\treinserted", "requeued 1, failed 0"]
    assert deps.dead_letters.get(row.id, tenant_id=None) is None
    [op] = deps.ops.peek(INGEST, SCOPE_KB, kb.id)
    assert (op.op, op.dedup_key, op.fail_count, op.claimed_at) == ("ingest", doc.id, 0, None)
    assert op.payload["knowledge_id"] == doc.id
    assert deps.docs.get(doc.id).status == "pending"
    triggers = [m for m in drain(actors_broker, "wiki") if m.actor_name == "wiki_ingest"]
    assert [m.kwargs for m in triggers] == [{"tenant_id": 1, "knowledge_base_id": kb.id}]


def test_requeue_message_resends_it_with_retries_reset(run, deps, actors_broker):  # noqa: F811
    kb = _kb(deps)
    kwargs = {"tenant_id": 1, "knowledge_base_id": kb.id}
    options = {
        "retries": 5,
        "traceback": "Traceback ...",
        "redis_message_id": "old",
        "requeue_timestamp": 1,
        "max_retries": 7,
    }
    row = _message_dead_letter(deps, "wiki_reduce", kwargs, options, ("knowledge_base", kb.id))
    drain(actors_broker, "wiki")
    result = run("dead-letters", "requeue", str(row.id))
    assert result.stdout.splitlines() == [f"{row.id}\tresent", "requeued 1, failed 0"]
    [sent] = drain(actors_broker, "wiki")
    assert (sent.actor_name, sent.kwargs) == ("wiki_reduce", kwargs)
    assert "retries" not in sent.options and "traceback" not in sent.options
    assert sent.options["max_retries"] == 7
    assert sent.message_id != row.payload["message_id"]
    assert deps.dead_letters.get(row.id, tenant_id=None) is None


def test_requeue_keeps_what_it_cannot_requeue_and_exits_1(run, deps, actors_broker):  # noqa: F811
    kb = _kb(deps)
    ghost = _message_dead_letter(deps, f"ghost_{uuid.uuid4().hex[:6]}", {"tenant_id": 1})
    foreign, _ = _wiki_dead_letter(deps, kb)
    foreign = deps.dead_letters.insert(
        task_type=foreign.task_type,
        tenant_id=99,
        scope=foreign.scope,
        scope_id=foreign.scope_id,
        related_id=foreign.related_id,
        payload=foreign.payload,
        last_error="x",
        fail_count=6,
    )
    result = run("dead-letters", "requeue", str(ghost.id), "999999")
    assert result.exit_code == 1
    assert f"{ghost.id}\tnot requeued: actor" in result.stderr
    assert "999999\tnot requeued: no dead letter 999999" in result.stderr
    assert result.stdout.splitlines()[-1] == "requeued 0, failed 2"
    result = run("dead-letters", "requeue", "--tenant", "99", str(foreign.id))
    assert result.exit_code == 1
    assert f"{foreign.id}\tnot requeued: knowledge base {kb.id} of tenant 99" in result.stderr
    assert deps.dead_letters.get(ghost.id, tenant_id=1) is not None
    assert deps.dead_letters.get(foreign.id, tenant_id=99) is not None
    from wiki.lanes import INGEST, SCOPE_KB

    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb.id) == 0


def test_requeue_all_takes_only_the_filtered_rows(run, deps, actors_broker):  # noqa: F811
    kb, other = _kb(deps), _kb(deps)
    mine = [_wiki_dead_letter(deps, kb, f"d{i}")[0] for i in range(3)]
    theirs, _ = _wiki_dead_letter(deps, other)
    message = _message_dead_letter(
        deps, "wiki_reduce", {"tenant_id": 1, "knowledge_base_id": kb.id}, scope=("knowledge_base", kb.id)
    )
    assert run("dead-letters", "requeue").exit_code == 2
    assert run("dead-letters", "requeue", str(theirs.id), "--kb", kb.name).exit_code == 2
    result = run("dead-letters", "requeue", "--all", "--kb", kb.name, "--task-type", "wiki:ingest")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-1] == "requeued 3, failed 0"
    assert all(deps.dead_letters.get(r.id, tenant_id=None) is None for r in mine)
    assert deps.dead_letters.get(theirs.id, tenant_id=1) is not None
    assert deps.dead_letters.get(message.id, tenant_id=1) is not None
    drain(actors_broker, "wiki")


# ---- purge -------------------------------------------------------------------------------------


def test_purge_needs_a_filter_or_all(run, deps):  # noqa: F811
    kb, other = _kb(deps), _kb(deps)
    for name in ("a", "b"):
        _wiki_dead_letter(deps, kb, name)
    kept, _ = _wiki_dead_letter(deps, other)
    loose = _message_dead_letter(deps, "wiki_reduce", {"tenant_id": 1})

    result = run("dead-letters", "purge")
    assert result.exit_code == 2 and "nothing was deleted" in result.output
    assert deps.dead_letters.count(tenant_id=None) == 4

    assert run("dead-letters", "purge", "--kb", kb.name).stdout == "purged 2 dead letters\n"
    assert deps.dead_letters.count(tenant_id=None) == 2 and deps.dead_letters.get(kept.id, tenant_id=1) is not None
    assert run("dead-letters", "purge", str(loose.id)).stdout == "purged 1 dead letter\n"
    assert [r.id for r in deps.dead_letters.list(tenant_id=None)] == [kept.id]
    assert run("dead-letters", "purge", "--all").stdout == "purged 1 dead letter\n"
    assert deps.dead_letters.count(tenant_id=None) == 0


@pytest.mark.parametrize("subcommand", ["show", "requeue", "purge"])
def test_an_unknown_id_is_one_line_and_exit_1_for_every_subcommand(run, deps, subcommand):  # noqa: F811
    kept, _ = _wiki_dead_letter(deps, _kb(deps))
    unknown = kept.id + 1000
    result = run("dead-letters", subcommand, str(unknown))
    assert result.exit_code == 1, result.output
    said = [line for line in result.output.splitlines() if f"no dead letter {unknown} of tenant 1" in line]
    assert len(said) == 1, result.output
    assert "Traceback" not in result.output
    assert deps.dead_letters.get(kept.id, tenant_id=1) is not None  # nothing else was touched


def test_purge_by_ids_deletes_the_known_ones_and_names_the_unknown_one(run, deps):  # noqa: F811
    kb = _kb(deps)
    first, _ = _wiki_dead_letter(deps, kb, "a")
    second, _ = _wiki_dead_letter(deps, kb, "b")
    unknown = second.id + 1000
    result = run("dead-letters", "purge", str(first.id), str(unknown), str(first.id))
    assert result.exit_code == 1
    assert result.stderr == f"{unknown}\tnot purged: no dead letter {unknown} of tenant 1\n"
    assert result.stdout == "purged 1 dead letter, 1 not found\n"
    assert deps.dead_letters.get(first.id, tenant_id=1) is None
    assert deps.dead_letters.get(second.id, tenant_id=1) is not None
    # ids and filters are two ways to choose, as with requeue
    assert run("dead-letters", "purge", str(second.id), "--kb", kb.name).exit_code == 2
    assert deps.dead_letters.get(second.id, tenant_id=1) is not None


def test_repository_purge_refuses_to_run_without_a_filter(deps):  # noqa: F811
    row = deps.dead_letters.insert(task_type="wiki_map")
    with pytest.raises(ValueError):
        deps.dead_letters.purge(tenant_id=None)
    assert deps.dead_letters.purge(tenant_id=None, ids=[]) == 0
    assert deps.dead_letters.get(row.id, tenant_id=None) is not None


# ---- tenants: every subcommand reads and deletes only the --tenant's dead letters ---------------


@pytest.fixture()
def two_tenants(deps):  # noqa: F811
    """Tenants 1 and 2 each with a KB named alike and a document of the same source_uri dead-lettered,
    plus a Dramatiq-message dead letter each; returns ``{tenant: (kb, op_row, message_row)}``."""
    name = f"shared-{uuid.uuid4().hex[:6]}"
    found = {}
    for tenant in (1, 2):
        kb = deps.kbs.get_or_create(tenant, name)
        row, _ = _wiki_dead_letter(deps, kb, "same")
        message = _message_dead_letter(
            deps, "wiki_reduce", {"tenant_id": tenant, "knowledge_base_id": kb.id}, scope=("knowledge_base", kb.id)
        )
        found[tenant] = (kb, row, message)
    return found


def _ids(stdout: str) -> set[int]:
    return {int(line.split("\t")[0]) for line in stdout.splitlines() if "\t" in line}


def test_list_shows_only_the_tenants_dead_letters(run, two_tenants):
    for tenant, (kb, row, message) in two_tenants.items():
        for extra in ((), ("--kb", kb.name), ("--task-type", "wiki:ingest"), ("--since", "1h")):
            result = run("dead-letters", "list", "--tenant", str(tenant), *extra)
            assert result.exit_code == 0, result.output
            expected = {row.id} if "wiki:ingest" in extra else {row.id, message.id}
            assert _ids(result.stdout) == expected, (tenant, extra)
    assert _ids(run("dead-letters", "list", "--tenant", "3").stdout) == set()


def test_show_refuses_another_tenants_dead_letter(run, two_tenants):
    _, row1, _ = two_tenants[1]
    _, row2, _ = two_tenants[2]
    result = run("dead-letters", "show", "--tenant", "2", str(row1.id))
    assert result.exit_code == 1 and f"no dead letter {row1.id} of tenant 2" in result.output
    result = run("dead-letters", "show", "--tenant", "2", str(row2.id))
    assert result.exit_code == 0 and "tenant_id: 2" in result.stdout


def test_requeue_by_id_and_all_touch_only_the_tenant(run, deps, two_tenants, actors_broker):  # noqa: F811
    from wiki.lanes import INGEST, SCOPE_KB

    kb1, row1, message1 = two_tenants[1]
    kb2, row2, message2 = two_tenants[2]
    result = run("dead-letters", "requeue", "--tenant", "2", str(row1.id), str(message1.id))
    assert result.exit_code == 1 and result.stdout.splitlines()[-1] == "requeued 0, failed 2"
    assert deps.ops.pending_count(INGEST, SCOPE_KB, kb1.id) == 0
    result = run("dead-letters", "requeue", "--tenant", "2", "--all")
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == "requeued 2, failed 0"
    assert (
        deps.dead_letters.get(row2.id, tenant_id=2) is None and deps.dead_letters.get(message2.id, tenant_id=2) is None
    )
    assert (
        deps.ops.pending_count(INGEST, SCOPE_KB, kb2.id) == 1 and deps.ops.pending_count(INGEST, SCOPE_KB, kb1.id) == 0
    )
    assert {r.id for r in deps.dead_letters.list(tenant_id=None)} == {row1.id, message1.id}
    drain(actors_broker, "wiki")


@pytest.mark.parametrize(
    "how", [("--all",), ("--kb", "KB"), ("--task-type", "wiki:ingest"), ("--since", "1h"), ("IDS",)]
)
def test_purge_deletes_only_the_tenants_dead_letters(run, deps, two_tenants, how):  # noqa: F811
    kb1, row1, message1 = two_tenants[1]
    kb2, row2, message2 = two_tenants[2]
    args = {"KB": kb2.name}
    argv = [args.get(a, a) for a in how if a != "IDS"] + (
        [str(row1.id), str(message1.id), str(row2.id)] if how == ("IDS",) else []
    )
    result = run("dead-letters", "purge", "--tenant", "2", *argv)
    # tenant 1's ids name no dead letter of tenant 2: said, and exit 1
    assert result.exit_code == (1 if how == ("IDS",) else 0), result.output
    left = {r.id for r in deps.dead_letters.list(tenant_id=None)}
    assert {row1.id, message1.id} <= left, "tenant 1's dead letters must survive tenant 2's purge"
    assert row2.id not in left
    assert deps.dead_letters.count(tenant_id=1) == 2


# ---- the Redis spool: dead letters PostgreSQL could not take -----------------------------------


def test_status_says_spooled_letters_exist_and_list_moves_them_into_the_table(run, deps):  # noqa: F811
    from repos.dead_letter_spool import DeadLetterSpool
    from tests.conftest import SESSION_PREFIX

    kb = _kb(deps)
    message = dramatiq.Message(
        queue_name="wiki",
        actor_name="wiki_submit",
        args=(),
        kwargs={"tenant_id": 1, "knowledge_base_id": kb.id, "title": "t", "content": "c"},
        options={},
    )
    spool = DeadLetterSpool(deps.redis, SESSION_PREFIX)
    spool.put(
        message.message_id,
        {
            "task_type": "wiki_submit",
            "tenant_id": 1,
            "scope": "knowledge_base",
            "scope_id": kb.id,
            "payload": message.asdict(),
            "last_error": "OperationalError: server closed the connection",
            "fail_count": 584,
        },
    )
    spool.put(
        "other-tenant",
        {
            "task_type": "wiki_submit",
            "tenant_id": 2,
            "scope": "knowledge_base",
            "scope_id": "kb-of-2",
            "payload": {},
            "last_error": "x",
            "fail_count": 1,
        },
    )
    try:
        status = run("status", "--kb", kb.name)
        assert "dead_letters_spooled: 1 (in Redis" in status.stdout
        assert json.loads(run("status", "--kb", kb.name, "--json").stdout)["dead_letters_spooled"] == 1
        listed = run("dead-letters", "list", "--kb", kb.name)
        [line] = [line for line in listed.stdout.splitlines() if "\t" in line]
        assert "\twiki_submit\t" in line and "OperationalError" in line
        assert spool.count(tenant_id=None, scope_id=kb.id) == 0
        assert spool.count(tenant_id=2) == 1  # tenant 1's command leaves tenant 2's letters alone
        assert json.loads(run("status", "--kb", kb.name, "--json").stdout)["dead_letters_spooled"] == 0
    finally:
        deps.redis.delete(spool.key)
