"""Benchmark: the offline extractor's cost per document on linux-doc files, no servers involved.

Usage: .venv/bin/python bench/extract_speed.py [--n 300] [--seed 1]

Fetches the corpus with bench/corpus/linux-doc.sh, reads ``--n`` .rst files chosen with
``--seed`` as ``kbwiki ingest`` would (``kbwiki.corpus.iter_folder_docs``), warms the extractor
up (models and word lists load once per process), then times ``OfflineExtractor.extract`` over
them and prints milliseconds per document, the median and the 95th percentile, the number of
entities and concepts found, and a SHA-256 digest of every extraction: a change made for speed
alone must leave the digest as it was.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time

from bench.ingest_linux import fetch_corpus
from kbwiki.corpus import CorpusDoc, iter_folder_docs
from wiki.extract import ExtractionError
from wiki.extract.offline import OfflineExtractor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    files = sorted(fetch_corpus().rglob("*.rst"))
    random.Random(args.seed).shuffle(files)
    docs = [d for f in files[: args.n] for d in iter_folder_docs(f) if isinstance(d, CorpusDoc)]
    extractor = OfflineExtractor()
    extractor.extract("warm-up", "The warm-up document loads every model once. It has two sentences.")
    times, kinds, digest = [], {"entity": 0, "concept": 0}, hashlib.sha256()
    for doc in docs:
        start = time.perf_counter()
        try:
            extraction = extractor.extract(doc.title, doc.text)
        except ExtractionError:
            extraction = None
        times.append(time.perf_counter() - start)
        digest.update(extraction.model_dump_json().encode() if extraction else b"-")
        for item in extraction.items if extraction else []:
            kinds[item.kind] += 1
    ms = [t * 1000 for t in times]
    print(
        f"{extractor.name}: {len(docs)} documents, {statistics.fmean(ms):.1f} ms/document "
        f"(median {statistics.median(ms):.1f}, p95 {sorted(ms)[int(0.95 * len(ms))]:.1f}); "
        f"entities={kinds['entity']} concepts={kinds['concept']} digest={digest.hexdigest()[:16]}"
    )


if __name__ == "__main__":
    main()
