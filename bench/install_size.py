"""Benchmark: what a producer app installs (issue 30.5).

Usage: .venv/bin/python bench/install_size.py

Builds two throw-away virtual environments from this checkout (not editable): the core alone
(``pip install kbwiki``: what a producer and an offline worker on Latin text need) and with every
extra (``kbwiki[all]``, what ``make install`` adds). For each it prints the size of site-packages
(MiB) and the seconds pip took, then checks in the core one that a producer can import the actors,
build the broker and hold ``wiki_submit`` (no connection is made), that ``kbwiki --help`` runs, and
that ``kbwiki serve`` ends on one line naming the ``web`` extra. Pip uses whatever index or cache
this machine's pip is configured with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PRODUCER = """
import actors
from actors.ingest import wiki_submit
actors.setup_broker()
print(wiki_submit.actor_name)
"""


def _size_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20


def _venv(base: Path, name: str, spec: str) -> tuple[Path, float, float]:
    """(the venv's python, pip's seconds, site-packages MiB) of a new venv with ``spec`` installed."""
    venv = base / name
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    started = time.monotonic()
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", spec],
        check=True,
        cwd=base,
    )
    took = time.monotonic() - started
    [site] = list((venv / "lib").glob("python3*/site-packages"))
    return python, took, _size_mib(site)


def main() -> int:
    results, problems = {}, []
    with tempfile.TemporaryDirectory(prefix="kbwiki-install-") as tmp:
        base = Path(tmp)
        for name, spec in (("core", str(REPO)), ("all", f"{REPO}[all]")):
            python, took, mib = _venv(base, name, spec)
            results[name] = {"site_packages_mib": round(mib, 1), "pip_s": round(took, 1)}
            print(json.dumps({"install": name, **results[name]}), flush=True)
            if name != "core":
                continue
            env = {k: v for k, v in os.environ.items() if not k.startswith(("KBWIKI_", "DATABASE_URL", "REDIS_URL"))}
            env["KBWIKI_HOME"] = str(base / "home")
            env["REDIS_URL"] = "redis://127.0.0.1:1/0"  # a producer names its broker; nothing connects before a send
            producer = subprocess.run([str(python), "-c", PRODUCER], capture_output=True, text=True, env=env, cwd=tmp)
            if producer.returncode != 0 or producer.stdout.strip() != "wiki_submit":
                problems.append(f"producer: {producer.stderr.strip()[-500:]}")
            kbwiki = str(python.parent / "kbwiki")
            helped = subprocess.run([kbwiki, "--help"], capture_output=True, text=True, env=env, cwd=tmp)
            if helped.returncode != 0:
                problems.append(f"kbwiki --help: {helped.stderr.strip()[-500:]}")
            served = subprocess.run([kbwiki, "serve"], capture_output=True, text=True, env=env, cwd=tmp, timeout=60)
            if served.returncode != 1 or "pip install 'kbwiki[web]'" not in served.stderr:
                problems.append(f"kbwiki serve: exit {served.returncode}: {served.stderr.strip()[-500:]}")
    saved = results["all"]["site_packages_mib"] - results["core"]["site_packages_mib"]
    print(json.dumps({"summary": results, "extras_mib": round(saved, 1), "problems": problems}), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
