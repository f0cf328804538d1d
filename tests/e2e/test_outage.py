"""PostgreSQL unreachable for longer than every retry of a producer's documents: nothing is lost.

A real worker process (``dramatiq actors:setup_broker``) reaches PostgreSQL through a TCP proxy the test
switches off (connections refused, open ones cut) and on. Its retry settings are shortened so a
``wiki_submit`` spends all of its retries in seconds (``KBWIKI_DATA_RETRY_S`` = 3 with 100-400 ms
backoffs, a 0.5 s wait for a pooled connection); the outage lasts until every document has used
them up and the dead-letter middleware, unable to write ``task_dead_letters``, has spooled them
in Redis. Once PostgreSQL answers, the worker moves them into the table, ``kbwiki dead-letters``
lists them and requeue stores every document; a spooled letter of a map message whose document
ends done is resolved, not listed. A second worker, whose retries last two minutes,
stores documents sent during a shorter outage by itself.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from kbwiki.workers import ROOT, stop_workers, worker_command
from repos.dead_letter_spool import DeadLetterSpool
from tests.conftest import SESSION_PREFIX
from tests.e2e.conftest import wait_until
from tests.support.tcp_proxy import TcpProxy

pytestmark = pytest.mark.e2e

DOCUMENTS = 5
SHORT_RETRIES = {
    "KBWIKI_DATA_RETRY_S": "3",
    "KBWIKI_DATA_RETRY_MIN_BACKOFF_MS": "100",
    "KBWIKI_DATA_RETRY_MAX_BACKOFF_MS": "400",
    "KBWIKI_DB_POOL_TIMEOUT_S": "0.5",
    "KBWIKI_SWEEP_INTERVAL_S": "1",
}


@pytest.fixture()
def proxy(database_url):
    info = psycopg.conninfo.conninfo_to_dict(database_url)
    p = TcpProxy((info.get("host") or "127.0.0.1", int(info.get("port") or 5432)))
    p.up()
    yield p
    p.down()


def _start_worker(env: dict, log_path: Path) -> subprocess.Popen:
    with open(log_path, "ab") as log_file:
        return subprocess.Popen(worker_command(1, 4), cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT)


def _proxied_env(database_url: str, proxy: TcpProxy, **overrides: str) -> dict:
    url = psycopg.conninfo.make_conninfo(database_url, host="127.0.0.1", port=str(proxy.port))
    return {**os.environ, **SHORT_RETRIES, "DATABASE_URL": url, **overrides}


def _submit(kb, i: int) -> None:
    from actors.ingest import wiki_submit

    wiki_submit.send(
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title=f"Outage document {i}",
        content=f"Document {i} was sent while the database was away. " * 5,
        source_uri=f"d{i}.md",
    )


def _map_letter(kb, knowledge_id: str) -> dict:
    """The dead letter the middleware spools for a ``wiki_map`` message of one document."""
    from middleware.dead_letter import probe_scope

    kwargs = {"tenant_id": kb.tenant_id, "knowledge_base_id": kb.id, "knowledge_id": knowledge_id, "op_id": 1}
    scope = probe_scope((), kwargs)
    return {
        "task_type": "wiki_map",
        "tenant_id": scope.tenant_id,
        "scope": scope.scope,
        "scope_id": scope.scope_id,
        "related_id": scope.knowledge_id,
        "payload": {"actor_name": "wiki_map", "queue_name": "wiki_map", "args": [], "kwargs": kwargs, "options": {}},
        "last_error": "PoolTimeout: couldn't get a connection after 0.50 sec",
        "fail_count": 4,
    }


def test_documents_outlive_an_outage_longer_than_their_retries(deps, proxy, database_url, tmp_path: Path):
    from actors.retry_policy import data_retries
    from wiki.settings import Settings

    retries = data_retries(Settings(**{k.removeprefix("KBWIKI_").lower(): v for k, v in SHORT_RETRIES.items()}))
    assert 5 <= retries["max_retries"] < 100
    kb = deps.kbs.get_or_create(1, f"outage-{uuid.uuid4().hex[:6]}")
    spool = DeadLetterSpool(deps.redis, SESSION_PREFIX)
    log_path = tmp_path / "worker.log"
    worker = _start_worker(_proxied_env(database_url, proxy), log_path)
    try:
        _submit(kb, 0)  # the worker runs and reaches PostgreSQL through the proxy
        # done, not only stored: a map of it still running when PostgreSQL goes away could spend
        # its retries in the outage and spool a map letter of its own beside the one put below
        # (seen under load: two map letters where one was expected)
        wait_until(
            lambda: (d0 := deps.docs.find(kb.id, "d0.md")) is not None and d0.status == "done",
            90,
            "the first document done",
        )

        proxy.down()
        for i in range(1, DOCUMENTS + 1):
            _submit(kb, i)
        wait_until(
            lambda: spool.count(tenant_id=1, scope_id=kb.id) == DOCUMENTS,
            120,
            "every document's retries used up and its dead letter spooled in Redis",
        )
        assert all(deps.docs.find(kb.id, f"d{i}.md") is None for i in range(1, DOCUMENTS + 1))
        letters = [row for row in spool.letters().values() if row["scope_id"] == kb.id]
        assert {row["task_type"] for row in letters} == {"wiki_submit"}
        assert all(row["fail_count"] == retries["max_retries"] + 1 for row in letters)
        assert b'"dead_letter.spooled"' in log_path.read_bytes()
        # a map message of the stored document that ran out of retries in the outage, as the
        # middleware spools it: its document ends done, so the letter ends resolved, not open
        d0 = deps.docs.find(kb.id, "d0.md")
        spool.put(f"map-{uuid.uuid4().hex}", _map_letter(kb, d0.id))

        proxy.up()
        wait_until(lambda: spool.count(tenant_id=None, scope_id=kb.id) == 0, 60, "the worker moving the spool")
        assert deps.docs.get(d0.id).status == "done"
        [mapped] = deps.dead_letters.list(tenant_id=1, scope_id=kb.id, task_type="wiki_map", resolved_too=True)
        wait_until(
            lambda: deps.dead_letters.get(mapped.id, tenant_id=1).resolution == "document_done",
            60,
            "the map letter of the done document resolved",
        )
        runner = CliRunner()
        listed = runner.invoke(main, ["dead-letters", "list", "--kb", kb.name], catch_exceptions=False)
        assert listed.exit_code == 0, listed.output
        rows = [line.split("\t") for line in listed.stdout.splitlines() if "\t" in line]
        assert len(rows) == DOCUMENTS and {r[2] for r in rows} == {"wiki_submit"}
        requeued = runner.invoke(main, ["dead-letters", "requeue", "--all", "--kb", kb.name], catch_exceptions=False)
        assert requeued.stdout.splitlines()[-1] == f"requeued {DOCUMENTS}, failed 0", requeued.output
        wait_until(
            lambda: all(deps.docs.find(kb.id, f"d{i}.md") for i in range(1, DOCUMENTS + 1)),
            90,
            "every document stored once PostgreSQL is back",
        )
    finally:
        stop_workers(worker)


def test_documents_sent_during_a_shorter_outage_are_stored_by_their_retries(deps, proxy, database_url, tmp_path: Path):
    kb = deps.kbs.get_or_create(1, f"blip-{uuid.uuid4().hex[:6]}")
    log_path = tmp_path / "worker.log"
    worker = _start_worker(_proxied_env(database_url, proxy, KBWIKI_DATA_RETRY_S="120"), log_path)
    try:
        _submit(kb, 0)
        # done, not only stored: a map of it still running when PostgreSQL goes away could spend
        # its retries in the outage and spool a map letter of its own beside the one put below
        # (seen under load: two map letters where one was expected)
        wait_until(
            lambda: (d0 := deps.docs.find(kb.id, "d0.md")) is not None and d0.status == "done",
            90,
            "the first document done",
        )
        proxy.down()
        for i in (1, 2, 3):
            _submit(kb, i)

        def failed_attempts() -> int:
            lines = log_path.read_bytes().splitlines()
            return sum(1 for line in lines if b'"actor": "wiki_submit"' in line and b'"outcome": "error"' in line)

        wait_until(lambda: failed_attempts() >= 3, 60, "attempts failing while PostgreSQL is away")
        assert all(deps.docs.find(kb.id, f"d{i}.md") is None for i in (1, 2, 3))
        proxy.up()
        wait_until(
            lambda: all(deps.docs.find(kb.id, f"d{i}.md") for i in (1, 2, 3)),
            90,
            "every document stored by a retry once PostgreSQL is back",
        )
        assert deps.dead_letters.list(tenant_id=1, scope="knowledge_base", scope_id=kb.id) == []
        assert DeadLetterSpool(deps.redis, SESSION_PREFIX).count(tenant_id=1, scope_id=kb.id) == 0
    finally:
        stop_workers(worker)
