"""Benchmark: the back-link lane's mention lookup (``WikiPageRepository.pages_mentioning``) on a
built KB, for the first N of its title keys (sorted) in one query, as a back-link run asks.

Usage: DATABASE_URL=... .venv/bin/python bench/backlink_lookup.py --kb python-stdlib [--keys 1,200,2000,0]
(0 = every key of the KB; prints keys, pages found and the best of 3 runs in ms; build the KB
first, for example with `make demo`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from repos.bench import BenchKbRepository  # noqa: E402
from repos.db import make_pool  # noqa: E402
from repos.pages import WikiPageRepository  # noqa: E402
from wiki.settings import get_settings  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", default="python-stdlib")
    parser.add_argument("--keys", default="1,200,2000,0")
    args = parser.parse_args()
    pool = make_pool(get_settings().database_url, 1, 2)
    repo = WikiPageRepository(pool)
    bench = BenchKbRepository(pool)
    kb_id = bench.kb_id(args.kb)
    if kb_id is None:
        sys.exit(f"no knowledge base named {args.kb!r}")
    keys = bench.title_keys(kb_id)
    for n in (int(x) for x in args.keys.split(",")):
        chosen = keys[:n] if n else keys
        best, found = float("inf"), []
        for _ in range(3):
            start = time.perf_counter()
            found = repo.pages_mentioning(kb_id, chosen)
            best = min(best, time.perf_counter() - start)
        print(f"keys={len(chosen)} pages={len(found)} best_ms={best * 1000:.1f}")
    pool.close()


if __name__ == "__main__":
    main()
