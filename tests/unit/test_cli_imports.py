"""The kbwiki command must not import the actors package before it knows its servers.

Importing ``actors`` builds the broker from REDIS_URL; with the embedded default that URL only
exists once ``kbwiki.cli.services()`` has started the servers. A command module that imports
actors at import time broke every command on a fresh machine (seen: "REDIS_URL is not set").
"""

from __future__ import annotations

import os
import subprocess
import sys

MODULES = [
    "kbwiki.cli",
    "kbwiki.ingest",
    "kbwiki.status",
    "kbwiki.demo",
    "kbwiki.export",
    "kbwiki.corpus",
    "kbwiki.workers",
    "kbwiki.vault",
]


def test_command_modules_do_not_import_actors():
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DATABASE_URL")}
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in MODULES)
        + "bad = sorted(m for m in sys.modules if m == 'actors' or m.startswith('actors.'))\nprint(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_bad_kb_names_get_a_usage_error_before_any_server_starts():
    from click.testing import CliRunner

    from kbwiki.cli import main

    for name in ("", "   ", "x" * 300):
        result = CliRunner().invoke(main, ["status", "--kb", name])
        assert result.exit_code == 2, result.output
        assert "knowledge base name" in result.output
