"""Benchmark: the fault run as a repeatable measurement, on private servers it starts and stops.

Usage: .venv/bin/python bench/chaos.py [--docs 2000] [--pending 300] [--deletes 1000] [--faults a,b,...]
                                       [--freeze-s 60] [--redis-outage-s 60] [--outage-s 60] [--seed 7] [--keep]

Servers: its own PostgreSQL cluster and Redis, started by ``kbwiki.services`` (the embedded
default's recipe and its supervisor) on a temporary home, removed at the end (``--keep`` keeps it).
As root the home is a tmpfs of ``--tmpfs-mb`` (so its disk can be filled) and a second "host" is
made (a network namespace joined by a veth pair); nothing else on the machine is touched.

Corpus: ``--docs`` generated documents (seeded, so every run has the same ones): short notes about
a fixed cast of tools, people and ideas, each naming a few of them, so documents share pages the
way a real KB's do.

Two runs on the same documents, each in a database of its own, each with two worker processes
(``dramatiq actors:setup_broker --processes 1``, defaults for every setting):

1. clean: every document submitted, workers drain, nothing is disturbed; then ``--deletes`` of
   them deleted;
2. chaos: the documents submitted in waves, so that ``--pending`` or more are still to do when each
   fault of ``FAULTS`` lands: kill -9 of a worker, FLUSHALL, SIGSTOP of a worker for ``--freeze-s``
   (at any moment, and caught holding an open transaction), the Redis active-batch lock deleted
   mid-batch, a PostgreSQL restart, Redis stopped (not flushed) for ``--redis-outage-s``, every
   connection slot taken while a killed worker restarts, a third worker on the second host cut off
   from both servers for ``--partition-s`` (root), the servers' disk full for ``--disk-full-s``
   (root), and a PostgreSQL outage of ``--outage-s`` during which a producer sends the last
   ``--producer-docs`` documents with ``wiki_submit.send``; then the same deletes as the clean
   run, with a worker killed -9 midway. The supervisor is paused during outages made on purpose
   (it would repair them at once) and left to repair the full disk.

Then: documents lost (sent but not stored), stuck (not done/skipped, or not deleted, when the run
settled or timed out), dead letters (any open one is wrong: the clean run has none; those resolved
because their document ended done are counted apart), for each fault the documents pending when it
landed and its stall (for outages, the time from the server's return until a document is done
again; for the others the longest time without a document done while it lasted, or after), the
seconds the deletes took, and pages (slug, type, title, cited source URIs) and links compared with
the clean run before and after the deletes. Prints one JSON report.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbwiki.services import postgres, valkey  # noqa: E402
from kbwiki.services.client import local_services, stop_home  # noqa: E402
from kbwiki.services.logs import log_since  # noqa: E402
from kbwiki.services.run_as import RunAs  # noqa: E402
from kbwiki.services.state import read_state  # noqa: E402
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
    starts them (``kbwiki.services.client.local_services`` on that home: free ports, a non-root account or
    user namespace when run as root); PostgreSQL restart and outage on demand."""

    def __init__(self, home: Path) -> None:
        from wiki.settings import Settings

        self.home = home
        self._stack = contextlib.ExitStack()
        settings = self._stack.enter_context(
            local_services(Settings(home=str(home), database_url=None, redis_url=None))
        )
        self.redis_url = settings.redis_url
        self.pg = read_state(home)["postgres"]  # port, bindir, data and the account it runs as
        # the supervisor restarts a server on the port it had (kbwiki.services.state.server_port)
        self._redis_port = int(read_state(home)["redis"]["port"])

    def database(self, name: str) -> str:
        """Create database ``name`` with every migration applied; returns its URL."""
        create_database(postgres.url(self.pg["port"], "postgres"), name, replace=True)
        url = postgres.url(self.pg["port"], name)
        apply_migrations(url)
        return url

    def start_pg(self) -> None:
        log = Path(self.pg["log"])  # <home>/pg.log, or where it links to (kbwiki.services.system_account)
        RunAs.from_entry(self.pg).run(
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
            "pg_ctl start",
            timeout=70,
            log=log,
        )

    def stop_pg(self) -> None:
        postgres.cleanup(self.pg)

    def admin_url(self) -> str:
        return postgres.url(self.pg["port"], "postgres")

    def supervisor_pid(self) -> int:
        return int(read_state(self.home)["supervisor"]["pid"])

    def redis_port(self) -> int:
        return self._redis_port

    def stop_redis(self) -> None:
        """Stop Redis as a crash or ``systemctl stop`` would (SIGTERM: its append-only file keeps
        the queues), and wait until it no longer answers."""
        os.kill(int(read_state(self.home)["redis"]["pid"]), signal.SIGTERM)
        wait_for(lambda: not self.redis_answers(), 30, "Redis to stop")

    def redis_answers(self) -> bool:
        return valkey.answers(self.redis_port())

    def pg_answers(self) -> bool:
        return postgres.answers(int(self.pg["port"]))

    def close(self) -> None:
        """Detach, and stop the home's servers (its supervisor would keep them until idle, and die
        with its home once the folder is removed, leaving them running)."""
        self._stack.close()
        stop_home(self.home)


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
    the group kills the command and its worker process at once). Its PostgreSQL sessions carry the
    application name ``chaos-<name>`` (``PGAPPNAME``), so a fault can find its open transactions;
    ``wrap`` runs it elsewhere (another host's network namespace)."""

    def __init__(self, name: str, env: dict, threads: int, logs: Path, wrap=None) -> None:
        self.name, self.threads, self.logs, self.wrap = name, threads, logs, wrap
        self.env = {**env, "PGAPPNAME": self.app_name}
        self.starts = 0
        self.proc: subprocess.Popen | None = None
        self.start()

    @property
    def app_name(self) -> str:
        return f"chaos-{self.name}"

    def start(self) -> None:
        self.starts += 1
        log = open(self.logs / f"{self.name}-{self.starts}.log", "wb")  # noqa: SIM115  (owned by the child)
        cmd = worker_command(1, self.threads)
        self.proc = subprocess.Popen(
            self.wrap(cmd) if self.wrap else cmd,
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def pids(self) -> list[int]:
        import psutil

        try:
            parent = psutil.Process(self.proc.pid)
            return [parent.pid, *(c.pid for c in parent.children(recursive=True))]
        except psutil.Error:
            return []

    def signal(self, signum: int) -> None:
        os.killpg(self.proc.pid, signum)

    def kill9(self) -> list[int]:
        pids = self.pids()
        self.signal(signal.SIGKILL)
        self.proc.wait(30)
        return pids

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.signal(signal.SIGCONT)  # a frozen worker cannot stop
                self.signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)


# --- one run -----------------------------------------------------------------------------------


class Run:
    """A KB in database ``name`` of ``servers``, worked on by two worker processes (and, for the
    network partition, a third on a second host)."""

    def __init__(self, servers: Servers, name: str, threads: int) -> None:
        self.servers, self.name = servers, name
        self.url = servers.database(name)
        self.env = {**os.environ, "DATABASE_URL": self.url, "REDIS_URL": servers.redis_url}
        self.env.pop("KBWIKI_DATABASE_URL", None)
        self.env.pop("KBWIKI_REDIS_URL", None)
        self.logs = servers.home / f"logs-{name}"
        self.logs.mkdir(exist_ok=True)
        from stages.deps import build_deps
        from wiki.settings import Settings

        self.settings = Settings(database_url=self.url, redis_url=servers.redis_url)
        self.pool = make_pool(self.url, 1, 4)
        self.deps = build_deps(self.settings, pool=self.pool)
        self.kb = self.deps.kbs.get_or_create(1, KB_NAME)
        self.probe = KbProbe(self.url, self.kb.id)
        self.threads = threads
        self.workers: list[Worker] = []
        self.submitted = 0

    def start_workers(self) -> None:
        self.workers = [Worker(f"w{i}", self.env, self.threads, self.logs) for i in (1, 2)]

    def add_host_worker(self, host) -> Worker:
        """A worker on ``host`` (``chaos_faults.Host``), reaching the servers through its forwarders."""
        env = {
            **self.env,
            "DATABASE_URL": self.url.replace(f"127.0.0.1:{self.servers.pg['port']}", f"{host.HERE}:{host.ports['pg']}"),
            "REDIS_URL": self.servers.redis_url.replace(
                f"127.0.0.1:{self.servers.redis_port()}", f"{host.HERE}:{host.ports['redis']}"
            ),
        }
        worker = Worker("h2", env, self.threads, self.logs, wrap=host.command)
        self.workers.append(worker)
        return worker

    def submit(self, docs: list[dict]) -> None:
        import actors
        from stages.ingest import submit_document

        actors.setup_broker(self.settings)  # the triggers go to the private Redis
        d = self.deps
        for doc in docs:
            submit_document(d, tenant_id=1, knowledge_base_id=self.kb.id, **doc)
        self.submitted += len(docs)

    def delete(self, uris: list[str]) -> int:
        """Delete the documents of ``uris`` in batches, as ``kbwiki delete`` does; returns how many
        were queued."""
        import actors
        from stages.delete import DELETE_BATCH, delete_documents

        actors.setup_broker(self.settings)
        ids = {r["source_uri"]: r["id"] for r in self.probe.documents()}
        wanted = [ids[u] for u in uris if u in ids]
        queued = 0
        for start in range(0, len(wanted), DELETE_BATCH):
            results = delete_documents(1, self.kb.id, wanted[start : start + DELETE_BATCH], self.deps)
            queued += sum(r.status == "deleting" for r in results)
        return queued

    def deleted(self, uris: list[str]) -> bool:
        """Every document of ``uris`` deleted and its retract applied, lanes empty."""
        status = {r["source_uri"]: r["status"] for r in self.probe.documents()}
        return all(status.get(u) == "deleted" for u in uris) and self.probe.progress()["rows"] == 0

    def done(self) -> int:
        return self.probe.done()

    def pending(self) -> int:
        """Documents submitted and not settled yet."""
        return max(0, self.submitted - self.probe.progress()["settled"])

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

    def outcome(self, expected_uris: list[str], deleted_uris: list[str]) -> dict:
        docs = {r["source_uri"]: r["status"] for r in self.probe.documents()}
        gone = set(deleted_uris)
        dead = self.probe.dead_letters()
        return {
            "lost": sorted(u for u in expected_uris if u not in docs),
            "stuck": sorted(
                u for u, s in docs.items() if s not in (("deleted",) if u in gone else ("done", "skipped"))
            ),
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
        # the index page lists summaries A-Z: none is expected (it listed the most recent, by ingestion order)
        "differing_links_from_the_index": sum(link[0] == "index" for link in cl ^ xl),
        "examples": {
            "only_clean": only_clean[:5],
            "only_chaos": only_chaos[:5],
            "links_only_clean": sorted(cl - xl)[:5],
            "links_only_chaos": sorted(xl - cl)[:5],
            "differing": [{"slug": s, "clean": cp[s], "chaos": xp[s]} for s in changed[:3]],
        },
    }


def to_delete(docs: list[dict], n: int) -> list[str]:
    """The source URIs both runs delete: ``n`` documents spread over the corpus (every one but each third)."""
    picked = [d["source_uri"] for i, d in enumerate(docs) if i % 3]
    return picked[:n]


# --- the runs ----------------------------------------------------------------------------------


def clean_run(servers: Servers, docs: list[dict], args) -> tuple[dict, dict, dict]:
    """Ingest every document with nothing disturbed, then delete ``to_delete``; returns the wiki
    before and after the deletes, and the numbers."""
    run = Run(servers, "kbwiki_clean", args.threads)
    started = time.monotonic()
    gone = to_delete(docs, args.deletes)
    try:
        run.submit(docs)
        run.start_workers()
        wait_for(lambda: run.settled(len(docs)), args.timeout_s, "the clean run to settle")
        elapsed = time.monotonic() - started
        before = run.wiki()
        t0 = time.monotonic()
        queued = run.delete(gone)
        wait_for(lambda: run.deleted(gone), args.timeout_s, "the clean run's deletes")
        deleted_s = time.monotonic() - t0
        return (
            before,
            run.wiki(),
            {
                "seconds": round(elapsed, 1),
                "deletes": {"documents": queued, "seconds": round(deleted_s, 1)},
                **run.outcome([d["source_uri"] for d in docs], gone),
            },
        )
    finally:
        run.close()


#: The faults of a chaos run, in the order they land; ``--faults`` picks some.
FAULTS = (
    "kill",
    "flush",
    "sigstop",
    "steal_lock",
    "sigstop_txn",
    "restart_pg",
    "redis_stop",
    "kill",
    "connections",
    "partition",
    "disk_full",
    "flush",
    "kill",
    "pg_outage",
)
#: Faults whose servers are gone on purpose: nothing can progress during them, so their stall is
#: counted from the moment the server is back; for the others, other workers go on meanwhile.
OUTAGES = {"redis_stop", "connections", "disk_full", "pg_outage", "restart_pg"}
#: Faults that need root (a tmpfs mount, a network namespace).
ROOT_ONLY = {"partition", "disk_full"}


def chaos_run(servers: Servers, docs: list[dict], args) -> tuple[dict, dict, dict]:
    """Ingest the documents in waves (each fault lands with ``--pending`` documents or more still
    to do) through the faults of ``FAULTS``, then delete ``to_delete`` with a worker killed -9
    midway; returns the wiki before and after the deletes, and the numbers."""
    from bench import chaos_faults as cf

    rng = random.Random(args.seed)
    run = Run(servers, "kbwiki_chaos", args.threads)
    flush_client = redis.Redis.from_url(servers.redis_url)
    produced = docs[len(docs) - args.producer_docs :]
    feed = list(docs[: len(docs) - args.producer_docs])
    gone = to_delete(docs, args.deletes)
    events: list[dict] = []
    started = time.monotonic()
    host = None
    # the default: every fault of FAULTS in its order; a list given names its own order (and repeats)
    wanted = list(args.faults) if args.faults_given else list(FAULTS)
    if os.geteuid() != 0:
        wanted = [f for f in wanted if f not in ROOT_ONLY]

    def top_up() -> int:
        """Submit documents until ``--pending`` are waiting (or none are left); returns those waiting."""
        pending = run.pending()
        if pending < args.pending and feed:
            wave = feed[: args.pending - pending]
            del feed[: len(wave)]
            run.submit(wave)
        return run.pending()

    def mid_work() -> None:
        """Wait until the workers are busy: a few documents done since the last wave."""
        before = run.done()
        wait_for(lambda: run.done() >= before + 3 or run.pending() == 0, args.timeout_s, "work under way")

    def dramatiq_messages(*suffixes: str) -> list[str]:
        """Bodies of the messages in the ``wiki`` queue's hashes (``.msgs`` ready, ``.DQ.msgs``
        delayed or retrying, ``.XQ.msgs`` Dramatiq's dead set)."""
        ns = run.settings.redis_namespace
        return [v.decode(errors="replace") for suffix in suffixes for v in flush_client.hvals(f"{ns}:wiki{suffix}")]

    def submits_in_flight() -> bool:
        return any('"wiki_submit"' in m for m in dramatiq_messages(".msgs", ".DQ.msgs"))

    def local_workers() -> list[Worker]:
        return [w for w in run.workers if w.wrap is None]

    def kill() -> dict:
        victim = rng.choice(local_workers())
        pids = victim.kill9()
        t0 = time.monotonic()
        ids = run.probe.worker_ids(pids)
        held = run.probe.claims_held_by(ids)
        wait_for(lambda: run.probe.claims_held_by(ids) == 0, 300, "the dead worker's claims taken back")
        victim.start()
        return {"worker": victim.name, "claims_held": held, "claims_taken_back_s": round(time.monotonic() - t0, 1)}

    def flush() -> dict:
        flush_client.flushall()
        return {}

    def steal_lock() -> dict:
        key = f"{run.settings.key_prefix}:active:{run.kb.id}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # batches last a second or two: poll fast
            if flush_client.delete(key):
                return {}
            time.sleep(0.01)
        return {"skipped": "no batch held the lock within 120 s"}

    def freeze(victim: Worker, caught: list[int]) -> dict:
        """Keep ``victim`` frozen ``--freeze-s``; say whether PostgreSQL ended the transactions it held."""
        time.sleep(args.freeze_s)
        ended = [pid for pid in caught if not cf.backend_alive(servers.admin_url(), pid)]
        victim.signal(signal.SIGCONT)
        return {"worker": victim.name, "held_transactions": len(caught), "ended_by_postgresql": len(ended)}

    def sigstop() -> dict:
        victim = rng.choice(local_workers())
        victim.signal(signal.SIGSTOP)
        return freeze(victim, [])

    def sigstop_txn() -> dict:
        victim = rng.choice(local_workers())
        caught = cf.freeze_in_transaction(victim.proc.pid, run.url, victim.app_name)
        return {"_t0": time.monotonic()} | freeze(victim, caught)  # the fault starts when it is caught

    def restart_pg() -> dict:
        with cf.supervisor_paused(servers.supervisor_pid()):
            servers.stop_pg()
            servers.start_pg()
        return {}

    def redis_stop() -> dict:
        with cf.supervisor_paused(servers.supervisor_pid()):
            servers.stop_redis()
            time.sleep(args.redis_outage_s)
        wait_for(servers.redis_answers, 120, "the supervisor to start Redis again")
        return {"seconds_stopped": args.redis_outage_s}

    def connections() -> dict:
        held = cf.exhaust_connections(servers.admin_url())
        victim = rng.choice(local_workers())
        victim.kill9()
        victim.start()  # it must wait for a connection, not exit
        time.sleep(args.connections_s)
        for conn in held:
            conn.close()
        wait_for(lambda: run.probe.worker_ids(victim.pids()), 120, "the restarted worker to announce itself")
        return {"held": len(held), "restarted_worker_alive": victim.alive()}

    def partition() -> dict:
        worker = next(w for w in run.workers if w.wrap is not None)
        host.cut()
        time.sleep(args.partition_s)
        host.join()
        return {"worker": worker.name, "seconds_cut": args.partition_s}

    def disk_full() -> dict:
        if not Path(servers.pg["data"]).resolve().is_relative_to(servers.home.resolve()):
            return {"skipped": "PostgreSQL's data is not on the bench's tmpfs"}
        pg_log = Path(servers.pg["log"])
        seen = pg_log.stat().st_size
        filler = servers.home / "filler"
        written = cf.fill_disk(filler)
        t_full = time.monotonic()
        # hold the disk full until PostgreSQL has felt it (a write refused), then --disk-full-s more
        try:
            refused = wait_for(
                lambda: next((line for line in log_since(pg_log, seen) if "No space left" in line), None),
                120,
                "a refused write",
            )
        except TimeoutError:
            refused = None
        felt_s = round(time.monotonic() - t_full, 1)
        time.sleep(args.disk_full_s)
        filler.unlink()
        # a full disk stops Redis too (its append-only file): wait for both
        wait_for(lambda: servers.pg_answers() and servers.redis_answers(), 300, "the servers after the disk was freed")
        return {
            "filled_mib": written >> 20,
            "postgresql_refused_after_s": felt_s if refused else None,
            "postgresql_said": refused,
        }

    def pg_outage() -> dict:
        import actors
        from actors.ingest import wiki_submit

        actors.setup_broker(run.settings)  # the broker on the private Redis; sending needs no DATABASE_URL
        with cf.supervisor_paused(servers.supervisor_pid()):
            servers.stop_pg()
            t0 = time.monotonic()
            for i, doc in enumerate(produced):  # spread over the outage's first half
                time.sleep(max(0.0, t0 + i * (args.outage_s / 2) / max(len(produced), 1) - time.monotonic()))
                wiki_submit.send(tenant_id=1, knowledge_base_id=run.kb.id, **doc)
            time.sleep(max(0.0, t0 + args.outage_s - time.monotonic()))
            servers.start_pg()
        return {"seconds_stopped": args.outage_s, "producer_sent": len(produced)}

    steps = {f.__name__: f for f in (kill, flush, sigstop, steal_lock, sigstop_txn, restart_pg, redis_stop)}
    steps |= {f.__name__: f for f in (connections, partition, disk_full, pg_outage)}
    timeline = None
    try:
        top_up()
        run.start_workers()
        if "partition" in wanted:
            host = cf.Host("kbwchaos", {"pg": servers.pg["port"], "redis": servers.redis_port()})
            run.add_host_worker(host)
        timeline = cf.Timeline(run.done, run.pending).start()
        for fault in wanted:
            pending = top_up()
            mid_work()
            t0 = time.monotonic()
            print(f"chaos: {fault} at {t0 - started:.0f} s, {pending} documents pending", file=sys.stderr, flush=True)
            info = steps[fault]()
            events.append(
                {
                    "fault": fault,
                    "at_s": round(t0 - started, 1),
                    "utc": time.strftime("%H:%M:%S", time.gmtime()),
                    "pending": pending,
                    "_t0": t0,
                    "_t1": time.monotonic(),
                }
                | info
            )
        while feed:
            top_up()
            time.sleep(POLL_S)
        if "pg_outage" not in wanted and produced:
            run.submit(produced)
        try:
            # every document settled; or, when some producer messages gave up (outage longer than
            # their retries), the lanes settled and no producer message is still queued or retrying
            wait_for(
                lambda: run.settled(len(docs)) or (run.settled(run.submitted) and not submits_in_flight()),
                args.timeout_s,
                "the chaos run to settle",
            )
            settled = True
        except (TimeoutError, KeyboardInterrupt):  # Ctrl-C: report what the run reached so far
            settled = False
        elapsed = time.monotonic() - started
        before = run.wiki()
        # deletes with a worker killed -9 midway
        t0 = time.monotonic()
        queued = run.delete(gone[: len(gone) // 2])
        kill_info = kill()
        queued += run.delete(gone[len(gone) // 2 :])
        wait_for(lambda: run.deleted(gone), args.timeout_s, "the chaos run's deletes")
        deletes = {"documents": queued, "seconds": round(time.monotonic() - t0, 1), "kill": kill_info}
        logs = [p.read_text(errors="replace") for p in run.logs.glob("*.log")]
        for event in events:
            t0, t1 = event.pop("_t0"), event.pop("_t1")
            event["seconds"] = round(t1 - t0, 1)
            event["progress_after_s"] = timeline.progress_after(t1)
            event["longest_stall_during_s"] = timeline.longest_stall(t0, t1)
            event["stall_s"] = (
                event["progress_after_s"]
                if event["fault"] in OUTAGES
                else max(filter(None, (event["progress_after_s"], event["longest_stall_during_s"])), default=None)
            )
        return (
            before,
            run.wiki(),
            {
                "seconds": round(elapsed, 1),
                "settled": settled,
                "faults": events,
                "skipped_faults": sorted(set(args.faults) - set(wanted)),
                "deletes": deletes,
                "batches_overtaken": sum(text.count('"reduce.overtaken"') for text in logs),
                "reaper_takebacks": sum(text.count('"workers.reaped"') for text in logs),
                "producer_messages_in_dramatiq_dead_set": sum(
                    '"wiki_submit"' in m for m in dramatiq_messages(".XQ.msgs")
                ),
                **run.outcome([d["source_uri"] for d in docs], gone),
            },
        )
    finally:
        if timeline is not None:
            timeline.stop()
        run.close()
        if host is not None:
            host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=2000)
    parser.add_argument("--pending", type=int, default=300, help="documents still to do when each fault lands")
    parser.add_argument("--deletes", type=int, default=1000, help="documents deleted at the end of each run")
    parser.add_argument(
        "--faults", default=None, help="comma-separated faults of FAULTS in the order to land them (default: FAULTS)"
    )
    parser.add_argument("--outage-s", type=float, default=60, help="PostgreSQL outage length")
    parser.add_argument("--redis-outage-s", type=float, default=60, help="Redis stopped this long")
    parser.add_argument("--freeze-s", type=float, default=60, help="SIGSTOP of a worker this long")
    parser.add_argument("--partition-s", type=float, default=60, help="the second host cut off this long")
    parser.add_argument("--disk-full-s", type=float, default=30, help="the disk kept full this long")
    parser.add_argument("--connections-s", type=float, default=30, help="every connection slot taken this long")
    parser.add_argument("--tmpfs-mb", type=int, default=6144, help="size of the servers' tmpfs (disk_full)")
    parser.add_argument("--producer-docs", type=int, default=20, help="documents sent during the outage")
    parser.add_argument("--threads", type=int, default=4, help="threads per worker process")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--timeout-s", type=float, default=1800, help="longest wait for a run to settle")
    parser.add_argument("--keep", action="store_true", help="keep the servers' folder (logs) afterwards")
    args = parser.parse_args()
    args.faults_given = args.faults is not None
    args.faults = [f.strip() for f in (args.faults or ",".join(FAULTS)).split(",") if f.strip()]
    if unknown := set(args.faults) - set(FAULTS):
        parser.error(f"unknown faults: {', '.join(sorted(unknown))} (known: {', '.join(dict.fromkeys(FAULTS))})")

    from bench import chaos_faults as cf

    docs = make_corpus(args.docs, args.seed)
    home = Path(tempfile.mkdtemp(prefix="kbwiki-chaos-"))
    mounted = os.geteuid() == 0 and "disk_full" in args.faults
    if mounted:
        cf.mount_tmpfs(home, args.tmpfs_mb)
    try:
        servers = Servers(home)
        # the broker the bench sends through (submit's triggers, the producer) is built on first import
        os.environ["REDIS_URL"] = servers.redis_url
        os.environ.pop("DATABASE_URL", None)
        try:
            clean_before, clean_wiki, clean = clean_run(servers, docs, args)
            redis.Redis.from_url(servers.redis_url).flushall()
            chaos_before, chaos_wiki, chaos = chaos_run(servers, docs, args)
        finally:
            servers.close()
    finally:
        if mounted and not args.keep:
            cf.unmount(home)
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
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
            "stalls_s": {f"{e['fault']}@{e['at_s']}": e["stall_s"] for e in chaos["faults"]},
            "pending_at_faults": [e["pending"] for e in chaos["faults"]],
            "clean_s": clean["seconds"],
            "chaos_s": chaos["seconds"],
            "clean_deletes": clean["deletes"],
            "chaos_deletes": chaos["deletes"],
        },
        "compare_before_deletes": compare(clean_before, chaos_before),
        "compare_after_deletes": compare(clean_wiki, chaos_wiki),
    }
    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
