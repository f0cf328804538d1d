"""Benchmark: ingest the linux-doc corpus (3,183 .rst files) with the README's commands.

Usage: .venv/bin/python bench/ingest_linux.py [--processes 2] [--threads 8] [--limit N]

Fetches the corpus with bench/corpus/linux-doc.sh, starts ``kbwiki worker -p 2 -t 8`` (which
starts the embedded servers, or uses DATABASE_URL/REDIS_URL when set), then times
``kbwiki ingest FOLDER --kb NAME --wait`` into a fresh KB from start to exit, and prints wall
time, documents per second, the machine's busy CPU time over the run (servers included),
``kbwiki status`` of the KB (its timestamped name first), and each worker process's peak RSS
(sampled every 0.2 s with psutil; the servers the worker started are not counted).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil

from kbwiki.services.state import home_folder
from wiki.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
KBWIKI = [str(ROOT / ".venv/bin/kbwiki")]


def fetch_corpus() -> Path:
    out = subprocess.run(["bash", str(ROOT / "bench/corpus/linux-doc.sh")], check=True, capture_output=True, text=True)
    folder, count = out.stdout.strip().splitlines()[-2:]
    print(f"corpus: {count} .rst files")
    return Path(folder)


def first_files(folder: Path, limit: int, into: Path) -> Path:
    """A folder of copies of the first ``limit`` .rst files of ``folder`` (sorted by path).

    Copies, not symlinks: ingest skips a symlink that points outside the folder it reads.
    """
    for i, path in enumerate(sorted(folder.rglob("*.rst"))[:limit]):
        shutil.copyfile(path, into / f"{i:05d}-{path.name}")
    return into


class RssSampler(threading.Thread):
    """Peak RSS (bytes) of every dramatiq process under ``pid``, sampled until stopped."""

    def __init__(self, pid: int, interval_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval_s = interval_s
        self.peaks: dict[int, int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                procs = self.root.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            for proc in procs:
                try:
                    if "dramatiq" not in " ".join(proc.cmdline()):
                        continue
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
    kb_name = f"linux-doc-{int(time.time())}"
    print(f"kb: {kb_name}")
    home = home_folder(Settings())  # the home the kbwiki commands below use
    home.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, open(home / "bench-worker.log", "ab") as log:
        if args.limit:
            folder = first_files(folder, args.limit, Path(tmp))
        worker = subprocess.Popen(
            [*KBWIKI, "worker", "-p", str(args.processes), "-t", str(args.threads)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        sampler = RssSampler(worker.pid)
        sampler.start()
        try:
            started, cpu_before = time.monotonic(), psutil.cpu_times()
            ingest = subprocess.run([*KBWIKI, "ingest", str(folder), "--kb", kb_name, "--wait"], cwd=ROOT)
            elapsed = time.monotonic() - started
            cpu = psutil.cpu_times()
            busy = sum(getattr(cpu, f) - getattr(cpu_before, f) for f in ("user", "system", "nice", "irq", "softirq"))
            status = json.loads(
                subprocess.run(
                    [*KBWIKI, "status", "--kb", kb_name, "--json"], cwd=ROOT, check=True, capture_output=True, text=True
                ).stdout
            )
        finally:
            sampler.stop.set()
            worker.terminate()  # the command forwards it; workers finish their messages, then servers stop
            worker.wait(timeout=120)
    settled = sum(status["documents"].values())
    # the progress lines above bury the name printed at the start: the report repeats it
    print(f"knowledge base: {kb_name} (kbwiki status --kb {kb_name}; kbwiki documents --kb {kb_name})")
    print(f"kbwiki ingest --wait exit code: {ingest.returncode}")
    print(f"wall time: {elapsed:.1f} s  ({settled / elapsed:.2f} documents settled per second)")
    print(
        f"machine CPU busy: {busy:.0f} core-seconds,"
        f" {busy / elapsed / psutil.cpu_count():.0%} of {psutil.cpu_count()} cores"
    )
    print("pages by type: " + ", ".join(f"{k}={v}" for k, v in sorted(status["pages"].items())))
    print(f"links: {status['links']}  documents: {status['documents']}  dead letters: {status['dead_letters']}")
    for pid, peak in sorted(sampler.peaks.items()):
        print(f"peak RSS worker process {pid}: {peak / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
