"""Benchmark: the page revisions of a hub page named by 500 documents (issue 29, part 3).

Usage: .venv/bin/python bench/revisions.py [--docs 500] [--batch-size 5] [--keep 20]
                                           [--wide-refs 40000] [--wide-writes 25]

Drives the reduce stage itself (``stages.reduce.run_reduce_batch``: no worker, no extractor; each
document's extraction is stored as the map stage would store it) on the scratch database
``kbwiki_bench_revisions``, made afresh (and dropped at the end) on the server of
``KBWIKI_BENCH_DATABASE_URL`` (an admin URL; default the local ``postgres`` database), and Redis
at ``REDIS_URL`` (default db 15 on localhost; keys under a prefix of the run's own). Every
document names the entity "Hub", saying more of it than the documents before (the worst case:
its row enters the hub's best rows, so every batch rewrites the page), and an entity of its own;
a reduce batch takes ``--batch-size`` documents, so at 5 a batch the hub page is rewritten 100
times by 500 documents.

The same documents go through twice, into two KBs: with ``KBWIKI_PAGE_REVISIONS_KEEP=0`` (no
history) and ``--keep``. Prints, for the second: the hub's kept revisions (at most ``--keep``) and
its sources, every revision of the KB (rows, stored bytes in sum, max and mean: ``pg_column_size``,
after TOAST compression), the hub's revisions' bytes against the sources they had, and for both
runs the reduce batches' seconds and the seconds spent in ``WikiPageRepository.save_many``, with
the ratio (the write-time cost of keeping revisions).

A hub page of the pipeline cites its 8 best documents (``wiki.coverage.MAX_QUOTES``) whatever the
number naming it; a page written before the mention index could cite every one. So a page citing
``--wide-refs`` (40,000) documents is then written ``--wide-writes`` times straight through
``save_many`` (50 sources more and one fewer each time), with and without history: its revisions'
bytes (a delta of the sources, not the 3 MB of them) and the milliseconds a write takes. Last,
one JSON line with every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

ADMIN_URL = os.environ.get("KBWIKI_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/15")
DB_NAME = "kbwiki_bench_revisions"
TENANT = 1
HUB = "hub"


def _db_url() -> str:
    base, _, _ = ADMIN_URL.rpartition("/")
    return f"{base}/{DB_NAME}"


def fresh_database() -> str:
    """(Re)create the scratch database and apply the migrations; returns its URL."""
    from repos.db import apply_migrations
    from repos.servers import create_database

    create_database(ADMIN_URL, DB_NAME, replace=True)
    url = _db_url()
    apply_migrations(url)
    return url


def _extraction(i: int):
    from wiki.models import ExtractedItem, Extraction

    # each note says more of the hub than the ones before (more sentences name it, more have it
    # for their subject), so its row enters the hub's best rows and every batch rewrites the page
    hub = ExtractedItem(
        name="Hub",
        kind="entity",
        description=f"Hub is the component note {i:04d} describes as its central switch.",
        evidence=[
            f"Note {i:04d} routes every request through Hub before answering, and it explains at some length"
            " how the queue in front of it fills, drains and recovers after a restart of the whole service.",
            f"In note {i:04d}, Hub also keeps the counters that the dashboards read every few seconds.",
        ],
        sentences=i % 99 + 1,
        subject=i // 99,
    )
    own = ExtractedItem(
        name=f"Widget {i:04d}",
        kind="entity",
        description=f"Widget {i:04d} is the part note {i:04d} is about.",
        evidence=[f"Widget {i:04d} holds the frame of note {i:04d}."],
    )
    return Extraction(
        summary=f"Note {i:04d}.", body=f"Note {i:04d} describes Widget {i:04d} and Hub.", items=[hub, own]
    )


def run(pool, keep: int, docs: int, batch_size: int) -> dict:
    """Ingest ``docs`` documents through reduce batches of ``batch_size`` into a new KB whose page
    writes keep ``keep`` revisions; returns the KB id and the seconds spent."""
    from stages.deps import build_deps
    from stages.reduce import run_reduce_batch
    from tests.support.lanes import mapped_document
    from wiki.dedup import name_key
    from wiki.settings import Settings

    settings = Settings(
        database_url=_db_url(),
        redis_url=REDIS_URL,
        key_prefix=f"bench-revisions-{uuid.uuid4().hex[:8]}",
        ingest_batch_size=batch_size,
        page_revisions_keep=keep,
    )
    deps = build_deps(settings, pool=pool, extractor=_NamedOnly())
    kb = deps.kbs.get_or_create(TENANT, f"hub-keep-{keep}")
    spent = {"save_many_s": 0.0}
    save_many = deps.pages.save_many

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return save_many(*args, **kwargs)
        finally:
            spent["save_many_s"] += time.perf_counter() - t0

    deps.pages.save_many = timed
    reduce_s, batches = 0.0, 0
    for start in range(0, docs, batch_size):
        for i in range(start, min(docs, start + batch_size)):
            mapped_document(
                deps, kb, f"Note {i:04d}", _extraction(i), source_uri=f"note-{i:04d}.md", content=f"Note {i} " * 20
            )
        t0 = time.perf_counter()
        result = run_reduce_batch(kb.tenant_id, kb.id, deps)
        reduce_s += time.perf_counter() - t0
        batches += 1
        if result.failed or result.documents != min(docs, start + batch_size) - start:
            raise SystemExit(f"batch {batches} failed: {result}")
    hub = deps.pages.get(kb.id, HUB)
    named = deps.mentions.stats(kb.id, [name_key("Hub")])[name_key("Hub")].docs
    return {
        "hub_named_by": named,
        "kb_id": kb.id,
        "batches": batches,
        "reduce_s": round(reduce_s, 2),
        "save_many_s": round(spent["save_many_s"], 2),
        "hub_version": hub.version,
        "hub_sources": len(hub.source_refs),
        "hub_content_bytes": len(hub.content.encode()),
        "kept": deps.revisions.history(TENANT, kb.id, HUB, limit=10_000),
    }


def wide_page(pool, keep: int, refs: int, writes: int) -> dict:
    """A page citing ``refs`` documents (as pages written before the mention index could: source
    refs were all kept then), written ``writes`` times through ``WikiPageRepository.save_many``
    with ``keep`` revisions, each write citing 50 more documents and one fewer; returns the
    milliseconds per write and the KB id."""
    from repos.knowledge import KnowledgeBaseRepository
    from repos.pages import WikiPageRepository
    from wiki.models import Page, SourceRef

    kb = KnowledgeBaseRepository(pool).get_or_create(TENANT, f"wide-keep-{keep}")
    pages = WikiPageRepository(pool, revisions_keep=keep)

    def page(first: int, last: int, n: int) -> Page:
        cited = [
            SourceRef(knowledge_id=f"{uuid.UUID(int=i)}", title=f"Document number {i}") for i in range(first, last)
        ]
        return Page(
            tenant_id=TENANT,
            knowledge_base_id=kb.id,
            slug=HUB,
            title="Hub",
            page_type="entity",
            content=f"Hub, written {n} times. " + "It routes every request. " * 80,
            source_refs=cited,
        )

    pages.save(page(0, refs, 0), written_by="batch:0")
    times = []
    for n in range(1, writes + 1):
        later = page(n, refs + 50 * n, n)
        t0 = time.perf_counter()
        pages.save(later, written_by=f"batch:{n}")
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return {"kb_id": kb.id, "ms_median": round(times[len(times) // 2], 1), "ms_max": round(times[-1], 1)}


class _NamedOnly:
    """The extractor reduce is told about: its name keys the stored extractions (nothing extracts)."""

    name = "bench-revisions-v1"

    def extract(self, title, text):  # pragma: no cover - never called: every extraction is stored
        raise RuntimeError("the benchmark stores every extraction")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=5)
    parser.add_argument("--keep", type=int, default=20)
    parser.add_argument("--wide-refs", type=int, default=40_000, help="Sources of the wide page (0: skip it).")
    parser.add_argument("--wide-writes", type=int, default=25)
    args = parser.parse_args()

    from repos.bench import BenchKbRepository
    from repos.db import make_pool
    from repos.servers import drop_database

    url = fresh_database()
    pool = make_pool(url, 1, 4)
    bench = BenchKbRepository(pool)
    try:
        off = run(pool, 0, args.docs, args.batch_size)
        on = run(pool, args.keep, args.docs, args.batch_size)
        hub = bench.revision_sizes(on["kb_id"], HUB)
        totals = bench.revision_totals(on["kb_id"])
        wide = {}
        if args.wide_refs:
            wide = {
                "off": wide_page(pool, 0, args.wide_refs, args.wide_writes),
                "on": wide_page(pool, args.keep, args.wide_refs, args.wide_writes),
            }
            wide["revisions"] = bench.revision_sizes(wide["on"]["kb_id"], HUB)
    finally:
        pool.close()
        drop_database(ADMIN_URL, DB_NAME)

    kept = len(on["kept"]) - 1  # the current version is the page itself
    print(
        f"{args.docs} documents, {on['batches']} reduce batches of {args.batch_size}: the hub page, named by"
        f" {on['hub_named_by']} documents, is at version {on['hub_version']}, cites its {on['hub_sources']} best"
        f" (quoted) documents, content {on['hub_content_bytes']:,} bytes"
    )
    print(
        f"hub revisions kept: {kept} (KBWIKI_PAGE_REVISIONS_KEEP={args.keep}); without history: {len(off['kept']) - 1}"
    )
    print(
        f"wiki_page_revisions of the KB: {totals['rows']:,} rows, {totals['bytes']:,} bytes stored;"
        f" per revision max {totals['max_bytes']:,}, mean {float(totals['mean_bytes']):,.0f} bytes"
    )
    if hub:
        rows = ", ".join(f"v{r['version']} {r['sources']} sources {r['row']:,} B" for r in (hub[0], hub[-1]))
        print(
            f"hub revisions: oldest and newest kept {rows}; bytes per hub revision"
            f" min {min(r['row'] for r in hub):,} max {max(r['row'] for r in hub):,}"
            f" (content {max(r['content'] for r in hub):,} B at most, refs delta {max(r['refs'] for r in hub):,} B)"
        )
    ratio = on["save_many_s"] / off["save_many_s"] if off["save_many_s"] else float("nan")
    print(
        f"page writes (save_many): {off['save_many_s']:.2f} s without history, {on['save_many_s']:.2f} s with"
        f" ({ratio:.2f}x); reduce batches {off['reduce_s']:.2f} s / {on['reduce_s']:.2f} s"
    )
    if wide:
        revs = wide["revisions"]
        print(
            f"a page citing {args.wide_refs:,} documents, written {args.wide_writes} times (+50 and -1 sources each):"
            f" {len(revs)} revisions kept, {min(r['row'] for r in revs):,} to {max(r['row'] for r in revs):,} bytes"
            f" each (refs delta {max(r['refs'] for r in revs):,} B at most);"
            f" a write {wide['off']['ms_median']:.0f} ms without history, {wide['on']['ms_median']:.0f} ms with"
            f" (median; max {wide['off']['ms_max']:.0f} / {wide['on']['ms_max']:.0f} ms)"
        )
    for run_ in (on, off):
        run_["kept"] = len(run_["kept"]) - 1
    print(
        json.dumps(
            {
                "docs": args.docs,
                "batch_size": args.batch_size,
                "keep": args.keep,
                "with_history": on,
                "without_history": off,
                "revisions": {k: float(v) if k == "mean_bytes" else v for k, v in totals.items()},
                "hub_revisions": hub,
                "wide": {k: v for k, v in wide.items() if k != "revisions"}
                | {"revision_bytes": [r["row"] for r in wide.get("revisions", [])]},
            },
            default=str,
        )
    )
    if kept > args.keep:
        raise SystemExit(f"the hub kept {kept} revisions, more than {args.keep}")


if __name__ == "__main__":
    main()
