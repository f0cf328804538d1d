"""Benchmark: does a reduce batch cost the same at 1,000, 10,000 and 40,000 documents?

Usage: .venv/bin/python bench/scale.py [--sizes 1000,10000,40000] [--batch 50] [--no-naive] [--prepare]

Corpus: the linux-doc .rst files (bench/corpus/linux-doc.sh) and the Python standard library's
docstrings, split at section headings; sections over 800 characters are split again at blank
lines into ~400-character parts, so there are enough real documents (43k) for 40,000 plus a batch.
Every section is extracted once with the offline extractor (cached in bench/.cache/).

KBs: ``scale-N`` holds the first N sections as pages built the way reduce builds them (rendered
with wiki.render, facts capped like reduce), loaded with COPY, then VACUUM ANALYZE. They are kept
in the scratch database (env KBWIKI_BENCH_DATABASE_URL, default the local ``kbwiki_bench``).

Measurement: the same next batch (the sections after the largest KB) is reduced into a fresh copy
of each KB by ``run_reduce_batch`` in a fresh subprocess, which reports wall time, SQL statements
and rows returned (counted by wrapping psycopg's execute; the statements returning the most rows
are listed), and the process's peak RSS. The batch asks for all its items' name keys in one
statement, so the latency of one name-key lookup (median, p95) is measured apart, after the
timed batch, on up to 200 of the same keys. ``--naive`` runs the same batch with the page lookup
replaced by a naive one: load every page of the KB and key each title in Python.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from multiprocessing import Pool
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kbwiki.corpus import Rejected, iter_folder_docs, iter_stdlib_docs  # noqa: E402
from repos.bench import BenchKbRepository  # noqa: E402
from repos.db import apply_migrations, make_pool  # noqa: E402
from repos.pages import WikiPageRepository  # noqa: E402
from repos.servers import create_database, vacuum_analyze  # noqa: E402
from wiki.models import Extraction  # noqa: E402

CACHE = ROOT / "bench/.cache"
ADMIN_URL = os.environ.get("KBWIKI_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DB_NAME = "kbwiki_bench"
HEADING = re.compile(r"^#{1,6} ", re.M)
MIN_SECTION, SPLIT_OVER, PART = 120, 800, 400


def bench_url() -> str:
    return ADMIN_URL.rpartition("/")[0] + "/" + DB_NAME


# -- corpus ------------------------------------------------------------------------------------
def _split(title: str, text: str) -> Iterator[tuple[str, str]]:
    marks = [m.start() for m in HEADING.finditer(text)] or [0]
    for i, start in enumerate(marks):
        body = text[start : marks[i + 1] if i + 1 < len(marks) else len(text)].strip()
        heading = body.splitlines()[0].lstrip("#").strip() if body else ""
        name = f"{title} — {heading}" if heading and heading != title else title
        if len(body) < MIN_SECTION:
            continue
        if len(body) <= SPLIT_OVER:
            yield name, body
            continue
        part, n = [], 1
        for para in body.split("\n\n"):
            part.append(para)
            if sum(map(len, part)) >= PART:
                yield f"{name} (part {n})", "\n\n".join(part)
                part, n = [], n + 1
        if sum(map(len, part)) >= MIN_SECTION:
            yield f"{name} (part {n})", "\n\n".join(part)


def sections() -> list[tuple[str, str]]:
    """(title, text) of every section, deterministic order, unique titles."""
    out = subprocess.run(["bash", str(ROOT / "bench/corpus/linux-doc.sh")], check=True, capture_output=True, text=True)
    folder = Path(out.stdout.strip().splitlines()[-2])
    seen: set[str] = set()
    result = []
    docs = [d for d in iter_folder_docs(folder) if not isinstance(d, Rejected)] + list(iter_stdlib_docs())
    for doc in docs:
        for title, text in _split(doc.title, doc.text):
            if title not in seen:
                seen.add(title)
                result.append((title, text))
    return result


def _extract(item: tuple[str, str]) -> str | None:
    from wiki.extract.offline import OfflineExtractor

    try:
        return OfflineExtractor().extract(*item).model_dump_json()
    except Exception:  # an unusable section is simply not part of the corpus
        return None


def extractions(items: list[tuple[str, str]]) -> list[tuple[str, str, Extraction]]:
    """(title, text, extraction) for every usable section, extracted once and cached on disk."""
    path = CACHE / "scale-extractions.jsonl"
    cached: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line)
            cached[row["title"]] = row["extraction"]
    todo = [it for it in items if it[0] not in cached]
    if todo:
        print(f"extracting {len(todo)} sections (cached for later runs)...", flush=True)
        with Pool(os.cpu_count() or 2) as pool, path.open("a") as out:
            for (title, _), result in zip(todo, pool.imap(_extract, todo, chunksize=64)):
                cached[title] = result
                out.write(json.dumps({"title": title, "extraction": result}) + "\n")
    return [(t, x, Extraction.model_validate_json(cached[t])) for t, x in items if cached.get(t)]


# -- building KBs ------------------------------------------------------------------------------
def build_kb(pool, name: str, corpus: list[tuple[str, str, Extraction]]) -> str:
    """Create KB ``name`` with pages for ``corpus`` unless it already has them; returns its id."""
    from repos.knowledge import DocumentRepository, KnowledgeBaseRepository
    from repos.pages import WikiPageRepository
    from wiki.models import Fact, Page, SourceRef
    from wiki.render import render_item_page, render_summary_page
    from wiki.slugs import slugify, summary_slug

    kb = KnowledgeBaseRepository(pool).get_or_create(1, name)
    if BenchKbRepository(pool).live_page_count(kb.id):
        return kb.id
    t0 = time.monotonic()
    docs = DocumentRepository(pool)
    items: dict[str, dict] = {}
    pages = []
    taken: set[str] = set()
    for i, (title, text, ex) in enumerate(corpus):
        doc, _ = docs.upsert(kb, title=title, source_uri=f"scale:{i}", content=text)
        s_slug = summary_slug(title)
        if s_slug in taken:  # as reduce does: another document already has this summary slug
            s_slug = f"{s_slug}-{doc.id[:8]}"
        taken.add(s_slug)
        links = []
        for it in ex.items:
            slug = slugify(it.name)
            entry = items.setdefault(slug, {"title": it.name, "type": it.kind, "facts": {}, "refs": {}})
            entry["refs"][doc.id] = title
            if len(entry["facts"]) < 20:
                entry["facts"][doc.id] = Fact(
                    doc_title=title,
                    summary_slug=s_slug,
                    description=it.description,
                    evidence=it.evidence,
                    seq=len(entry["facts"]) + 1,
                )
            links.append((it.kind, slug, it.name, it.description))
        pages.append(
            Page(
                tenant_id=1,
                knowledge_base_id=kb.id,
                slug=s_slug,
                title=title,
                page_type="summary",
                content=render_summary_page(ex, f"scale:{i}", links),
                summary=ex.summary,
                source_refs=[SourceRef(knowledge_id=doc.id, title=title)],
            )
        )
    summary_slugs = {p.slug for p in pages}
    for slug, e in items.items():
        if slug in summary_slugs:
            continue
        pages.append(
            Page(
                tenant_id=1,
                knowledge_base_id=kb.id,
                slug=slug,
                title=e["title"],
                page_type=e["type"],
                content=render_item_page(e["title"], e["facts"], []),
                facts=e["facts"],
                source_refs=[SourceRef(knowledge_id=k, title=t) for k, t in e["refs"].items()],
            )
        )
    WikiPageRepository(pool).bulk_insert(pages)
    vacuum_analyze(bench_url())
    print(f"built {name}: {len(corpus)} documents, {len(pages)} pages in {time.monotonic() - t0:.0f} s", flush=True)
    return kb.id


def clone_kb(pool, kb_id: str, name: str) -> str:
    """A throw-away copy of a KB's documents, pages and links (so every run starts equal)."""
    from repos.knowledge import KnowledgeBaseRepository

    clone = KnowledgeBaseRepository(pool).get_or_create(1, name)
    BenchKbRepository(pool).clone_kb(kb_id, clone.id)
    vacuum_analyze(bench_url())  # as autovacuum would have done for a KB that grew over time
    return clone.id


def drop_kb(pool, kb_id: str) -> None:
    BenchKbRepository(pool).drop_kb(kb_id)


# -- one measured batch (runs in its own process) ----------------------------------------------
class Counter:
    statements = 0
    rows = 0
    seconds_by_sql: dict[str, float] = {}
    rows_by_sql: dict[str, int] = {}


def _key(query) -> str:
    text = query.as_string() if hasattr(query, "as_string") else str(query)
    return " ".join(text.split())[:90]


def _instrument() -> None:
    """Count every statement and the rows it returned, for all code in this process."""
    orig_conn, orig_cur = psycopg.Connection.execute, psycopg.Cursor.execute

    def conn_execute(self, query, params=None, **kw):
        t = time.perf_counter()
        cur = orig_conn(self, query, params, **kw)
        k = _key(query)
        Counter.seconds_by_sql[k] = Counter.seconds_by_sql.get(k, 0.0) + time.perf_counter() - t
        Counter.statements += 1
        n = max(cur.rowcount, 0) if cur.description else 0
        Counter.rows += n
        Counter.rows_by_sql[k] = Counter.rows_by_sql.get(k, 0) + n
        return cur

    def cur_execute(self, query, params=None, **kw):
        out = orig_cur(self, query, params, **kw)
        Counter.statements += 1
        Counter.rows += max(self.rowcount, 0) if self.description else 0
        return out

    psycopg.Connection.execute, psycopg.Cursor.execute = conn_execute, cur_execute


def _naive_by_key(deps, kb_id: str):
    """A naive page lookup: every page of the KB loaded and keyed by ``name_key`` of its title."""
    from wiki.dedup import name_key
    from wiki.models import PageLite

    index: dict[str, list[PageLite]] = {}

    def by_name_keys(kb: str, keys) -> dict[str, list[PageLite]]:
        if not index:
            rows = BenchKbRepository(deps.pool).live_pages(kb)
            for r in sorted(rows, key=lambda r: r["slug"]):
                if r["page_type"] in ("entity", "concept"):
                    index.setdefault(name_key(r["title"]), []).append(PageLite.model_validate(r))
        return {k: index[k] for k in keys if k in index}

    return by_name_keys


def measure(kb_id: str, batch_path: Path, naive: bool) -> dict:
    from stages.deps import build_deps
    from stages.reduce import run_reduce_batch
    from tests.support.lanes import mapped_document
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import Settings

    settings = Settings(database_url=bench_url(), redis_url="redis://127.0.0.1:6379/15", ingest_batch_size=1000)
    pool = make_pool(bench_url(), 1, 8)
    deps = build_deps(settings, pool=pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_active(1, kb_id)
    for i, row in enumerate(json.loads(batch_path.read_text())):
        extraction = Extraction.model_validate_json(row["extraction"])
        mapped_document(deps, kb, row["title"], extraction, source_uri=f"batch:{i}", content=row["text"])
    lookup = _naive_by_key(deps, kb.id) if naive else None
    asked: list[str] = []

    def lookup_many(kb_: str, keys):
        keys = list(keys)
        asked.extend(keys)
        if lookup is None:
            return WikiPageRepository.by_name_keys(deps.pages, kb_, keys)
        return lookup(kb_, keys)

    deps.pages.by_name_keys = lookup_many
    _instrument()
    t0 = time.perf_counter()
    result = run_reduce_batch(1, kb.id, deps)
    wall = time.perf_counter() - t0
    stats = {"statements": Counter.statements, "rows": Counter.rows}
    rows_by_sql = dict(Counter.rows_by_sql)
    del deps.pages.by_name_keys
    # The batch asks for every name key in one statement; the latency of one lookup is
    # measured apart, on a sample of the same texts, after the timed batch (bounded mode only).
    timings: list[float] = []
    if not naive:
        for text in sorted(set(asked))[:: max(1, len(set(asked)) // 200)]:
            t = time.perf_counter()
            deps.pages.by_name_keys(kb.id, [text])
            timings.append((time.perf_counter() - t) * 1000)
    timings.sort()
    if os.environ.get("KBWIKI_BENCH_PROFILE"):
        for k, v in sorted(Counter.seconds_by_sql.items(), key=lambda kv: -kv[1])[:8]:
            print(f"{v:8.2f} s  {k}", file=sys.stderr)
    return {
        "documents": result.documents,
        "failed": result.failed,
        "pages_written": result.written,
        "wall_s": round(wall, 3),
        **stats,
        "texts_looked_up": len(set(asked)),
        "rows_by_statement": dict(sorted(rows_by_sql.items(), key=lambda kv: -kv[1])[:6]),
        "lookups_timed": len(timings),
        "lookup_median_ms": round(statistics.median(timings), 2) if timings else None,
        "lookup_p95_ms": round(timings[int(0.95 * (len(timings) - 1))], 2) if timings else None,
        "peak_rss_mib": round(_peak_rss_kib() / 1024, 1),
    }


def _peak_rss_kib() -> int:
    """This process's peak RSS (VmHWM). Not ru_maxrss: Linux carries that across exec from the parent."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_measure(kb_id: str, batch_path: Path, naive: bool) -> dict:
    cmd = [sys.executable, __file__, "--measure", kb_id, "--batch-file", str(batch_path)] + (
        ["--naive"] if naive else []
    )
    # importing actors builds a broker (it does not connect): give it a URL of its own
    env = {
        **os.environ,
        "REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15"),
        "KBWIKI_REDIS_NAMESPACE": "kbwiki-bench",
    }
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode:
        raise RuntimeError(f"measurement failed:\n{out.stderr[-3000:]}")
    if os.environ.get("KBWIKI_BENCH_PROFILE"):
        print(out.stderr, file=sys.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,40000")
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--no-naive", dest="naive", action="store_false")
    parser.add_argument(
        "--prepare",
        action="store_true",
        help="only extract the corpus and build the KBs (so the timed run can wait for a quiet machine)",
    )
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--batch-file", help=argparse.SUPPRESS)
    parser.add_argument("--naive", dest="naive_one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.measure, Path(args.batch_file), args.naive_one)))
        return

    sizes = sorted(int(s) for s in args.sizes.split(","))
    CACHE.mkdir(parents=True, exist_ok=True)
    corpus = extractions(sections())
    need = sizes[-1] + args.batch
    if len(corpus) < need:
        sys.exit(f"corpus has {len(corpus)} usable sections, {need} needed")
    print(f"corpus: {len(corpus)} usable sections", flush=True)
    batch_path = CACHE / "scale-batch.json"
    batch = corpus[sizes[-1] : need]
    batch_path.write_text(json.dumps([{"title": t, "text": x, "extraction": e.model_dump_json()} for t, x, e in batch]))

    create_database(ADMIN_URL, DB_NAME)
    apply_migrations(bench_url())
    pool = make_pool(bench_url(), 1, 4)
    rows = []
    for n in sizes:
        kb_id = build_kb(pool, f"scale-{n}", corpus[:n])
        if args.prepare:
            continue
        for naive in [False, True] if args.naive else [False]:
            clone = clone_kb(pool, kb_id, f"scale-{n}-run")
            try:
                rows.append(
                    {"size": n, "mode": "naive" if naive else "bounded", **run_measure(clone, batch_path, naive)}
                )
            finally:
                drop_kb(pool, clone)
            print(json.dumps(rows[-1]), flush=True)
    if rows:
        _print_table(rows)


def _print_table(rows: list[dict]) -> None:
    head = (
        f"{'docs':>6} {'mode':>8} {'reduce s':>9} {'stmts':>6} {'rows':>7} {'lookup med ms':>13}"
        f" {'p95 ms':>7} {'RSS MiB':>8}"
    )
    print("\n" + head)
    for r in rows:
        med, p95 = (r["lookup_median_ms"] or "-"), (r["lookup_p95_ms"] or "-")  # naive rows time no lookup
        print(
            f"{r['size']:>6} {r['mode']:>8} {r['wall_s']:>9.2f} {r['statements']:>6} {r['rows']:>7} "
            f"{med:>13} {p95:>7} {r['peak_rss_mib']:>8}"
        )
    bounded = {r["size"]: r for r in rows if r["mode"] == "bounded"}
    naive = {r["size"]: r for r in rows if r["mode"] == "naive"}
    lo, hi = min(bounded), max(bounded)
    print(f"\nreduce time {hi} / {lo}: {bounded[hi]['wall_s'] / bounded[lo]['wall_s']:.2f}x (target <= 2)")
    print(f"peak RSS {hi} / {lo}: {bounded[hi]['peak_rss_mib'] / bounded[lo]['peak_rss_mib']:.2f}x (target <= 1.25)")
    if hi in naive:
        print(f"naive / bounded at {hi}: {naive[hi]['wall_s'] / bounded[hi]['wall_s']:.1f}x (target >= 20)")


if __name__ == "__main__":
    main()
