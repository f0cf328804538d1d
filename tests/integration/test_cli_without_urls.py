"""Every ``kbwiki`` command works when DATABASE_URL and REDIS_URL are unset (the embedded default).

The URLs only exist once ``services()`` has started the servers, and importing ``actors`` builds
the broker from REDIS_URL; a command that imported an actors module before ``services()`` failed
with "REDIS_URL is not set" on every fresh machine (seen for lint, delete, delete-kb and
dead-letters requeue). Each command runs in a fresh interpreter (so no earlier import hides the
fault) with ``services()`` replaced by one that sets the URLs of the test servers on entry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REDIS_URL

SCRIPT = r"""
import contextlib, json, os, sys
from click.testing import CliRunner
import kbwiki.cli as cli
from wiki.settings import get_settings

@contextlib.contextmanager
def services_started_now():
    os.environ["DATABASE_URL"], os.environ["REDIS_URL"] = sys.argv[1], sys.argv[2]
    get_settings.cache_clear()
    yield get_settings()

for name, module in list(sys.modules.items()):
    if name.startswith("kbwiki") and hasattr(module, "services"):
        module.services = services_started_now
result = CliRunner().invoke(cli.main, json.loads(sys.argv[3]))
print(json.dumps({"code": result.exit_code, "output": result.output, "exception": repr(result.exception)}))
"""

COMMANDS = [
    ["status", "--kb", "nope"],
    ["status"],
    ["kbs"],
    ["documents", "--kb", "nope"],
    ["export", "--kb", "nope", "out-dir-never-written"],
    ["lint", "--kb", "nope"],
    ["delete", "--kb", "nope", "doc.md"],
    ["delete-kb", "--kb", "nope", "--yes"],
    ["dead-letters", "list"],
    ["dead-letters", "show", "999999999"],
    ["dead-letters", "requeue", "999999999"],
    ["dead-letters", "purge", "999999999"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:2]))
def test_command_runs_with_urls_unset(database_url, tmp_path, args):
    result = _run(database_url, tmp_path, args)
    assert "REDIS_URL is not set" not in result["output"] + result["exception"]
    assert result["code"] in (0, 1), result  # 1: a clear error such as "no knowledge base named 'nope'"
    assert "Traceback" not in result["output"]
    if result["code"] == 1:
        assert result["exception"] == "SystemExit(1)", result


def _run(database_url, tmp_path, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, database_url, REDIS_URL, json.dumps(args)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_ingesting_a_folder_without_documents_creates_no_kb(database_url, tmp_path, pool):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "image.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00" * 50)
    name = f"empty-{tmp_path.name[-8:]}"
    result = _run(database_url, tmp_path, ["ingest", "folder", "--kb", name])
    assert result["code"] == 1
    assert "nothing was stored" in result["output"] and "rejected image.md: binary" in result["output"]
    # the headline says the one file of the right kind was rejected, not "no .md document" (a new user's trial)
    assert "the one document file under folder was rejected" in result["output"]
    with pool.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM knowledge_bases WHERE name = %s", (name,)).fetchone()["n"] == 0
