"""Benchmark: deleting ~1,000 documents with ``kbwiki delete`` (issue 27, deliverable 4).

Usage: .venv/bin/python bench/delete_speed.py [--docs 1000] [--timeout-s 900]

Writes ``--docs`` small generated notes (``bench/chaos.py``'s seeded corpus: each names a few of
a fixed cast, so documents share entity and concept pages) as Markdown files into a temporary
folder, starts ``kbwiki worker`` with its default settings (the embedded default, or
DATABASE_URL/REDIS_URL when set; ``kbwiki migrate`` first), ingests them offline with ``kbwiki
ingest FOLDER --kb NAME --wait``, then runs ``kbwiki delete --kb NAME --wait`` with every source
URI on one command line. Meanwhile it polls PostgreSQL every 0.2 s and prints one JSON line with,
in seconds from the start of the delete:

- ``marked_s``: every document ``deleting`` or ``deleted`` (the command's own work);
- ``gone_s``: every document ``deleted`` (``kbwiki status`` shows none left) and no page but the
  index left, so no page cites a deleted document;
- ``wait_s``: the command returned (its ``--wait``: every lane empty, the index rebuilt);

and ``printed``: how many documents the command reported deleting (it must equal ``--docs``).
Goal (issue 27): ``gone_s`` <= 60 for 1,000 documents.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chaos import make_corpus  # noqa: E402
from bench.ingest_linux import KBWIKI, ROOT  # noqa: E402

POLL_S = 0.2
SEED = 7


def write_corpus(folder: Path, n: int) -> list[str]:
    """``n`` generated notes as files under ``folder``; their source URIs (paths under it)."""
    uris = []
    for doc in make_corpus(n, SEED):
        path = folder / doc["source_uri"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc["content"], encoding="utf-8")
        uris.append(doc["source_uri"])
    return uris


class Watch(threading.Thread):
    """Polls the KB until its documents are all deleted and its pages gone; records when
    (monotonic seconds) every document was marked and when all were gone."""

    def __init__(self, deps, kb_id: str, n: int) -> None:
        super().__init__(daemon=True)
        self.deps, self.kb_id, self.n = deps, kb_id, n
        self.marked_at: float | None = None
        self.gone_at: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(POLL_S):
            counts = self.deps.docs.count_by_status(self.kb_id)
            deleted = counts.get("deleted", 0)
            if self.marked_at is None and deleted + counts.get("deleting", 0) >= self.n:
                self.marked_at = time.monotonic()
            if deleted >= self.n:
                pages = self.deps.pages.counts_by_type(self.kb_id)
                if sum(v for k, v in pages.items() if k != "index") == 0:
                    self.gone_at = time.monotonic()
                    return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--timeout-s", type=float, default=900)
    args = parser.parse_args()
    kb = f"delete-{args.docs}-{int(time.time())}"
    from kbwiki.command import command_deps, services

    subprocess.run([*KBWIKI, "migrate"], cwd=ROOT, check=True, capture_output=True)
    # this process holds the servers (the embedded default starts them here) for the whole run, so
    # the commands below, the worker included, all attach to the same ones
    with tempfile.TemporaryDirectory() as tmp, services():
        deps = command_deps()
        folder, log = Path(tmp) / "docs", Path(tmp) / "worker.log"
        uris = write_corpus(folder, args.docs)
        with log.open("ab") as out:
            worker = subprocess.Popen([*KBWIKI, "worker"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            started = time.monotonic()
            quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            timeout = ["--timeout", str(args.timeout_s)]
            ingest = subprocess.run([*KBWIKI, "ingest", str(folder), "--kb", kb, "--wait", *timeout], cwd=ROOT, **quiet)
            ingest_s = time.monotonic() - started
            kb_row = deps.kbs.get_by_name(1, kb)
            before = {"documents": deps.docs.count_by_status(kb_row.id), "pages": deps.pages.counts_by_type(kb_row.id)}
            watch = Watch(deps, kb_row.id, args.docs)
            started = time.monotonic()
            watch.start()
            delete = subprocess.run(
                [*KBWIKI, "delete", "--kb", kb, "--wait", *timeout, *uris],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            wait_s = time.monotonic() - started
            watch.join(args.timeout_s)
            watch.stop.set()
        finally:
            worker.terminate()  # the command forwards it; workers finish their messages, then servers stop
            worker.wait(timeout=120)
        after = {"documents": deps.docs.count_by_status(kb_row.id), "pages": deps.pages.counts_by_type(kb_row.id)}
    printed = sum(line.startswith("deleting ") for line in delete.stdout.splitlines())
    report = {
        "kb": kb,
        "docs": args.docs,
        "ingest_s": round(ingest_s, 1),
        "ingest_rc": ingest.returncode,
        "before": before,
        "delete_rc": delete.returncode,
        "printed": printed,
        "marked_s": round(watch.marked_at - started, 1) if watch.marked_at else None,
        "gone_s": round(watch.gone_at - started, 1) if watch.gone_at else None,
        "wait_s": round(wait_s, 1),
        "after": after,
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
