"""Benchmark: do the web face's reads stay flat from 1,000 to 40,000 documents?

Usage: .venv/bin/python bench/web.py [--sizes 1000,40000] [--requests 500] [--prepare]

KBs: ``scale-N`` built by bench/scale.py's generator (the same corpus, pages rendered as reduce
renders them, loaded with COPY, VACUUM ANALYZE), in a scratch database of this benchmark's own
(``kbwiki_bench_web`` on env KBWIKI_BENCH_DATABASE_URL, default the local server), kept between runs.

Measurement: ``kbwiki.web.app`` served by uvicorn in a subprocess (one worker, as
``kbwiki serve`` runs); this process sends ``--requests`` sequential requests per kind over one
keep-alive HTTP connection and times each (wall, client side): page view (``/page/<slug>``:
page, out-link liveness, backlinks, Markdown, template), backlinks (``/backlinks.json``), search
(``/search`` as htmx asks it: the first 4 letters of a word of a sampled title, then the whole
word, alternately) and graph (``/graph.json``: two hops, capped). Pages are a fixed pseudo-random
sample of the KB's pages that link or are linked (every type; hubs come as often as they are in
the KB; an unlinked page's graph is a single node and would flatter the numbers). 20 warm-up requests
per kind are not counted; requests to the KBs of every size alternate, so load on the machine
weighs on each alike. Prints p50/p95/max per kind and size, the mean pages per graph, and the
ratio of p95 at the largest size to p95 at the smallest.

MCP (``/mcp`` of the same server, streamable HTTP): the SDK's own client (``mcp.Client``, one
connection) calls ``search`` (the same queries as the web search) and ``read_page`` (the same
pages) ``--requests`` times each, timed around ``call_tool`` (the JSON-RPC round trip, the tool's
reads in the server's thread pool, the client's check of the answer against the tool's output
schema): "mcp search" and "mcp read_page" in the table. Target: p95 <= 50 ms at 40,000 documents.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import scale  # noqa: E402  (bench/scale.py: corpus and KB builder)

scale.DB_NAME = "kbwiki_bench_web"
WARMUP = 20


def serve(url: str, port: int) -> None:
    """Run the app on ``port`` until killed (the subprocess side)."""
    import uvicorn

    from kbwiki.web.app import create_app
    from repos.db import make_pool

    uvicorn.run(create_app(make_pool(url, 1, 8), tenant_id=1), host="127.0.0.1", port=port, log_level="warning")


def start_server(url: str) -> tuple[subprocess.Popen, str]:
    import httpx

    from tests.support.web import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", url, "--port", str(port)])
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            httpx.get(base + "/metrics", timeout=2)
            return proc, base
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("the web server did not start") from None
            time.sleep(0.1)


def _requests(kb_id: str, pages: list[dict], n: int) -> dict[str, list[str]]:
    kb = f"/kb/{quote(kb_id)}"
    words = []
    for p in pages:
        found = re.findall(r"[A-Za-z]{5,}", p["title"])
        if found:
            words.append(found[0].lower())
    searches = [f"{kb}/search?q={quote(w[:4] if i % 2 == 0 else w)}" for i, w in enumerate(words)]
    slugs = [quote(p["slug"], safe="") for p in pages]
    cycle = lambda xs: [xs[i % len(xs)] for i in range(n + WARMUP)]  # noqa: E731
    return {
        "page view": cycle([f"{kb}/page/{s}" for s in slugs]),
        "backlinks": cycle([f"{kb}/backlinks.json/{s}" for s in slugs]),
        "search": cycle(searches),
        "graph": cycle([f"{kb}/graph.json/{s}" for s in slugs]),
    }


def _mcp_calls(kb_id: str, pages: list[dict], n: int) -> dict[str, list[tuple[str, dict]]]:
    words = []
    for p in pages:
        found = re.findall(r"[A-Za-z]{5,}", p["title"])
        if found:
            words.append(found[0].lower())
    searches = [("search", {"kb": kb_id, "query": w[:4] if i % 2 == 0 else w}) for i, w in enumerate(words)]
    reads = [("read_page", {"kb": kb_id, "slug": p["slug"]}) for p in pages]
    cycle = lambda xs: [xs[i % len(xs)] for i in range(n + WARMUP)]  # noqa: E731
    return {"mcp search": cycle(searches), "mcp read_page": cycle(reads)}


def measure_mcp(base: str, kbs: dict[int, tuple[str, list[dict]]], n: int) -> dict[int, dict[str, list[float]]]:
    """Milliseconds per MCP tool call, per size and kind, through the SDK's client over one
    streamable-HTTP connection to ``base``/mcp; sizes alternate as in :func:`measure`."""
    import anyio

    from tests.support.mcp_client import http_client

    plans = {size: _mcp_calls(kb_id, pages, n) for size, (kb_id, pages) in kbs.items()}
    times: dict[int, dict[str, list[float]]] = {size: {} for size in kbs}

    async def run() -> None:
        async with http_client(f"{base}/mcp") as client:
            for kind in next(iter(plans.values())):
                for i in range(n + WARMUP):
                    for size, plan in plans.items():
                        tool, args = plan[kind][i]
                        t0 = time.perf_counter()
                        result = await client.call_tool(tool, args)
                        ms = (time.perf_counter() - t0) * 1000
                        if result.is_error:
                            raise RuntimeError(f"{tool} {args}: {result.content[0].text}")
                        if i >= WARMUP:
                            times[size].setdefault(kind, []).append(ms)

    anyio.run(run)
    return times


def _summary(ts: list[float]) -> dict:
    ts = sorted(ts)
    return {
        "p50_ms": round(statistics.median(ts), 1),
        "p95_ms": round(ts[int(len(ts) * 0.95) - 1], 1),
        "max_ms": round(ts[-1], 1),
    }


def measure(base: str, kbs: dict[int, tuple[str, list[dict]]], n: int) -> dict[int, dict[str, dict]]:
    """p50/p95/max (ms) per size and kind of request, and the mean nodes per graph. Requests to the
    KBs of every size alternate (1k, 40k, 1k, ...), so a busy moment of the machine weighs on
    every size alike."""
    import httpx

    plans = {size: _requests(kb_id, pages, n) for size, (kb_id, pages) in kbs.items()}
    times: dict[int, dict[str, list[float]]] = {size: {} for size in kbs}
    nodes: dict[int, list[int]] = {size: [] for size in kbs}
    with httpx.Client(base_url=base, timeout=30, headers={"HX-Request": "true"}) as client:
        for kind in next(iter(plans.values())):
            for i in range(n + WARMUP):
                for size, plan in plans.items():
                    path = plan[kind][i]
                    t0 = time.perf_counter()
                    r = client.get(path)
                    ms = (time.perf_counter() - t0) * 1000
                    if r.status_code != 200:
                        raise RuntimeError(f"{path}: HTTP {r.status_code}")
                    if i >= WARMUP:
                        times[size].setdefault(kind, []).append(ms)
                        if kind == "graph":
                            nodes[size].append(len(r.json()["nodes"]))
    for size, kinds in measure_mcp(base, kbs, n).items():
        times[size].update(kinds)
    out: dict[int, dict[str, dict]] = {}
    for size, kinds in times.items():
        out[size] = {kind: _summary(ts) for kind, ts in kinds.items()}
        out[size]["graph"]["mean_nodes"] = round(statistics.mean(nodes[size]), 1)
        out[size]["graph"]["max_nodes"] = max(nodes[size])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,40000")
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--prepare", action="store_true", help="only build the KBs")
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port)
        return

    from repos.bench import BenchKbRepository
    from repos.db import apply_migrations, make_pool
    from repos.servers import create_database

    sizes = sorted(int(s) for s in args.sizes.split(","))
    scale.CACHE.mkdir(parents=True, exist_ok=True)
    corpus = scale.extractions(scale.sections())
    if len(corpus) < sizes[-1]:
        sys.exit(f"corpus has {len(corpus)} usable sections, {sizes[-1]} needed")
    url = scale.bench_url()
    create_database(scale.ADMIN_URL, scale.DB_NAME)
    apply_migrations(url)
    pool = make_pool(url, 1, 4)
    kbs = {n: scale.build_kb(pool, f"scale-{n}", corpus[:n]) for n in sizes}
    if args.prepare:
        return
    proc, base = start_server(url)
    try:
        bench = BenchKbRepository(pool)
        results = measure(
            base,
            {n: (kb_id, bench.sample_pages(kb_id, args.requests, seed="web")) for n, kb_id in kbs.items()},
            args.requests,
        )
    finally:
        proc.terminate()
        proc.wait(10)
    for n, kb_id in kbs.items():
        print(json.dumps({"documents": n, "pages": BenchKbRepository(pool).live_page_count(kb_id), **results[n]}))
    print(f"\n{'docs':>6} {'kind':>13} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7}")
    for n, rows in results.items():
        for kind, r in rows.items():
            print(f"{n:>6} {kind:>13} {r['p50_ms']:>7} {r['p95_ms']:>7} {r['max_ms']:>7}")
    if len(sizes) > 1:
        lo, hi = results[sizes[0]], results[sizes[-1]]
        print("\np95 ratio " + ", ".join(f"{k}: {hi[k]['p95_ms'] / max(lo[k]['p95_ms'], 0.01):.2f}" for k in lo))


if __name__ == "__main__":
    os.environ.setdefault("KBWIKI_LOG_LEVEL", "WARNING")
    main()
