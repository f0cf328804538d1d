"""Input edges a new user hit: KB names with control characters, symlinks out of the ingested
folder, and log lines among a command's output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from kbwiki.cli import main
from kbwiki.corpus import CorpusDoc, Rejected, Skipped, iter_folder_docs
from tests.conftest import REDIS_URL
from wiki.models import valid_kb_name

BAD_NAMES = [
    "two\nlines",
    "tab\there",
    "nul\x00",
    "esc\x1b[31mred",
    "c\rr",
    "del\x7f",
    "c\x85d",
    "ls\u2028x",
    "ps\u2029x",
    "bidi\u202egnp.exe",
    "isolate\u2066x",
]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_kb_name_with_a_control_character_is_refused_everywhere(name, clean_db):
    from repos.knowledge import KnowledgeBaseRepository

    with pytest.raises(ValidationError):
        valid_kb_name(name)
    with pytest.raises(ValueError):
        KnowledgeBaseRepository(clean_db).get_or_create(1, name)
    result = CliRunner().invoke(main, ["status", "--kb", name])
    assert result.exit_code == 2 and "knowledge base name cannot contain" in result.output
    with clean_db.connection() as conn:
        assert conn.execute("SELECT count(*) AS n FROM knowledge_bases").fetchone()["n"] == 0


@pytest.mark.parametrize(
    ("name", "stored"),
    [
        ("  padded  ", "padded"),
        ("日本語の知識", "日本語の知識"),
        ("dev 👩\u200d💻", "dev 👩\u200d💻"),
        ("a" * 255, "a" * 255),
    ],
)
def test_printable_kb_names_are_kept(name, stored):
    assert valid_kb_name(name) == stored


def test_empty_and_long_kb_names_keep_their_messages():
    runner = CliRunner()
    assert "cannot be empty" in runner.invoke(main, ["status", "--kb", "  "]).output
    assert "at most 255 characters (got 256)" in runner.invoke(main, ["status", "--kb", "a" * 256]).output


def test_a_symlink_out_of_the_folder_is_skipped_with_a_reason(tmp_path):
    root, outside = tmp_path / "docs", tmp_path / "private"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    text = "A document about the symlinks of a folder that is ingested. " * 3
    (root / "a.md").write_text(text)
    (outside / "secret.md").write_text("Secret notes that live outside the ingested folder, never to be read. " * 3)
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "sub" / "leakdir").symlink_to(outside, target_is_directory=True)
    (root / "alias.md").symlink_to(root / "a.md")  # inside: a second name of a.md, skipped
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)  # inside: not followed

    found = {(x.source_uri if isinstance(x, CorpusDoc) else x.path): x for x in iter_folder_docs(root)}
    assert sorted(found) == ["a.md", "alias.md", "leak.md", "sub/leakdir", "sub/loop"]
    assert isinstance(found["a.md"], CorpusDoc)
    assert found["alias.md"] == Skipped("alias.md", "same file as a.md (a symbolic link to it)")
    assert found["sub/loop"] == Skipped("sub/loop", "symbolic link to ., a folder that holds it (a loop); not followed")
    for rel in ("leak.md", "sub/leakdir"):
        assert type(found[rel]) is Rejected
        assert "symbolic link to" in found[rel].reason and "outside the folder; skipped" in found[rel].reason
    assert not any("Secret" in x.text for x in found.values() if isinstance(x, CorpusDoc))


def test_a_commands_output_has_no_log_lines_and_its_logs_go_to_the_home(tmp_path, database_url):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.md").write_text("A sentence long enough to be a document of its own here. " * 60)
    (folder / "short.md").write_text("A short document that is written in full, without a cut. " * 3)
    (folder / "tiny.md").write_text("Tiny.")
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KBWIKI_")}
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=REDIS_URL,
        KBWIKI_HOME=str(home),
        KBWIKI_KEY_PREFIX=f"kbwiki-test-{uuid.uuid4().hex[:8]}",
        KBWIKI_REDIS_NAMESPACE="kbwiki-test-edges",
        KBWIKI_MAX_DOCUMENT_CHARS="1000",
    )
    out = subprocess.run(
        [sys.executable, "-m", "kbwiki.cli", "ingest", str(folder), "--kb", f"edges-{uuid.uuid4().hex[:6]}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        assert not [line for line in stream.splitlines() if line.lstrip().startswith("{")], stream
    # each reason names the limit and the setting that moves it
    assert "queued long.md: cut to 1000 characters (KBWIKI_MAX_DOCUMENT_CHARS)" in out.stdout
    assert "skipped tiny.md: empty or near-empty (5 characters; KBWIKI_MIN_DOCUMENT_CHARS is 40)" in out.stdout
    events = [json.loads(line) for line in (home / "commands.log").read_text().splitlines()]
    assert "document.cut" in {e["event"] for e in events}
