"""Benchmark: 40,000 real documents end to end with the README's commands, in flat memory (issue 24).

Usage: .venv/bin/python bench/e2e_40k.py [--docs 40000] [--every 1000] [--out bench/results]

Writes the first ``--docs`` sections that ``bench/scale.py`` cuts from linux-doc and the Python
standard library (43k, deterministic order) as Markdown files into a temporary folder, starts
``kbwiki worker`` with its default settings (the embedded default, or DATABASE_URL/REDIS_URL when
set), and times ``kbwiki ingest FOLDER --kb NAME --wait``. Every ``--every`` documents settled
(``kbwiki status --json``, polled every 5 s) it records: documents a second since the last mark,
the reduce batches finished since (``wiki_reduce`` ``actor.finished`` lines of the worker's JSON
log: median and p95 ``duration_ms``), each worker process's RSS (MiB, now and peak so far),
PostgreSQL's database size (MiB) and lane rows. Then it times, each with its peak RSS (process
tree): ``kbwiki lint``, ``kbwiki export``, a re-ingest of the unchanged folder (and how many
``wiki_map`` messages it caused: an unchanged document needs none) and ``kbwiki delete`` of the
first 1,000 documents with ``--wait``.

Prints one JSON report (also written to ``OUT/e2e-<docs>.json``) and, with matplotlib installed
(``pip install -e ".[bench]"``), plots reduce batch time and worker RSS against documents ingested
to ``OUT/e2e-<docs>.png``. When the server loads ``pg_stat_statements``, the report holds the
statements that took the most time during the ingest. Targets (issue 24): 0 lost, 0 dead
letters, 0 dead links; last/first reduce batch time <= 1.2; RSS at the end / at the first mark
<= 1.1 and <= 300 MiB a worker.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ingest_linux import KBWIKI, ROOT  # noqa: E402
from bench.scale import sections  # noqa: E402
from bench.web import measure, start_server  # noqa: E402

POLL_S = 5.0
DELETED = 1000
#: --wait past the commands' default timeouts (an hour for ingest): 40,000 documents may take longer.
WAIT = ["--wait", "--timeout", "14400"]
#: The commands' output and progress bars stay out of the report (their exit codes are in it).
QUIET = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
#: Document statuses the wiki is done with.
SETTLED = ("done", "skipped", "failed")
#: Requests per kind of ``bench/web.py``'s reads on the ingested KB.
WEB_REQUESTS = 200


def write_corpus(folder: Path, n: int) -> list[str]:
    """The first ``n`` sections as ``NNNNN.md`` files under ``folder``; their names, in order.
    Raises SystemExit when the corpus has fewer."""
    items = sections()[:n]
    if len(items) < n:
        raise SystemExit(f"the corpus has {len(items)} sections, fewer than --docs {n}")
    names = []
    for i, (title, text) in enumerate(items):
        name = f"{i:05d}.md"
        body = text if text.startswith("#") else f"# {title}\n\n{text}"
        (folder / name).write_text(body + "\n", encoding="utf-8")
        names.append(name)
    return names


def status(kb: str) -> dict:
    """``kbwiki status --kb KB --json`` as a dict."""
    out = subprocess.run([*KBWIKI, "status", "--kb", kb, "--json"], cwd=ROOT, capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else {}


def workers(root: psutil.Process) -> dict[int, int]:
    """RSS (bytes) of each Dramatiq worker process under ``root``."""
    out = {}
    for proc in root.children(recursive=True):
        try:
            if "dramatiq" in " ".join(proc.cmdline()):
                out[proc.pid] = proc.memory_info().rss
        except psutil.NoSuchProcess:
            continue
    return out


def log_rows(log: Path, event: str, since: float, until: float) -> list[dict]:
    """The worker's JSON log lines with ``"event": event`` logged in [since, until) (epoch s).
    Lines two processes wrote into each other are skipped."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        if f'"{event}"' not in line:
            continue
        try:
            row = json.loads(line)
            at = time.mktime(time.strptime(row["timestamp"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
        except (ValueError, KeyError):
            continue
        if row.get("event") == event and since <= at < until:
            out.append(row)
    return out


def finished(log: Path, actor: str, since: float, until: float) -> list[dict]:
    """The ``actor.finished`` lines of ``actor``'s messages in [since, until)."""
    return [r for r in log_rows(log, "actor.finished", since, until) if r.get("actor") == actor]


def batches(log: Path, since: float, until: float) -> dict:
    """The reduce batches that reduced documents in [since, until): how many, their median and
    p95 ``duration_ms``, and the median time per document (ms). Batches that only found their
    rows taken, or only retracted, are left out: they time the queue, not the reduce."""
    rows = [r for r in log_rows(log, "reduce.batch", since, until) if r.get("documents")]
    times = [float(r["duration_ms"]) for r in rows if "duration_ms" in r]
    per_doc = [float(r["duration_ms"]) / r["documents"] for r in rows if "duration_ms" in r]
    return {
        "reduce_batches": len(times),
        "reduce_median_ms": round(statistics.median(times), 1) if times else None,
        "reduce_p95_ms": p95(times),
        "reduce_ms_per_doc": round(statistics.median(per_doc), 2) if per_doc else None,
    }


def statements_reset(pool) -> bool:
    """Start ``pg_stat_statements`` afresh; False when the server does not load it (it needs
    ``shared_preload_libraries = 'pg_stat_statements'`` in postgresql.conf)."""
    with pool.connection() as conn:
        loaded = conn.execute(
            "SELECT 'pg_stat_statements' = ANY(string_to_array(current_setting('shared_preload_libraries'), ',')) AS on"
        ).fetchone()["on"]
        if loaded:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("SELECT pg_stat_statements_reset()")
    return loaded


def top_statements(pool, n: int = 12) -> list[dict]:
    """The ``n`` statements with the most total execution time since ``statements_reset``."""
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query, calls,"
            " round(total_exec_time::numeric / 1000, 1) AS total_s, round(mean_exec_time::numeric, 2) AS mean_ms, rows"
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY total_exec_time DESC LIMIT %s",
            (n,),
        ).fetchall()
    return [{k: (float(v) if k in ("total_s", "mean_ms") else v) for k, v in r.items()} for r in rows]


def db_size_mib(pool) -> float:
    """PostgreSQL's size of kbwiki's database (MiB)."""
    with pool.connection() as conn:
        return conn.execute("SELECT pg_database_size(current_database()) AS size").fetchone()["size"] / 2**20


def timed(cmd: list[str]) -> dict:
    """Run ``cmd``; its wall time (s), exit code and the peak RSS (MiB) of its process tree."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, **QUIET)
    peak, ps = 0, psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            peak = max(peak, sum(p.memory_info().rss for p in [ps, *ps.children(recursive=True)]))
        except psutil.NoSuchProcess:
            pass
        time.sleep(0.1)
    return {"s": round(time.monotonic() - started, 1), "rc": proc.returncode, "peak_rss_mib": round(peak / 2**20)}


def p95(values: list[float]) -> float | None:
    return round(statistics.quantiles(values, n=20)[-1], 1) if len(values) >= 2 else None


def ingest_with_marks(folder: Path, kb: str, n: int, every: int, worker: psutil.Process, log: Path, pool) -> dict:
    """Run ``kbwiki ingest --wait`` of the ``n`` documents of ``folder`` and record a mark every
    ``every`` documents settled."""
    marks: list[dict] = []
    peaks: dict[int, int] = {}
    started = time.monotonic()
    last_t, last_docs, last_epoch = started, 0, time.time()
    proc = subprocess.Popen([*KBWIKI, "ingest", str(folder), "--kb", kb, *WAIT], cwd=ROOT, **QUIET)
    while True:
        done = proc.poll() is not None
        rss = workers(worker)
        for pid, value in rss.items():
            peaks[pid] = max(peaks.get(pid, 0), value)
        report = status(kb)
        lanes = report.get("lanes") or {}
        # documents the wiki is done with: written, or skipped with a reason, or failed for good
        settled = sum(report.get("documents", {}).get(s, 0) for s in SETTLED)
        if settled >= (last_docs // every + 1) * every or (done and settled > last_docs):
            now, epoch = time.monotonic(), time.time()
            marks.append(
                {
                    "docs": settled,
                    "s": round(now - started, 1),
                    "docs_per_s": round((settled - last_docs) / max(now - last_t, 1e-9), 2),
                    **batches(log, last_epoch, epoch),
                    "rss_mib": {str(pid): round(v / 2**20) for pid, v in sorted(rss.items())},
                    "peak_rss_mib": {str(pid): round(v / 2**20) for pid, v in sorted(peaks.items())},
                    "db_mib": round(db_size_mib(pool)),
                    "lane_rows": sum(lanes.values()),
                }
            )
            print(json.dumps(marks[-1]), flush=True)
            last_t, last_docs, last_epoch = now, settled, epoch
        if done:
            break
        time.sleep(POLL_S)
    return {
        "rc": proc.returncode,
        "s": round(time.monotonic() - started, 1),
        "marks": marks,
        "peak_rss_mib": {str(p): round(v / 2**20) for p, v in peaks.items()},
    }


def web_reads(pool, kb_id: str) -> dict:
    """``bench/web.py``'s reads (page view, backlinks, search, graph; ``WEB_REQUESTS`` each) on the
    KB, served by the web app in a subprocess: p50/p95/max ms per kind."""
    from kbwiki.command import command_deps
    from repos.bench import BenchKbRepository

    proc, base = start_server(command_deps().settings.database_url)
    try:
        sample = BenchKbRepository(pool).sample_pages(kb_id, WEB_REQUESTS, seed="web")
        return measure(base, {0: (kb_id, sample)}, WEB_REQUESTS)[0]
    finally:
        proc.terminate()
        proc.wait(10)


def plot(report: dict, path: Path) -> bool:
    """Reduce batch time and worker RSS against documents ingested, as a PNG; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    marks = report["ingest"]["marks"]
    docs = [m["docs"] for m in marks]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
    top.plot(docs, [m["reduce_median_ms"] for m in marks], label="median")
    top.plot(docs, [m["reduce_p95_ms"] for m in marks], label="p95")
    top.set_ylabel("reduce batch (ms)")
    top.legend()
    for pid in sorted({pid for m in marks for pid in m["rss_mib"]}):
        bottom.plot(docs, [m["rss_mib"].get(pid) for m in marks], label=f"worker {pid}")
    bottom.axhline(300, linestyle="--", color="grey")
    bottom.set_ylabel("RSS (MiB)")
    bottom.set_xlabel("documents ingested")
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=40_000)
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    kb = f"e2e-{args.docs}-{int(time.time())}"
    from kbwiki.command import command_deps, services

    # this process holds the servers (the embedded default starts them here) for the whole run, so
    # the commands below, the worker included, all attach to the same ones
    with tempfile.TemporaryDirectory() as tmp, services():
        pool = command_deps().pages.pool
        folder, log = Path(tmp) / "docs", Path(tmp) / "worker.log"
        folder.mkdir()
        names = write_corpus(folder, args.docs)
        print(f"kb: {kb}, {len(names)} documents in {folder}", flush=True)
        with log.open("ab") as out:
            worker = subprocess.Popen([*KBWIKI, "worker"], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        try:
            report: dict = {"kb": kb, "docs": args.docs}
            workers_root = psutil.Process(worker.pid)
            profiled = statements_reset(pool)
            report["ingest"] = ingest_with_marks(folder, kb, args.docs, args.every, workers_root, log, pool)
            if profiled:
                report["top_statements"] = top_statements(pool)
            report["status"] = status(kb)
            report["web"] = web_reads(pool, report["status"]["knowledge_base"]["id"])
            report["lint"] = timed([*KBWIKI, "lint", "--kb", kb])
            report["export"] = timed([*KBWIKI, "export", "--kb", kb, str(Path(tmp) / "vault")])
            since = time.time()
            report["reingest"] = timed([*KBWIKI, "ingest", str(folder), "--kb", kb, *WAIT])
            report["reingest"]["map_messages"] = len(finished(log, "wiki_map", since, time.time() + 1))
            report["delete"] = timed([*KBWIKI, "delete", "--kb", kb, *WAIT, *names[:DELETED]])
            report["status_after_delete"] = status(kb)
        finally:
            worker.terminate()  # the command forwards it; workers finish their messages, then servers stop
            worker.wait(timeout=120)
    marks = [m for m in report["ingest"]["marks"] if m["reduce_median_ms"]]
    if len(marks) >= 2:
        first, last = marks[0], marks[-1]
        report["reduce_last_over_first"] = round(last["reduce_median_ms"] / first["reduce_median_ms"], 2)
        report["reduce_per_doc_last_over_first"] = round(last["reduce_ms_per_doc"] / first["reduce_ms_per_doc"], 2)
        report["rss_last_over_first"] = round(max(last["rss_mib"].values()) / max(first["rss_mib"].values()), 2)
    (args.out / f"e2e-{args.docs}.json").write_text(json.dumps(report, indent=2) + "\n")
    summary = {k: report[k] for k in ("lint", "export", "reingest", "delete") if k in report}
    for key in ("status", "status_after_delete"):
        summary[key] = {k: report.get(key, {}).get(k) for k in ("documents", "links", "dead_letters")}
    ratios = ("reduce_last_over_first", "reduce_per_doc_last_over_first", "rss_last_over_first")
    summary |= {k: report.get(k) for k in ratios} | {"web": report.get("web")}
    print(json.dumps(summary | {"ingest_s": report["ingest"]["s"], "ingest_rc": report["ingest"]["rc"]}))
    if not plot(report, args.out / f"e2e-{args.docs}.png"):
        print('no plot: matplotlib is not installed (pip install -e ".[bench]")')


if __name__ == "__main__":
    main()
