"""Which pages a corpus would get, without a database: every document extracted, its mention rows
aggregated in memory as reduce does (``wiki.coverage``), and a vault of the entity and concept
pages written for ``recall.py``, ``sample_pages.py`` and a reader.

Usage: .venv/bin/python -m bench.coverage_sim linux|stdlib|postgres|FOLDER [--limit N] [--out DIR]
       [--jobs 2] [--top 20]

Prints the pages by type and, for the ``--top`` names the most documents mention: how many
documents name them (the mention index), how many of the documents whose prose holds the name as
a whole word (an independent count, case-sensitive for names, not for terms) the index lists, and
how many distinct documents the page quotes. The vault holds one file per page with its title,
aliases, content and a "Mentioned in" count, in ``entity/`` and ``concept/``. A simulation for
working on the extractor's rules: the pipeline itself is measured by ``bench/ingest_linux.py``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import re
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import yaml

from kbwiki.corpus import CorpusDoc, iter_folder_docs, iter_stdlib_docs
from stages.ingest import prepare_document
from wiki.coverage import KeyStats, MentionRow, best, facts_of, has_page, may_have_page, rows_of
from wiki.errors import ExtractionError
from wiki.merge import item_type, title_and_aliases
from wiki.models import Document
from wiki.render import render_item_page
from wiki.settings import Settings
from wiki.slugs import slugify, summary_slug

ROOT = Path(__file__).resolve().parents[1]
CORPORA = {"linux": "bench/corpus/linux-doc.sh", "postgres": "bench/corpus/postgresql-doc.sh"}


def corpus_docs(name: str, limit: int | None) -> list[CorpusDoc]:
    """The documents of a named corpus (fetched by its script), the standard library, or a folder."""
    if name == "stdlib":
        docs = list(iter_stdlib_docs())
    else:
        folder = Path(name)
        if name in CORPORA:
            out = subprocess.run(["bash", str(ROOT / CORPORA[name])], check=True, capture_output=True, text=True)
            folder = Path(out.stdout.strip().splitlines()[-2])
        docs = [d for d in iter_folder_docs(folder) if isinstance(d, CorpusDoc)]
    return docs[:limit] if limit else docs


_extractor = None


def _extract(doc: CorpusDoc) -> tuple[CorpusDoc, object | None]:
    global _extractor
    if _extractor is None:
        from wiki.extract.offline import OfflineExtractor

        _extractor = OfflineExtractor()
    title, content, _, skip = prepare_document(doc.title, doc.text, Settings())
    if skip:
        return doc, None
    try:
        return CorpusDoc(title, doc.source_uri, content), _extractor.extract(title, content)
    except ExtractionError:
        return doc, None


def _whole_word(text: str, name: str, case: bool) -> bool:
    flags = 0 if case else re.IGNORECASE
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text, flags) is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--out", type=Path, default=Path("/tmp/coverage-sim"))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--dump", type=Path, help="pickle every mention row here, for a closer look")
    args = parser.parse_args()
    docs = corpus_docs(args.corpus, args.limit)
    started = time.monotonic()
    with multiprocessing.Pool(args.jobs) as pool:
        extracted = [(d, e) for d, e in pool.imap(_extract, docs, chunksize=8) if e is not None]
    print(f"{len(docs)} documents, {len(extracted)} extracted in {time.monotonic() - started:.1f} s")

    by_key: dict[str, list[MentionRow]] = defaultdict(list)
    texts: dict[str, str] = {}
    for i, (doc, extraction) in enumerate(extracted):
        kid = f"k{i:05d}"
        texts[kid] = doc.text
        document = Document(id=kid, tenant_id=1, knowledge_base_id="sim", title=doc.title, source_uri=doc.source_uri)
        for row in rows_of(document, extraction, summary_slug(doc.title)).values():
            by_key[row.key].append(row)
    if args.dump:
        import pickle

        args.dump.write_bytes(pickle.dumps(dict(by_key)))
    rows = sum(len(r) for r in by_key.values())
    print(f"mention rows: {rows} ({rows / max(1, len(extracted)):.1f} a document), keys: {len(by_key)}")

    pages = {}
    for key, key_rows in by_key.items():
        stats = KeyStats()
        for row in key_rows:
            stats.apply(row)
        if not may_have_page(stats):
            continue
        names: dict[tuple[str, bool], int] = defaultdict(int)
        for row in key_rows:
            names[(row.name, False)] += 1
            for alias in row.aliases:
                names[(alias, True)] += 1
        chosen = best(key_rows)
        title, aliases = title_and_aliases(names)
        if not has_page(stats, title, chosen):
            continue
        kind = item_type(stats.entity, stats.docs, chosen[0].kind if chosen else "")
        pages[key] = (title, aliases, kind, facts_of(chosen), stats, key_rows)
    counts = defaultdict(int)
    for _, _, page_type, *_ in pages.values():
        counts[page_type] += 1
    print("pages by type: " + ", ".join(f"{t}={n}" for t, n in sorted(counts.items())))

    out = args.out
    for sub in ("entity", "concept"):
        (out / sub).mkdir(parents=True, exist_ok=True)
        for old in (out / sub).glob("*.md"):
            old.unlink()
    for title, aliases, page_type, facts, stats, _ in pages.values():
        meta = yaml.safe_dump({"title": title, "aliases": aliases}, allow_unicode=True, sort_keys=False).strip()
        content = render_item_page(title, facts, aliases)
        path = out / page_type / f"{slugify(title)}.md"
        path.write_text(f"---\n{meta}\n---\n\n# {title}\n\n{content}\nMentioned in {stats.docs} documents.\n")
    print(f"vault: {out}")

    print(f"\n{'page':<28} {'index':>6} {'prose':>6} {'listed':>7} {'quoted':>7}")
    top = sorted(pages.values(), key=lambda p: (-p[4].docs, p[0]))[: args.top]
    for title, aliases, _type, facts, stats, key_rows in top:
        case = any(r.named for r in key_rows)
        forms = [title, *aliases]
        prose = {kid for kid, text in texts.items() if any(_whole_word(text, f, case) for f in forms)}
        listed = {r.knowledge_id for r in key_rows}
        print(
            f"{title[:28]:<28} {stats.docs:>6} {len(prose):>6} {len(prose & listed) / max(1, len(prose)):>7.2f}"
            f" {len(facts):>7}"
        )


if __name__ == "__main__":
    main()
