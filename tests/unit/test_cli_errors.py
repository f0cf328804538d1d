"""Bad settings and unreachable servers end a command with one clear line, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

KBWIKI = [sys.executable, "-m", "kbwiki.cli"]


def _run(tmp_path, **env) -> subprocess.CompletedProcess:
    base = {
        k: v for k, v in os.environ.items() if not k.startswith("KBWIKI_") and k not in ("DATABASE_URL", "REDIS_URL")
    }
    env = {"KBWIKI_HOME": str(tmp_path / "home"), **env}
    return subprocess.run(
        [*KBWIKI, "status", "--kb", "x"], cwd=tmp_path, env={**base, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"KBWIKI_INGEST_BATCH_SIZE": "abc"}, "bad setting KBWIKI_INGEST_BATCH_SIZE='abc'"),
        ({"KBWIKI_LOG_LEVEL": "LOUD"}, "bad setting KBWIKI_LOG_LEVEL='LOUD'"),
        ({"KBWIKI_LLM_EXTRA_BODY": "{bad"}, "bad setting KBWIKI_LLM_EXTRA_BODY='{bad': not JSON"),
        # past wiki_map's time limit Dramatiq would interrupt a document mid-call
        ({"KBWIKI_LLM_DOCUMENT_BUDGET_S": "600"}, "bad setting KBWIKI_LLM_DOCUMENT_BUDGET_S='600'"),
        (
            {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0"},
            "cannot connect to PostgreSQL (DATABASE_URL)",
        ),
    ],
)
def test_bad_settings_and_unreachable_servers_give_one_line(tmp_path, env, expected):
    out = _run(tmp_path, **env)
    assert out.returncode == 1
    assert expected in out.stderr
    assert "Traceback" not in out.stderr
    assert not (tmp_path / "home").exists()  # nothing was started


def test_a_home_that_is_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "home").write_text("not a folder")
    out = _run(tmp_path, KBWIKI_HOME=str(tmp_path / "home"))
    assert out.returncode == 1 and "cannot use KBWIKI_HOME=" in out.stderr and "Traceback" not in out.stderr
