"""Benchmark: what the merge guards make of a KB's near names (issue 16, merges the model decides).

Usage: DATABASE_URL=... .venv/bin/python bench/merge_pairs.py --kb NAME [--samples 15]

For every live entity/concept page, the pages of the same type whose title or alias is
trigram-similar (the lookup map uses: ``similar_titles_many``, ``TRGM_THRESHOLD``), as unordered
pairs of titles; then how many ``wiki.dedup.merge_refused`` refuses (by guard) and how many would
be put to the model, with samples of each, and the lookup's time per title. No model call. Run it
on a KB an ingest left (bench/llm_scripted.py, bench/ingest_linux.py).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from repos.bench import BenchKbRepository  # noqa: E402
from repos.db import make_pool  # noqa: E402
from repos.pages import WikiPageRepository  # noqa: E402
from wiki.dedup import merge_refused, name_key  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", required=True)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--batch", type=int, default=40, help="titles per lookup (a document's items at most)")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        sys.exit("set DATABASE_URL")
    pool = make_pool(os.environ["DATABASE_URL"])
    kb_id = BenchKbRepository(pool).kb_id(args.kb)
    if kb_id is None:
        sys.exit(f"no KB named {args.kb!r}")
    pages = WikiPageRepository(pool)
    items = [p for p in pages.iter_pages(kb_id) if p.page_type in ("entity", "concept")]
    pairs: dict[str, set[tuple[str, str]]] = defaultdict(set)
    times = []
    for i in range(0, len(items), args.batch):
        batch = items[i : i + args.batch]
        started = time.perf_counter()
        similar = pages.similar_titles_many(kb_id, [p.title for p in batch], k=10)
        times.append((time.perf_counter() - started) * 1000)
        for page in batch:
            for other in similar.get(page.title.lower(), []):
                if other.slug == page.slug or other.page_type != page.page_type:
                    continue
                if name_key(other.title) == name_key(page.title):
                    continue
                pair = tuple(sorted((page.title, other.title)))
                pairs[merge_refused(*pair) or "asked"].add(pair)
    median = statistics.median(times)
    print(f"{len(items)} entity/concept pages; lookups of {args.batch} titles: median {median:.1f} ms")
    total = sum(len(v) for v in pairs.values())
    for kind in ("asked", "number", "related"):
        found = sorted(pairs.get(kind, ()))
        print(f"\n{kind}: {len(found)} of {total} same-type near pairs")
        for a, b in random.Random(0).sample(found, min(args.samples, len(found))):
            print(f"  {a}  |  {b}")


if __name__ == "__main__":
    main()
