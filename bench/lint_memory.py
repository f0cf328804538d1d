"""Benchmark: peak Python allocation of the lint walk on a 1,000-page and a 40,000-page KB.

Usage: .venv/bin/python bench/lint_memory.py [--sizes 1000,40000] [--rebuild] [--untraced]

Creates (or reuses) the scratch database ``kbwiki_bench_lint`` on the server of
``KBWIKI_BENCH_DATABASE_URL`` (an admin URL; default the local ``postgres`` database), applies
the migrations, and builds one KB per size with synthetic but realistic pages bulk-loaded with
COPY: a quarter summaries (one per document), the rest entities and concepts; 1-3 KB of prose
each with ~10 ``[[slug|display]]`` links (popular pages linked more, Zipf-like), later plain
mentions of the pages already linked (as cross-linking leaves them), a few mentions it missed,
a few broken links, near-empty pages, duplicate titles and source refs to deleted documents.
A KB already holding the wanted number of pages is reused.

Then, per size: one untraced warm-up walk on the smallest KB (imports and first-use caches are
not the walk's memory), and a walk under ``tracemalloc`` whose peak (bytes allocated by Python
and still held at the worst moment) and wall time are printed, with the ratio of the largest
to the smallest. Targets (issue 5): peak <= 8 MiB and <= 1.2 x the 1,000-page walk.
"""

from __future__ import annotations

import argparse
import os
import random
import time
import tracemalloc
import uuid

ADMIN_URL = os.environ.get("KBWIKI_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
DB_NAME = "kbwiki_bench_lint"
TENANT = 1
MIB = 1024 * 1024
TARGET_PEAK = 8 * MIB
TARGET_RATIO = 1.2

# The actors package builds its broker from the environment on import; the walk never sends a
# message, so any Redis URL will do (the client connects lazily).
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/15")


def _db_url() -> str:
    base, _, _ = ADMIN_URL.rpartition("/")
    return f"{base}/{DB_NAME}"


def ensure_database() -> str:
    """Create the scratch database if missing and apply migrations; returns its URL."""
    from repos.db import apply_migrations
    from repos.servers import create_database

    create_database(ADMIN_URL, DB_NAME)
    url = _db_url()
    apply_migrations(url)
    return url


# --- corpus ----------------------------------------------------------------------------------

_SYLLABLES = (
    "ka",
    "lo",
    "mi",
    "ne",
    "ru",
    "sa",
    "ti",
    "vo",
    "zen",
    "dar",
    "bel",
    "cor",
    "fin",
    "gal",
    "hum",
    "jor",
    "kel",
    "lim",
    "mor",
    "nus",
    "pra",
    "quo",
    "ris",
    "sul",
    "tor",
    "ulm",
    "vex",
    "wyn",
)


def _words(rng: random.Random, n: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(out)


class Corpus:
    """Titles, slugs and the generator of one KB's pages (deterministic per size)."""

    def __init__(self, n_pages: int, seed: int = 5) -> None:
        from wiki.slugs import slugify

        self.rng = random.Random(seed)
        self.n = n_pages
        self.filler = _words(self.rng, 600) + ["the", "of", "and", "a", "to", "in", "is", "for", "with", "on"] * 30
        names = _words(self.rng, max(2000, n_pages))
        self.n_docs = max(1, n_pages // 4)
        self.pages: list[tuple[str, str, str]] = []  # (slug, title, page_type)
        taken: set[str] = set()
        for i in range(n_pages):
            if i < self.n_docs:
                title, page_type = f"{names[i % len(names)].title()} guide {i}", "summary"
                slug = "doc-" + slugify(title)
            else:
                k = self.rng.randint(1, 3)
                title = " ".join(self.rng.choice(names).title() for _ in range(k)) + (f" {i}" if k == 1 else "")
                page_type = "entity" if i % 3 else "concept"
                slug = slugify(title)
            while slug in taken:
                slug += "-x"
            taken.add(slug)
            self.pages.append((slug, title, page_type))
        # a few duplicate titles (about 0.2 %): the later page takes an earlier page's title in upper case
        for j in range(self.n_docs + 7, n_pages, 500):
            slug, _, page_type = self.pages[j]
            self.pages[j] = (slug, self.pages[j - 3][1].upper(), page_type)
        self.doc_ids = [str(uuid.UUID(int=self.rng.getrandbits(128))) for _ in range(self.n_docs)]

    def _target(self) -> int:
        # Zipf-like popularity: low indexes (and so summaries and early entities) are linked more.
        return min(self.n - 1, int(self.rng.paretovariate(1.1)) * 7 % self.n)

    def content(self, i: int) -> tuple[str, set[str]]:
        """(Markdown content, slugs linked) of page ``i``."""
        from wiki.links import out_link_slugs

        rng = self.rng
        if i % 211 == 5:  # near-empty pages
            return "## Overview\n\nTBD.\n", set()
        paragraphs = []
        size = rng.randint(1000, 3000)
        total = 0
        linked: list[str] = []
        while total < size:
            words = []
            for _ in range(rng.randint(40, 90)):
                r = rng.random()
                if r < 0.03:
                    slug, title, _ = self.pages[self._target()]
                    words.append(f"[[{slug}|{title}]]")
                    linked.append(title)
                elif r < 0.04 and linked:
                    words.append(rng.choice(linked))  # a later mention of a linked page: fine as text
                elif r < 0.0415:
                    words.append(self.pages[rng.randrange(self.n)][1])  # a mention cross-linking missed
                elif r < 0.042:
                    words.append(f"[[missing-{rng.randrange(10_000)}]]")
                else:
                    words.append(rng.choice(self.filler))
            text = " ".join(words).capitalize() + "."
            paragraphs.append(text)
            total += len(text)
        slug, _, page_type = self.pages[i]
        if page_type != "summary":
            src = self.pages[rng.randrange(self.n_docs)]
            paragraphs.append(f"## Sources\n\n- [[{src[0]}|{src[1]}]]")
        content = "\n\n".join(paragraphs) + "\n"
        return content, out_link_slugs(content) - {slug}

    def source_refs(self, i: int) -> list[dict]:
        if i < self.n_docs:
            ids = [i]
        else:
            # most pages cite 1-3 documents; every 97th is a hub citing ~2 % of the KB's documents
            k = max(1, self.n_docs // 50) if i % 97 == 0 else self.rng.randint(1, 3)
            ids = self.rng.sample(range(self.n_docs), min(k, self.n_docs))
        return [{"knowledge_id": self.doc_ids[d], "title": self.pages[d][1]} for d in ids]


def build_kb(url: str, n_pages: int, rebuild: bool) -> str:
    """The id of a KB named ``lint-<n>`` holding ``n_pages`` pages, built with COPY if needed."""
    from repos.bench import BenchKbRepository, copy_kb
    from repos.db import make_pool

    name = f"lint-{n_pages}"
    pool = make_pool(url, 1, 1)
    try:
        bench = BenchKbRepository(pool)
        kb_id = bench.kb_id(name, TENANT)
        if kb_id and not rebuild:
            n = bench.live_page_count(kb_id)
            if n == n_pages:
                print(f"reusing KB {name} ({n:,} pages)")
                return kb_id
        if kb_id:
            bench.drop_kb(kb_id)
        kb_id = bench.create_kb(TENANT, name)
    finally:
        pool.close()

    t0 = time.monotonic()
    corpus = Corpus(n_pages)
    # 1 % of the documents were deleted since their pages were written
    documents = (
        (doc_id, corpus.pages[d][1], f"docs/{d}.md", "deleted" if d % 100 == 42 else "done", d % 100 == 42)
        for d, doc_id in enumerate(corpus.doc_ids)
    )

    def pages():
        for i, (slug, title, page_type) in enumerate(corpus.pages):
            content, links = corpus.content(i)
            aliases = [title.lower() + " system"] if i % 13 == 0 and page_type != "summary" else []
            yield (slug, title, page_type, content, title[:100], aliases, corpus.source_refs(i)), sorted(links)

    copy_kb(url, TENANT, kb_id, documents, pages())
    print(f"built KB {name}: {n_pages:,} pages in {time.monotonic() - t0:.1f} s")
    return kb_id


# --- the walk --------------------------------------------------------------------------------


def walk(deps, kb_id: str, traced: bool) -> tuple[int, float, object]:
    """(peak bytes or 0, wall seconds, report) of one lint walk (no --fix)."""
    from stages.lint import run_lint

    if traced:
        tracemalloc.start()
    t0 = time.monotonic()
    report = run_lint(
        TENANT,
        kb_id,
        deps,
        fix=False,
    )
    wall = time.monotonic() - t0
    peak = 0
    if traced:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, wall, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,40000", help="comma-separated page counts")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the KBs even when they exist")
    parser.add_argument(
        "--untraced",
        action="store_true",
        help="time the walks without tracemalloc (its bookkeeping slows the walk several times)",
    )
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    url = ensure_database()
    kbs = {n: build_kb(url, n, args.rebuild) for n in sizes}

    from repos.db import make_pool
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import Settings

    pool = make_pool(url, 1, 4)
    deps = build_deps(
        Settings(database_url=url, redis_url=os.environ["REDIS_URL"]), pool=pool, extractor=OfflineExtractor()
    )
    walk(deps, kbs[sizes[0]], traced=False)  # warm-up: imports, prepared statements, first-use caches

    if args.untraced:
        for n in sizes:
            _, wall, report = walk(deps, kbs[n], traced=False)
            print(f"{n:>6,} pages: wall {wall:7.1f} s (untraced)  {n / wall:7.0f} pages/s  | {report.summary}")
        pool.close()
        return

    results = {}
    for n in sizes:
        peak, wall, report = walk(deps, kbs[n], traced=True)
        results[n] = peak
        print(
            f"{n:>6,} pages: peak {peak / MIB:6.2f} MiB  wall {wall:7.1f} s (traced)  "
            f"{n / wall:7.0f} pages/s  | {report.summary}"
        )
    pool.close()

    small, large = results[sizes[0]], results[sizes[-1]]
    ratio = large / small if small else float("inf")
    print(
        f"ratio {sizes[-1]:,}/{sizes[0]:,}: {ratio:.2f} (target <= {TARGET_RATIO}); "
        f"peak {large / MIB:.2f} MiB (target <= {TARGET_PEAK / MIB:.0f} MiB)"
    )
    ok = large <= TARGET_PEAK and ratio <= TARGET_RATIO
    print("PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
