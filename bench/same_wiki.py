"""Benchmark: the demo's documents built in one thread, with no worker, give which exported vault?

Usage: .venv/bin/python bench/same_wiki.py OUT_DIR [--limit N]

Builds the demo's corpus (the standard library's modules, ``kbwiki.corpus.iter_stdlib_docs``) the
way the tests do (``tests.support.pipeline``: submit every document, then run each stage in this
thread until the lanes are empty, reduce in batches of the configured size) on a scratch database
made afresh on the server of ``KBWIKI_BENCH_DATABASE_URL`` (an admin URL; default the local
``postgres`` database) and dropped at the end, with Redis at ``REDIS_URL`` (default db 14 on
localhost; keys under a prefix of the run's own), and exports the vault to ``OUT_DIR``. Prints the
documents, files and seconds.

Same input, same wiki: ``diff -r -x .kbwiki-vault`` of this vault and a ``kbwiki demo`` export
(any ``-p``/``-t``, any ``KBWIKI_INGEST_BATCH_SIZE``) should be empty; run from another checkout
(``PYTHONPATH=<checkout>``) it shows what a change did to the pages. Only the vault marker differs
(it names the KB's id).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from pathlib import Path

# tests.support drives the stages; appended, so a PYTHONPATH naming another checkout comes first
sys.path.append(str(Path(__file__).resolve().parents[1]))


def main() -> None:
    """Build, export, print; the scratch database is dropped whatever happens."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents (0: all)")
    args = parser.parse_args()
    from repos.servers import create_database, drop_database

    admin = os.environ.get("KBWIKI_BENCH_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
    name = f"kbwiki_bench_same_{uuid.uuid4().hex[:8]}"
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/14")
    os.environ["KBWIKI_REDIS_NAMESPACE"] = f"{name}-dramatiq"
    create_database(admin, name)
    url = f"{admin.rpartition('/')[0]}/{name}"
    try:
        build(url, name, args.out_dir, args.limit)
    finally:
        drop_database(admin, name)


def build(url: str, prefix: str, out_dir: Path, limit: int) -> None:
    """Build the corpus into a KB of the database at ``url`` and export it to ``out_dir``."""
    import actors
    from kbwiki.corpus import iter_stdlib_docs
    from kbwiki.export import export_vault
    from repos.db import apply_migrations, make_pool
    from stages.deps import build_deps
    from tests.support.pipeline import settle, submit_all
    from wiki.settings import Settings

    apply_migrations(url)
    settings = Settings(database_url=url, redis_url=os.environ["REDIS_URL"], key_prefix=prefix, debounce_ms=0)
    actors.setup_broker(settings)  # triggers are sent, and never run: this thread runs every stage
    pool = make_pool(url, 1, 4)
    try:
        deps = build_deps(settings, pool=pool)
        kb = deps.kbs.get_or_create(1, "python-stdlib")
        docs = list(iter_stdlib_docs())[: limit or None]
        started = time.monotonic()
        submit_all(deps, kb, docs)
        settle(deps, kb, max_rounds=500)
        files = export_vault(deps.pages, kb.id, out_dir, kb_name=kb.name, mentions=deps.mentions)
        print(f"documents={len(docs)} files={files} seconds={time.monotonic() - started:.0f}", file=sys.stderr)
        for key in deps.redis.scan_iter(f"{prefix}*"):
            deps.redis.delete(key)
    finally:
        pool.close()


if __name__ == "__main__":
    main()
