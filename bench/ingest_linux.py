"""Benchmark: ingest the linux-doc corpus (3,183 .rst files) with one worker (2 processes × 8 threads).

Usage: .venv/bin/python bench/ingest_linux.py [--processes 2] [--threads 8] [--limit N]

Fetches the corpus with bench/corpus/linux-doc.sh, starts (or uses, with DATABASE_URL/REDIS_URL
set) the servers, starts workers, ingests into a fresh KB, waits for every lane to drain, and
prints wall time, documents per second, pages by type, links, and each worker process's peak RSS
(sampled every 0.2 s with psutil).
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]


def fetch_corpus() -> Path:
    out = subprocess.run(["bash", str(ROOT / "bench/corpus/linux-doc.sh")], check=True, capture_output=True, text=True)
    folder, count = out.stdout.strip().splitlines()[-2:]
    print(f"corpus: {count} .rst files")
    return Path(folder)


class RssSampler(threading.Thread):
    """Peak RSS (bytes) of every process in a process tree, sampled until stopped."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                procs = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            for proc in procs:
                try:
                    rss = proc.memory_info().rss
                except psutil.NoSuchProcess:
                    continue
                self.peaks[proc.pid] = max(self.peaks.get(proc.pid, 0), rss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--limit", type=int, default=None, help="ingest only the first N documents")
    args = parser.parse_args()
    folder = fetch_corpus()

    from kbwiki.cli import _deps, services
    from kbwiki.corpus import iter_folder_docs
    from kbwiki.ingest import ingest_docs, wait_for_lanes
    from kbwiki.status import kb_status
    from kbwiki.workers import start_workers, stop_workers

    with services() as settings:
        deps = _deps()
        kb = deps.kbs.get_or_create(1, f"linux-doc-{int(time.time())}")
        log_path = Path(settings.home) / "bench-worker.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        workers = start_workers(args.processes, args.threads, log_path)
        sampler = RssSampler(workers.pid)
        sampler.start()
        started = time.monotonic()
        try:
            report = ingest_docs(deps, kb, itertools.islice(iter_folder_docs(folder), args.limit))
            submitted = time.monotonic() - started
            print(f"submitted in {submitted:.1f} s: {report.describe().splitlines()[0]}")
            drained = wait_for_lanes(deps, kb, report.queued, 3600)
            elapsed = time.monotonic() - started
        finally:
            sampler.stop.set()
            stop_workers(workers)
        status = kb_status(deps, kb)
    print(f"drained: {drained}")
    print(f"wall time: {elapsed:.1f} s  ({report.queued / elapsed:.2f} docs/s)")
    print("pages by type: " + ", ".join(f"{k}={v}" for k, v in sorted(status["pages"].items())))
    print(f"links: {status['links']}  documents: {status['documents']}  dead letters: {status['dead_letters']}")
    for pid, peak in sorted(sampler.peaks.items()):
        role = "main" if pid == workers.pid else "process"
        print(f"peak RSS pid {pid} ({role}): {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
