"""Benchmark: the LLM pipeline's throughput against a fake model with a fixed latency and a
concurrency limit (issue 16, "Must show").

Usage: DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/llm_pipeline.py MODE [options]

Modes (two ``kbwiki worker`` processes, ``KBWIKI_EXTRACTOR=llm``, a fresh KB each run):

- ``a``: ``--docs 500 --latency 0.2 --concurrency 8``: the first N linux-doc files into an empty KB.
- ``b``: the same N files added to a KB that already has about ``--seed-pages`` (5,000) pages: a
  seed KB built once with the offline extractor from the linux-doc files after the first N (kept
  in the database under the name ``llm-pipeline-seed-<pages>``, reused by later runs) is cloned
  (``repos.bench.BenchKbRepository.clone_kb``: documents, pages, links, title keys) into the run's KB.
- ``c``: a hub: N synthetic documents of one size that all name one entity; prints the model's
  tokens per document from the 10th to the Nth, and the hub page's stored size at each update.
- ``d``: ``--latency 0``: the first ``--docs`` (1,000) linux-doc files of at least 200 characters
  with an instant model: documents per second and the last 50-document batch's time ÷ the first's.

The fake model (``FakeModel``) is the tests' scripted OpenAI-compatible server
(``tests.support.llm_server``) answering every map call with ``realistic`` after ``--latency``
seconds; a call arriving while ``--concurrency`` calls are in flight gets a 429 with
``Retry-After`` (``--retry-after``, default the latency) at once, and is counted. Printed: wall
time of ``kbwiki ingest --wait`` (submission to every lane empty), the model phase (first call to
last answer), calls and tokens in/out per document, the bound calls × L ÷ C and wall ÷ bound,
mean and peak calls in flight, 429s and dead letters.

Results of session 9 (page leads, linking in rounds during a model-paced ingest; the machine
otherwise quiet; every run ``--backlog --env KBWIKI_LLM_MAX_CONCURRENCY=8``, fresh database, Redis
db 12 with a key prefix of its own; 420 of the first 500 linux-doc files are stored, the rest are
near-empty):

- ``a --docs 500`` (L 200 ms, C 8): 558 calls (478 map, 31 merge, 40 lead, 9 intro), 1.329 calls,
  2,894 tokens in and 861 out per document; bound 14.0 s; wall 27.5 s (1.97 x), model phase 22.0 s
  (1.58 x), 5.13 calls in flight. The same files with an instant model (``--latency 0``): wall
  28.3 s, the machine's cores 87 % busy (workers 19.0 CPU-s, the rest PostgreSQL and Redis): on 2
  cores the pipeline's own work takes longer than the model's bound, and L = 200 ms adds nothing
  to the wall (27.5 s against 28.3 s).
- ``a --docs 500 --latency 1.0``: 579 calls, 1.379 per document; bound 72.4 s; wall 82.3 s
  (1.14 x; 1.15 in a second run), model phase 79.3 s (1.10 x), 7.32 calls in flight; cores 44 % busy; every lane empty
  3.2 s after the last answer (session 7: 1.29 x, 20-26 s of linking after it).
- ``b --docs 500`` (into a clone of a 5,078-page KB): 1.367 calls, 2,953 tokens in, 860 out per
  document; map calls 1.121 per document at 2,356 tokens in (a: 1.136 at 2,339): equal; merge 0.114
  (a: 0.074) and lead 0.110 (a: 0.095) calls per document rise a little with the KB (more near
  names, more pages with several sources).
- ``c --docs 500`` (hub): model tokens per document 10th 927, 500th 1,001 (1.08); the hub's lead
  was written once (its first four contributions never changed after the first round).
- ``d`` (1,000 files of at least 200 characters, instant model): 915 documents in 46.7 s, 19.6 per
  second (69.0 s before ``OP_ROUND``); 50-document batches first 7.6 s, last 1.3 s (0.17); 1,178
  calls (995 map, 78 merge, 92 lead, 13 intro); the cores 92 % busy.

Earlier results (2 cores shared with four other benchmarking sessions, load average 6-9 throughout;
DATABASE_URL=postgresql://postgres@127.0.0.1:5432/<db> REDIS_URL=redis://127.0.0.1:6379/12, plus
KBWIKI_REDIS_NAMESPACE / KBWIKI_KEY_PREFIX of the run's own; 467 of the first 500 linux-doc files
are stored, 33 are near-empty):

- ``a --docs 500 --backlog`` (L 200 ms, C 8, ``-p 2 -t 8``, 12 map slots): 518 calls, 1.109 calls,
  2,420 tokens in and 803 out per document; bound 13.0 s; model phase 24.9 s (1.92 × the bound),
  mean 4.34 calls in flight, 22 429s, 0 dead letters; wall to every lane empty 64.3 s (4.97 ×: the
  cross-link round after the last document is 40 s of it); 1.84 × (4.46 in flight) in a quieter
  minute (load 3.5). Before the changes of docs/decisions.md "LLM pipeline throughput", without
  ``--backlog``: 6 slots (80 documents) 3.61 × on the model phase, mean 2.29 in flight, never more
  than 6; 16 slots refilled through ``wiki_ingest`` (200 documents) 2.09 ×, mean 3.98.
  ``--threads 4`` (8 threads, no 429): 2.74 ×, 3.13 in flight;
  ``--threads 12 --env KBWIKI_INGEST_LLM_MAP_PARALLEL=24``: 1.48 ×, 5.64 in flight, 195 429s.
  The model phase is CPU-bound here: each map spends 220-450 ms of its own beside its 222 ms of
  model time, and mode ``d`` (no model time at all) maps about 26 documents per second.
- ``a --docs 500 --backlog --latency 0.5``: bound 32.4 s, model phase 43.6 s (1.35 ×), 6.01 in
  flight, 95 429s.
- ``a --docs 500 --backlog --latency 1.0``: bound 64.8 s, model phase 76.0 s (1.17 ×), mean 6.84
  in flight, 123 429s (12 slots against C 8: each waits Retry-After, 1 s), wall 87.3 s (1.35 ×).
- ``b --docs 500 --backlog`` (the same 500 into a clone of a 5,078-page KB): 1.109 calls, 2,451
  tokens in and 817 out per document (a: 1.109, 2,420, 803: existing pages are offered as at most
  40 handles), model phase 29.6 s (2.29 × under load 8.9), 14 429s, 0 dead letters. The seed:
  the 2,683 linux-doc files after the first 500 with the offline extractor (4,174 pages, 498 s,
  once) and 246 filler documents (5,078 pages).
- ``c --docs 500``: model tokens per document 10th 927, 500th 1,001 (1.08; prompt tokens 496 and
  498: the model never sees the hub page's text); the hub page was written 19 times, from 36 to
  500 sources: content 6.2 to 7.1 KB (20 sources shown), facts 1.7 KB (20 kept), source_refs
  1.6 to 21.4 KB; bytes written per update 10th (182 sources) 15.8 KB, last 30.3 KB (1.92): the
  list of every source in the page row grows by about 43 bytes per source.
- ``d`` (the first 1,000 linux-doc files of at least 200 characters, instant model): 962 stored,
  1,042 calls; 162.2 s, 5.93 documents settled per second; 50-document batches first 10.6 s, last
  8.2 s (0.78; median 7.6 s); every map done by 41 s, the rest is reduce (one batch per KB at a
  time, 5-10 s per 50 documents on the loaded machine) and the cross-link round.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.ingest_linux import fetch_corpus  # noqa: E402
from repos.bench import BenchKbRepository, KbProbe  # noqa: E402
from repos.db import make_pool  # noqa: E402
from tests.support.llm_server import (  # noqa: E402
    ScriptedLLM,
    error,
    is_intro_request,
    is_lead_request,
    is_merge_request,
    realistic,
)

KBWIKI = [str(ROOT / ".venv/bin/kbwiki")]
TENANT = 1
HUB = "Zephyr Hub"


@dataclass
class Call:
    """One answered call: when it arrived and left (``time.monotonic``), its kind and tokens."""

    start: float
    end: float
    kind: str
    title: str
    prompt_tokens: int
    completion_tokens: int


@dataclass
class FakeModel:
    """A responder for ``ScriptedLLM``: ``latency_s`` per call, at most ``concurrency`` in flight
    (over it: 429 with ``Retry-After`` / ``retry-after-ms`` of ``retry_after_s``, counted in
    ``rejected``). Every call gets the tests' ``realistic`` answer (a merge call "every item new",
    the index introduction a sentence) and is counted by kind (map, merge, intro)."""

    latency_s: float
    concurrency: int
    retry_after_s: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    peak: int = 0
    rejected: int = 0
    calls: list[Call] = field(default_factory=list)

    def __call__(self, request: dict) -> dict:
        with self.lock:
            if self.in_flight >= self.concurrency:
                self.rejected += 1
                wait = self.retry_after_s
                return error(
                    429,
                    "Rate limit reached: too many requests in flight",
                    headers={"Retry-After": str(max(math.ceil(wait), 0)), "retry-after-ms": str(int(wait * 1000))},
                )
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        start = time.monotonic()
        try:
            if self.latency_s:
                time.sleep(self.latency_s)
            user = next((m["content"] for m in request["messages"] if m["role"] == "user"), "")
            if '<document handle="d1" title="' in user:
                kind = "map"
                title = user.split('<document handle="d1" title="', 1)[1].split('">', 1)[0]
                response = realistic(request)
            else:  # a merge call ("every item new"), page leads or the index introduction, as the tests answer them
                kind = (
                    "merge"
                    if is_merge_request(request)
                    else "lead"
                    if is_lead_request(request)
                    else "intro"
                    if is_intro_request(request)
                    else "other"
                )
                title = ""
                response = realistic(request)
        finally:
            with self.lock:
                self.in_flight -= 1
        usage = response["json"]["usage"]
        with self.lock:
            self.calls.append(
                Call(start, time.monotonic(), kind, title, usage["prompt_tokens"], usage["completion_tokens"])
            )
        return response


class Cpu:
    """CPU seconds over the timed run: the worker processes', this process's (the fake model server,
    the probes) and the whole machine's busy share of its cores, to tell a CPU-bound run from one
    the model paces."""

    def __init__(self, workers: Workers) -> None:
        self.workers = workers
        self.start = (workers.cpu_s(), psutil.Process().cpu_times(), psutil.cpu_times())

    def stop(self) -> None:
        self.end = (self.workers.cpu_s(), psutil.Process().cpu_times(), psutil.cpu_times())

    def describe(self, elapsed: float) -> str:
        (w0, s0, m0), (w1, s1, m1) = self.start, self.end
        own = (s1.user + s1.system) - (s0.user + s0.system)
        busy = (sum(m1) - m1.idle - getattr(m1, "iowait", 0)) - (sum(m0) - m0.idle - getattr(m0, "iowait", 0))
        cores = psutil.cpu_count()
        return (
            f"CPU over the run: workers {w1 - w0:.1f} s, fake model and probes {own:.1f} s; machine busy"
            f" {busy:.1f} s of {elapsed * cores:.1f} ({cores} cores, {100 * busy / (elapsed * cores):.0f} %)"
        )


def kbwiki(*args: str, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run([*KBWIKI, *args], cwd=ROOT, env=env, check=check, capture_output=True, text=True)


class Workers:
    """``kbwiki worker -p P -t T`` in the background for the block, stopped (SIGTERM) after it."""

    def __init__(self, env: dict, processes: int, threads: int, log_path: Path) -> None:
        self.env, self.processes, self.threads, self.log_path = env, processes, threads, log_path

    def __enter__(self) -> Workers:
        self.log = open(self.log_path, "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [*KBWIKI, "worker", "-p", str(self.processes), "-t", str(self.threads)],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        # Timed runs start once every worker process heartbeats (imports take seconds on a busy machine).
        probe = KbProbe(self.env["DATABASE_URL"], "")
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            pids = [p.pid for p in psutil.Process(self.proc.pid).children(recursive=True)]
            if len(probe.worker_ids(pids)) >= self.processes:
                return self
            time.sleep(0.2)
        raise TimeoutError(f"{self.processes} worker processes did not heartbeat within 180 s")

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the worker processes have used so far."""
        total = 0.0
        for proc in psutil.Process(self.proc.pid).children(recursive=True):
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def linux_doc_files(skip: int, count: int, min_chars: int) -> list[Path]:
    """linux-doc .rst files sorted by path, those shorter than ``min_chars`` left out, from the
    ``skip``-th on, at most ``count``."""
    folder = fetch_corpus()
    out = []
    for path in sorted(folder.rglob("*.rst")):
        if min_chars and len(path.read_text(errors="replace").strip()) < min_chars:
            continue
        out.append(path)
    return out[skip : skip + count]


def copy_files(paths: list[Path], into: Path, prefix: str = "doc") -> Path:
    """Copies, not symlinks: ingest skips a symlink that leads outside the folder it reads. Named
    ``<prefix>-<n>-<name>``: a document's source_uri is its path in the folder, and the run's
    documents must not replace the seed's."""
    into.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(paths):
        shutil.copyfile(path, into / f"{prefix}-{i:05d}-{path.name}")
    return into


def filler_documents(start: int, n: int, into: Path) -> Path:
    """``n`` synthetic documents, each defining three names of its own (the offline extractor makes
    a summary and three entity pages of each): they top a seed KB up to its page count."""
    into.mkdir(parents=True, exist_ok=True)
    for i in range(start, start + n):
        a, b, c = f"Quorra{i:04d} Engine", f"Vantor{i:04d} Pool", f"Keskel{i:04d} Cache"
        (into / f"filler-{i:05d}.md").write_text(
            f"# Seed note {i:04d}\n\nThe {a} is a scheduler that assigns work to the {b} of the cluster."
            f" The {b} is a set of worker threads that run the jobs the {a} hands out. The {c} is a memory"
            f" area that keeps the results of the {b} for later reads. When the {c} is full, the {a} pauses"
            f" new work until the {b} drains it. Operators watch the {a}, the {b} and the {c} on one screen.\n"
        )
    return into


def hub_documents(n: int, into: Path) -> Path:
    """``n`` synthetic documents of one size, each with two names of its own and ``HUB`` in
    several sentences (so ``realistic`` makes the hub one of each document's items)."""
    into.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        own = f"Unit{i:04d} Driver"
        other = f"Board{i:04d} Controller"
        sentences = [
            f"The {HUB} coordinates the {own} with the {other} in this setup.",
            f"Every request of the {own} passes through the {HUB} before it reaches the bus.",
            f"The {other} reports its state to the {HUB} once per second.",
            f"Configuration of the {own} is read at boot and checked by the {HUB} for errors.",
            f"When the {other} fails, the {HUB} retries the request on the spare {own}.",
            "Operators read the counters of both parts in the monitoring screen of the cluster.",
        ]
        (into / f"hub-{i:04d}.md").write_text(f"# Hub note {i:04d}\n\n" + "\n\n".join(sentences) + "\n")
    return into


class Sampler(threading.Thread):
    """Polls the hub page's stored size (``KbProbe.page_sizes``) every ``interval_s``; one row per version."""

    def __init__(self, probe: KbProbe, title: str, interval_s: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.probe, self.title, self.interval_s = probe, title, interval_s
        self.rows: dict[int, dict] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                row = self.probe.page_sizes(self.title)
            except Exception:  # a busy server: the next sample
                continue
            if row is not None:
                self.rows.setdefault(row["version"], row)


def seed_kb(repo: BenchKbRepository, base_env: dict, pages: int, skip: int, args: argparse.Namespace) -> str:
    """The id of a KB of at least ``pages`` pages built with the offline extractor from the linux-doc
    files after the first ``skip`` (in steps of 200 files; the 2,683 files after the first 500 make
    4,174 pages), topped up with ``filler_documents``; built once and kept for later runs."""
    name = f"llm-pipeline-seed-{pages}"
    kb_id = repo.kb_id(name, TENANT)
    if kb_id and repo.live_page_count(kb_id) >= pages:
        return kb_id
    env = {**base_env, "KBWIKI_EXTRACTOR": "offline"}
    files = linux_doc_files(skip, 3000, 0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, Workers(env, args.processes, 4, Path(tmp) / "seed.log"):
        # an existing seed short of pages already holds the linux-doc files: it gets filler only
        step = 0 if kb_id is None else len(files) // 200 + 1
        while True:
            kb_id = repo.kb_id(name, TENANT)
            have = repo.live_page_count(kb_id) if kb_id else 0
            if have >= pages:
                break
            done = step * 200
            if done < len(files):
                folder = copy_files(files[done : done + 200], Path(tmp) / f"seed-{step}", prefix=f"seed{step}")
            else:
                folder = filler_documents(step * 1000, (pages - have) // 4 + 20, Path(tmp) / f"seed-{step}")
            # each step is a folder of its own (file names prefixed by step): it becomes the KB's root
            kbwiki("ingest", str(folder), "--kb", name, "--wait", "--set-root", env=env)
            step += 1
    took = time.monotonic() - started
    print(f"seed KB {name}: {repo.live_page_count(kb_id)} pages (offline extractor, {took:.0f} s)")
    return kb_id


def batch_times(settled: list[float], start: float, size: int = 50) -> list[float]:
    """Seconds each consecutive ``size`` settled documents took (``settled``: sorted times)."""
    marks = [start] + [settled[i] for i in range(size - 1, len(settled), size)]
    return [b - a for a, b in zip(marks, marks[1:], strict=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices="abcd")
    parser.add_argument("--docs", type=int, default=None, help="default 500, 1000 for mode d")
    parser.add_argument("--latency", type=float, default=None, help="seconds per call (default 0.2, 0 for mode d)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--retry-after", type=float, default=None, help="seconds a 429 asks to wait (default L)")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seed-pages", type=int, default=5000)
    parser.add_argument("--min-chars", type=int, default=None, help="default 200 for mode d, else 0")
    parser.add_argument(
        "--backlog",
        action="store_true",
        help="queue every document before the workers start; time from the workers' start (a backlog drained)",
    )
    parser.add_argument("--log", type=Path, default=None, help="append the workers' log here (default: discarded)")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the workers (repeatable)")
    args = parser.parse_args()
    docs = args.docs or (1000 if args.mode == "d" else 500)
    latency = args.latency if args.latency is not None else (0.0 if args.mode == "d" else 0.2)
    min_chars = args.min_chars if args.min_chars is not None else (200 if args.mode == "d" else 0)
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("set DATABASE_URL and REDIS_URL (the bench reads the KB back from PostgreSQL)")
    url = os.environ["DATABASE_URL"]
    model = FakeModel(latency, args.concurrency, latency if args.retry_after is None else args.retry_after)
    with ScriptedLLM(model) as server, tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "KBWIKI_EXTRACTOR": "llm",
            "KBWIKI_LLM_BASE_URL": server.url,
            "KBWIKI_LLM_MODEL": "fake",
            "KBWIKI_LLM_API_KEY": "none",
            **dict(kv.split("=", 1) for kv in args.env),
        }
        kbwiki("migrate", env=env)
        pool = make_pool(url, min_size=1, max_size=2)
        repo = BenchKbRepository(pool)
        if args.mode == "c":
            folder = hub_documents(docs, Path(tmp) / "docs")
        else:
            folder = copy_files(linux_doc_files(0, docs, min_chars), Path(tmp) / "docs")
        kb_name = f"llm-pipeline-{args.mode}-{int(time.time())}"
        kb_id = repo.create_kb(TENANT, kb_name)
        if args.mode == "b":
            seed_id = seed_kb(
                repo, {k: v for k, v in env.items() if not k.startswith("KBWIKI_LLM")}, args.seed_pages, docs, args
            )
            repo.clone_kb(seed_id, kb_id)
            print(f"KB {kb_name} starts with {repo.live_page_count(kb_id)} live pages (a clone of the seed)")
        pool.close()
        probe = KbProbe(url, kb_id)
        sampler = Sampler(probe, HUB)
        run_started = time.time()
        if args.backlog:  # queued before any worker runs: the timer starts with the workers
            ingest = kbwiki("ingest", str(folder), "--kb", kb_name, env=env, check=False)
        with Workers(env, args.processes, args.threads, args.log or Path(tmp) / "worker.log") as workers:
            if args.mode == "c":
                sampler.start()
            cpu = Cpu(workers)
            started = time.monotonic()
            wall_started = time.time()
            if args.backlog:  # as ``kbwiki ingest --wait`` does: until every lane of the KB is empty
                deadline = started + 3600
                while probe.progress()["rows"] and time.monotonic() < deadline:
                    time.sleep(0.2)
            else:
                ingest = kbwiki("ingest", str(folder), "--kb", kb_name, "--wait", env=env, check=False)
            elapsed = time.monotonic() - started
            cpu.stop()
            sampler.stop.set()
            status = json.loads(kbwiki("status", "--kb", kb_name, "--json", env=env).stdout)
        if ingest.returncode:
            sys.exit(f"kbwiki ingest failed:\n{ingest.stdout}\n{ingest.stderr}")
        report(args, docs, latency, model, elapsed, started, wall_started, run_started, ingest, status, probe, sampler)
        print(cpu.describe(elapsed))


def report(  # noqa: PLR0913
    args, docs, latency, model, elapsed, started, wall_started, run_started, ingest, status, probe, sampler
) -> None:
    """Print the run's figures (see the module's docstring)."""
    calls = model.calls
    maps = [c for c in calls if c.kind == "map"]
    others: dict[str, int] = defaultdict(int)
    for c in calls:
        if c.kind != "map":
            others[c.kind] += 1
    # the run's documents only (a cloned seed's are older)
    run_docs = [r for r in probe.settle_times() if r["created_at"].timestamp() >= run_started - 1]
    settled_docs = [r for r in run_docs if r["status"] in ("done", "skipped")]
    n = max(len(settled_docs), 1)
    tin = sum(c.prompt_tokens for c in calls)
    tout = sum(c.completion_tokens for c in calls)
    print(
        f"mode {args.mode}: {docs} documents, L = {latency * 1000:.0f} ms, C = {args.concurrency},"
        f" workers -p {args.processes} -t {args.threads}, {' '.join(args.env) or 'default settings'}"
    )
    print("ingest: " + " | ".join(line for line in ingest.stdout.splitlines() if not line.startswith("  "))[-300:])
    print("documents of the KB: " + ", ".join(f"{k}={v}" for k, v in sorted(status["documents"].items())))
    print(f"documents of this run: {len(run_docs)}, settled {len(settled_docs)}")
    print("pages by type: " + ", ".join(f"{k}={v}" for k, v in sorted(status["pages"].items())))
    print(f"dead letters: {status['dead_letters']}   429s: {model.rejected}")
    print(f"machine load average after the run (1, 5, 15 min): {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    what = "workers' start" if args.backlog else "submission"
    print(f"wall ({what} to every lane of the KB empty): {elapsed:.1f} s")
    print(f"calls: {len(calls)} ({len(maps)} map" + "".join(f", {v} {k!r}" for k, v in others.items()) + ")")
    print(f"calls per document: {len(calls) / n:.3f}   tokens in per document: {tin / n:.0f}   out: {tout / n:.0f}")
    kinds: dict[str, list[Call]] = defaultdict(list)
    for c in calls:
        kinds[c.kind].append(c)
    print(
        "by kind (calls per document, tokens in and out per call): "
        + "; ".join(
            f"{kind} {len(cs) / n:.3f}, {sum(c.prompt_tokens for c in cs) / len(cs):.0f} / "
            f"{sum(c.completion_tokens for c in cs) / len(cs):.0f}"
            for kind, cs in sorted(kinds.items())
        )
    )
    if calls:
        first, last = min(c.start for c in calls), max(c.end for c in calls)
        phase = last - first
        busy = sum(c.end - c.start for c in calls)
        print(
            f"model phase (first call to last answer): {phase:.1f} s, from {first - started:.1f} s to"
            f" {last - started:.1f} s; mean calls in flight {busy / max(phase, 1e-9):.2f}, peak {model.peak}"
        )
        if latency:
            bound = len(calls) * latency / args.concurrency
            print(
                f"bound calls x L / C = {len(calls)} x {latency} / {args.concurrency} = {bound:.1f} s;"
                f" wall / bound = {elapsed / bound:.2f}; model phase / bound = {phase / bound:.2f}"
            )
    created = sorted(r["created_at"].timestamp() - wall_started for r in run_docs)
    if created:
        print(f"submission: documents stored from {created[0]:.1f} s to {created[-1]:.1f} s after the start")
    settled = sorted(r["updated_at"].timestamp() for r in settled_docs)
    if settled:
        print(f"documents settled per second: {len(settled) / elapsed:.2f} (over the wall time)")
        batches = batch_times(settled, wall_started)
        if len(batches) >= 2:
            print(
                f"50-document batches: first {batches[0]:.1f} s, last {batches[-1]:.1f} s,"
                f" last / first = {batches[-1] / batches[0]:.2f}, median {statistics.median(batches):.1f} s;"
                f" all: {' '.join(f'{b:.1f}' for b in batches)}"
            )
    if args.mode == "c":
        hub_report(maps, sampler)


def hub_report(maps: list[Call], sampler: Sampler) -> None:
    by_doc: dict[int, list[Call]] = defaultdict(list)
    for c in maps:
        if c.title.startswith("Hub note "):
            by_doc[int(c.title.split()[-1])].append(c)
    order = sorted(by_doc, key=lambda i: min(c.start for c in by_doc[i]))  # in the order the model saw them
    tokens = [sum(c.prompt_tokens + c.completion_tokens for c in by_doc[i]) for i in order]
    prompts = [sum(c.prompt_tokens for c in by_doc[i]) for i in order]
    if len(tokens) >= 10:
        print(
            f"hub: model tokens per document (in+out) 10th {tokens[9]}, last ({len(tokens)}th) {tokens[-1]}:"
            f" last / 10th = {tokens[-1] / tokens[9]:.2f}; prompt tokens 10th {prompts[9]}, last {prompts[-1]}"
        )
    rows = [sampler.rows[v] for v in sorted(sampler.rows)]
    if rows:
        print(f"hub page {rows[-1]['slug']!r}: {len(rows)} versions seen (polled every {sampler.interval_s} s)")
        tenth = rows[min(9, len(rows) - 1)]
        last = rows[-1]
        for label, row in (("first seen", rows[0]), (f"update {tenth['version']}", tenth), ("last", last)):
            print(
                f"  {label}: version {row['version']}, {row['sources']} sources, content {row['content']} B,"
                f" source_refs {row['refs_bytes']} B, facts {row['facts_bytes']} B"
            )
        written = lambda r: r["content"] + r["refs_bytes"] + r["facts_bytes"]  # noqa: E731
        ratio = written(last) / written(tenth)
        print(f"  bytes written per update (content + source_refs + facts), last / 10th = {ratio:.2f}")
        print("  sources:bytes by update: " + " ".join(f"{r['sources']}:{written(r)}" for r in rows))


if __name__ == "__main__":
    main()
