"""Benchmark: a new user's day on the embedded default, in every order (issue 25).

Usage: .venv/bin/python bench/lifetime.py

For each of the 6 orders of starting ``kbwiki serve``, ``kbwiki worker`` and
``kbwiki ingest --wait``, and each of the 2 orders of stopping ``serve`` and the worker with
Ctrl-C, runs ``tests.support.lifetime.day`` on a fresh home: ``status`` after the ingest,
``kbwiki down`` and ``kbwiki up`` under the running commands, a second ingest. Prints one line per
run (problems, ``serve``'s answers, seconds from ``kbwiki up`` to the second ingest's documents all
done) and a summary. Target: no problem in any run, the worker resumes within 10 s.
"""

from __future__ import annotations

import itertools
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.lifetime import STARTS, day  # noqa: E402


def main() -> int:
    results = []
    for start_order in itertools.permutations(STARTS):
        for stop_order in itertools.permutations(("serve", "worker")):
            with tempfile.TemporaryDirectory(prefix="kbwiki-lifetime-") as base:
                run = day(Path(base), start_order, stop_order)
            line = {
                "start": "-".join(start_order),
                "stop": "-".join(stop_order),
                "problems": run.problems(),
                "serve": run.statuses,
                "resume_s": round(run.resume_s or 0, 2),
            }
            print(json.dumps(line), flush=True)
            results.append(line)
    worst = max(r["resume_s"] for r in results)
    clean = sum(not r["problems"] for r in results)
    print(json.dumps({"runs": len(results), "clean": clean, "worst_resume_s": worst}))
    return 0 if clean == len(results) and worst <= 10 else 1


if __name__ == "__main__":
    sys.exit(main())
