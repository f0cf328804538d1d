"""How ``kbwiki ingest --wait`` ends when the wiki cannot be complete (new-user trials): a KB whose
model work is paused ends the wait at once with how to resume, failed documents end it with exit 1
instead of a silent success, a KB deleted meanwhile ends it with exit 1 (not a full bar and exit
0), Ctrl-C says the work goes on (exit 130, not "Aborted!"), and a wait on which nothing moves
still says what it waits for."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

import kbwiki.ingest as ingest_module
from kbwiki.cli import main
from kbwiki.command import lanes_timeout
from stages.delete import delete_knowledge_base
from stages.map import map_document
from tests.e2e.conftest import actors_broker, deps, pipeline_env, wait_until  # noqa: F401  (fixtures)
from tests.support.broker import drain
from wiki.lanes import FINALIZE, INDEX, INGEST, REDUCE, SCOPE_KB, WIKI_LANES


@pytest.mark.timeout(60)  # a wait that ignored the pause would run into its 600 s timeout
def test_a_wait_on_a_paused_kb_ends_without_its_timeout_and_says_how_to_resume(deps, clean_db, monkeypatch):  # noqa: F811
    monkeypatch.setattr(ingest_module, "PAUSED_GIVE_UP_S", 0.5)
    monkeypatch.setattr(ingest_module, "POLL_S", 0.05)
    kb = deps.kbs.get_or_create(1, f"paused-{uuid.uuid4().hex[:6]}")
    deps.ops.enqueue(tenant_id=1, task_type=INGEST, scope=SCOPE_KB, scope_id=kb.id, op="ingest", dedup_key="k1")
    deps.llm_errors.record(kb.id, "fp", 402, "Insufficient Balance", None, "m", kind="credit")
    assert ingest_module.wait_for_lanes(deps, kb, 1, 600, progress=False) is False
    message = str(lanes_timeout(deps, kb, kb.name, 600))
    assert "paused for credit" in message and f"kbwiki resume --kb {kb.name}" in message
    assert "after 600 s" not in message


def test_ingest_wait_exits_1_naming_the_failed_documents(pipeline_env, deps, clean_db, tmp_path: Path, monkeypatch):  # noqa: F811
    monkeypatch.setenv("KBWIKI_HOME", str(tmp_path / "home"))
    name = f"failed-{uuid.uuid4().hex[:6]}"
    folder = tmp_path / "docs"
    folder.mkdir()
    for bird in ("Plover", "Curlew"):
        text = f"# {bird}\n\nThe {bird} is a bird of the shore. It feeds on insects and small fish.\n"
        (folder / f"{bird}.md").write_text(text)
    assert CliRunner().invoke(main, ["ingest", str(folder), "--kb", name]).exit_code == 0
    kb = deps.kbs.get_by_name(1, name)
    docs = {uri: deps.docs.find(kb.id, uri).id for uri in ("Plover.md", "Curlew.md")}
    # the worker failed Plover for good and wrote Curlew; nothing is left in the lanes
    deps.docs.set_status([docs["Plover.md"]], "failed", "extraction failed 6 times")
    [curlew_op] = [op for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 100) if op.dedup_key == docs["Curlew.md"]]
    assert map_document(1, kb.id, docs["Curlew.md"], curlew_op.id, deps) == "mapped"  # cached now
    deps.docs.set_status([docs["Curlew.md"]], "done")
    for lane in WIKI_LANES:
        deps.ops.delete_by_ids([op.id for op in deps.ops.peek(lane, SCOPE_KB, kb.id, 100)])
    (folder / "Plover.md").unlink()  # Curlew.md is left unchanged: nothing queued
    out = CliRunner().invoke(main, ["ingest", str(folder), "--kb", name, "--wait", "--timeout", "30"])
    assert out.exit_code == 1, out.output
    assert f"1 document of '{name}' failed" in out.output and "kbwiki status --kb" in out.output


# ---- a wait that is stopped, left without its KB, or long: what it says -------------------------


class _Command:
    """``kbwiki ARGS`` in a subprocess on the test servers (no worker runs: the lanes stay as they
    are), its stdout and stderr read together as they come (the bar's lines end in ``\\r``)."""

    def __init__(self, database_url: str, tmp_path: Path, *args: str) -> None:
        env = {**os.environ, "DATABASE_URL": database_url, "KBWIKI_HOME": str(tmp_path / "home")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kbwiki.cli", *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        self.out = bytearray()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while chunk := os.read(self.proc.stdout.fileno(), 4096):
            self.out.extend(chunk)

    def text(self) -> str:
        return self.out.decode(errors="replace")

    def wait_for(self, text: str, timeout_s: float = 60) -> None:
        wait_until(lambda: text in self.text() or self.proc.poll() is not None, timeout_s, f"{text!r} in the output")
        assert text in self.text(), self.text()

    def end(self, timeout_s: float = 60) -> tuple[int, str]:
        code = self.proc.wait(timeout_s)
        self.reader.join(timeout_s)
        return code, self.text()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for bird in ("Plover", "Curlew", "Dunlin"):
        (folder / f"{bird}.md").write_text(f"# {bird}\n\nThe {bird} is a bird of the shore. It feeds on insects.\n")
    return folder


def test_a_kb_deleted_while_ingest_waits_ends_the_wait_with_exit_1(
    pipeline_env,  # noqa: F811
    deps,  # noqa: F811
    clean_db,
    actors_broker,  # noqa: F811
    database_url,
    tmp_path: Path,
):
    name = f"gone-{uuid.uuid4().hex[:6]}"
    command = _Command(database_url, tmp_path, "ingest", str(_folder(tmp_path)), "--kb", name, "--wait")
    try:
        command.wait_for("wiki:")  # waiting, with 3 documents in the ingest lane
        kb = deps.kbs.get_by_name(1, name)
        assert delete_knowledge_base(1, kb.id, deps).deleted
        code, out = command.end()
    finally:
        command.kill()
        drain(actors_broker, "wiki")
    assert code == 1, out
    assert f"Error: knowledge base '{name}' was deleted while waiting" in out
    assert "3/3" not in out  # the emptied lanes are no completion


def test_ctrl_c_on_ingest_wait_says_the_queued_work_goes_on_and_exits_130(
    pipeline_env,  # noqa: F811
    deps,  # noqa: F811
    clean_db,
    actors_broker,  # noqa: F811
    database_url,
    tmp_path: Path,
):
    name = f"stopped-{uuid.uuid4().hex[:6]}"
    command = _Command(database_url, tmp_path, "ingest", str(_folder(tmp_path)), "--kb", name, "--wait")
    try:
        command.wait_for("wiki:")  # the bar is up: the wait has begun
        command.proc.send_signal(signal.SIGINT)
        code, out = command.end()
    finally:
        command.kill()
        drain(actors_broker, "wiki")
    assert code == 130, out
    last = out.replace("\r", "\n").strip().splitlines()[-1]
    assert last.startswith("waiting stopped (Ctrl-C); the queued work ")
    assert last.endswith(f"follow it with `kbwiki status --kb {name}`")
    assert "Aborted!" not in out
    kb = deps.kbs.get_by_name(1, name)  # the work is kept
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id) == {INGEST: 3}


def test_a_wait_on_links_says_what_it_waits_for_while_nothing_moves(deps, clean_db, monkeypatch, capsys):  # noqa: F811
    monkeypatch.setattr(ingest_module, "STATE_EVERY_S", 0.1, raising=False)
    monkeypatch.setattr(ingest_module, "POLL_S", 0.05)
    kb = deps.kbs.get_or_create(1, f"links-{uuid.uuid4().hex[:6]}")
    # every document settled; only cross-linking is left, and no worker runs
    deps.ops.enqueue(tenant_id=1, task_type=FINALIZE, scope=SCOPE_KB, scope_id=kb.id, op="touch", dedup_key="a")
    assert ingest_module.wait_for_lanes(deps, kb, 0, 1.0) is False
    drawn = capsys.readouterr().err.replace("\r", "\n")
    state = "cross-linking; finalize=1; no worker alive: start one (kbwiki worker)"
    assert drawn.count(state) >= 2, drawn  # drawn again and again, though nothing moved
    deps.workers.beat("test-worker")
    try:
        assert ingest_module.wait_for_lanes(deps, kb, 0, 0.3) is False
        assert "cross-linking; finalize=1; 1 worker alive" in capsys.readouterr().err
    finally:
        deps.workers.forget("test-worker")


def test_wait_states_name_the_first_stage_with_rows():
    assert ingest_module.wait_state({INGEST: 3, REDUCE: 2, FINALIZE: 1}, 2) == (
        "mapping documents; ingest=3 reduce=2 finalize=1; 2 workers alive"
    )
    assert ingest_module.wait_state({INDEX: 1}, 1) == "rebuilding the index page; index=1; 1 worker alive"


def test_ctrl_c_while_ingest_stores_says_what_was_stored_and_that_it_stays(deps, clean_db, monkeypatch):  # noqa: F811
    from kbwiki.corpus import CorpusDoc
    from kbwiki.ingest import ingest_docs
    from wiki.errors import Interrupted

    monkeypatch.setattr(ingest_module, "SUBMIT_CHUNK", 1)
    kb = deps.kbs.get_or_create(1, f"cut-{uuid.uuid4().hex[:6]}")

    def docs():
        yield CorpusDoc("Plover", "plover.md", "The Plover is a bird of the shore. It feeds on insects and worms.")
        raise KeyboardInterrupt  # Ctrl-C while the next file is read

    with pytest.raises(Interrupted) as stopped:
        ingest_docs(deps, kb, docs())
    assert str(stopped.value).startswith("ingest stopped (Ctrl-C); what it stored so far (queued=1) stays")
    assert deps.ops.counts_by_lane(SCOPE_KB, kb.id) == {INGEST: 1}


def test_storing_a_large_folder_shows_a_counter_of_the_documents_done(deps, clean_db, monkeypatch, capsys):  # noqa: F811
    from kbwiki.corpus import CorpusDoc
    from kbwiki.ingest import ingest_docs

    monkeypatch.setattr(ingest_module, "COUNTER_DELAY_S", 0, raising=False)  # as if the folder were large
    kb = deps.kbs.get_or_create(1, f"many-{uuid.uuid4().hex[:6]}")
    docs = [
        CorpusDoc(f"Bird {i}", f"b{i}.md", f"Bird {i} is a bird of the shore. It feeds on insects.") for i in range(3)
    ]
    assert ingest_docs(deps, kb, docs, progress=True).queued == 3
    assert "storing: 3doc" in capsys.readouterr().err.replace("\r", "\n")
