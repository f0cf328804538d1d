"""Benchmark: ingest linux-doc documents with ``KBWIKI_EXTRACTOR=llm`` through the scripted
OpenAI-compatible server of the tests (real HTTP, the real SDK, real worker processes).

Usage: DATABASE_URL=... REDIS_URL=... .venv/bin/python bench/llm_scripted.py [--docs 50]
       [--processes 2] [--threads 4] [--section-chars 12000]

The server answers each call with a valid answer built from the document's own sentences
(``tests.support.llm_server.realistic``: quotes copied from it, capitalised terms as items, an
offered page as ``same_as`` and a ``[[pN]]`` link). Prints pages by type, dead links, the share of
quotes in the pages found in their source (whitespace normalised), the share of the quotes the
"model" proposed that were kept, dead letters, and calls and tokens per document. The corpus comes
from bench/corpus/linux-doc.sh (the first N .rst files by path); a fresh KB in the given database.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import shutil  # noqa: E402

from bench.ingest_linux import fetch_corpus  # noqa: E402
from repos.bench import KbProbe  # noqa: E402
from tests.support.llm_server import ScriptedLLM, is_merge_request, mode_of, realistic  # noqa: E402
from wiki.extract.llm.extractor import normalise  # noqa: E402

KBWIKI = [str(ROOT / ".venv/bin/kbwiki")]


class Recorder:
    """``realistic`` answers, with calls, tokens and proposed quotes counted per document title."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: dict[str, int] = defaultdict(int)
        self.tokens: dict[str, int] = defaultdict(int)
        self.quotes_proposed = 0
        self.merge_calls = 0
        self.merge_items = 0

    def __call__(self, request: dict) -> dict:
        response = realistic(request)
        user = request["messages"][1]["content"]
        if is_merge_request(request):  # answered "all new"; counted apart from the extraction calls
            with self.lock:
                self.merge_calls += 1
                self.merge_items += len(re.findall(r"^i\d+: ", user, re.M))
                self.tokens[user.split('<document title="', 1)[1].split('">', 1)[0]] += response["json"]["usage"][
                    "total_tokens"
                ]
            return response
        # Sections of one document share its title (two documents with one title count as one).
        title = user.split('<document handle="d1" title="', 1)[1].split('">', 1)[0]
        usage = response["json"]["usage"]
        content = response["json"]["choices"][0]["message"]["content"]
        fenced = mode_of(request) == "fenced"  # a quote of the document may hold ``` in any mode
        body = json.loads(content.split("```json\n", 1)[1].split("\n```", 1)[0] if fenced else content)
        with self.lock:
            self.calls[title] += 1
            self.tokens[title] += usage["total_tokens"]
            self.quotes_proposed += sum(len(i["evidence"]) for i in body["items"])
        return response


def _events(log: str, event: str) -> list[dict]:
    """The JSON log events named ``event`` (lines two processes wrote into each other are skipped)."""
    out = []
    decoder = json.JSONDecoder()
    for line in log.splitlines():
        if f'"{event}"' not in line or not line.startswith("{"):
            continue
        try:
            value, _ = decoder.raw_decode(line)
        except ValueError:
            continue
        if value.get("event") == event:
            out.append(value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=50)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--section-chars", type=int, default=12_000)
    args = parser.parse_args()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        sys.exit("set DATABASE_URL and REDIS_URL (the bench reads the pages back from PostgreSQL)")
    folder = fetch_corpus()
    kb_name = f"linux-doc-llm-{int(time.time())}"
    recorder = Recorder()
    with ScriptedLLM(recorder) as server, tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "KBWIKI_EXTRACTOR": "llm",
            "KBWIKI_LLM_BASE_URL": server.url,
            "KBWIKI_LLM_MODEL": "scripted",
            "KBWIKI_LLM_API_KEY": "none",
            "KBWIKI_LLM_SECTION_CHARS": str(args.section_chars),
        }
        subprocess.run([*KBWIKI, "migrate"], cwd=ROOT, env=env, check=True, capture_output=True)
        docs = Path(tmp) / "docs"
        docs.mkdir()
        # Copies, not symlinks: ingest skips a symlink that leads outside the folder it reads.
        for i, path in enumerate(sorted(folder.rglob("*.rst"))[: args.docs]):
            shutil.copyfile(path, docs / f"{i:05d}-{path.name}")
        log = open(Path(tmp) / "worker.log", "ab")  # noqa: SIM115
        worker = subprocess.Popen(
            [*KBWIKI, "worker", "-p", str(args.processes), "-t", str(args.threads)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            started = time.monotonic()
            ingest = subprocess.run(
                [*KBWIKI, "ingest", str(docs), "--kb", kb_name, "--wait"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
            elapsed = time.monotonic() - started
            if ingest.returncode:
                sys.exit(f"kbwiki ingest failed:\n{ingest.stdout}\n{ingest.stderr}")
            status = json.loads(
                subprocess.run(
                    [*KBWIKI, "status", "--kb", kb_name, "--json"],
                    cwd=ROOT,
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
        finally:
            worker.terminate()
            worker.wait(timeout=120)
        merge_lines = _events((Path(tmp) / "worker.log").read_text(errors="replace"), "llm.merges")
    kb_id = status["knowledge_base"]["id"]
    probe = KbProbe(os.environ["DATABASE_URL"], kb_id)
    texts = {kid: normalise(content) for kid, content in probe.contents().items()}
    facts = probe.item_facts()
    quotes = [(kid, q) for f in facts for kid, fact in f.items() for q in fact.evidence]
    found = sum(q in texts.get(kid, "") for kid, q in quotes)
    calls, tokens = list(recorder.calls.values()), list(recorder.tokens.values())
    print(f"kbwiki ingest --wait exit code: {ingest.returncode}; wall time {elapsed:.1f} s for {args.docs} files")
    print("ingest: " + " | ".join(line for line in ingest.stdout.splitlines() if not line.startswith("  "))[-600:])
    print("documents: " + ", ".join(f"{k}={v}" for k, v in sorted(status["documents"].items())))
    print("pages by type: " + ", ".join(f"{k}={v}" for k, v in sorted(status["pages"].items())))
    print("links: " + ", ".join(f"{k}={v}" for k, v in sorted(status["links"].items())))
    print(f"dead letters: {status['dead_letters']}")
    print(f"quotes in pages found in their source: {found}/{len(quotes)} ({found / max(len(quotes), 1):.1%})")
    print(f"quotes proposed by the model: {recorder.quotes_proposed} (pages keep at most 3 per source and page)")
    mapped = sum(status["documents"].values())
    print(
        f"calls per document: {sum(calls) / mapped:.2f} ({sum(calls)} calls for {mapped} documents; by title:"
        f" median {statistics.median(calls):.0f}, max {max(calls)})"
    )
    print(
        f"merge calls: {recorder.merge_calls} for {mapped} documents, {recorder.merge_items} items asked"
        " (answered 'all new'; their tokens are in the tokens per document)"
    )
    if merge_lines:
        lookup = sorted(m["lookup_ms"] for m in merge_lines if "lookup_ms" in m)
        refused: dict[str, int] = defaultdict(int)
        for m in merge_lines:
            for why, n in m.get("refused", {}).items():
                refused[why] += n
        print(
            f"merge search: {len(merge_lines)} documents with items new to the KB (open items"
            f" {sum(m['open_items'] for m in merge_lines)}, with candidates"
            f" {sum(m.get('with_candidates', 0) for m in merge_lines)}, candidates"
            f" {sum(m.get('candidates', 0) for m in merge_lines)}, refused by the guards {dict(refused)});"
            + (
                f" lookup ms per document: median {statistics.median(lookup):.1f},"
                f" p95 {lookup[int(len(lookup) * 0.95)]:.1f}, max {lookup[-1]:.1f}"
                if lookup
                else ""
            )
        )
    print(
        f"tokens per document: {sum(tokens) / mapped:.0f} (by title: median {statistics.median(tokens):.0f},"
        f" max {max(tokens)})"
    )


if __name__ == "__main__":
    main()
