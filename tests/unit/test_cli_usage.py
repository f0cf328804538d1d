"""Usage errors of the kbwiki command that come before any server starts."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kbwiki.cli import main


def test_bad_kb_names_get_a_usage_error_before_any_server_starts():
    for name in ("", "   ", "x" * 300):
        result = CliRunner().invoke(main, ["status", "--kb", name])
        assert result.exit_code == 2, result.output
        assert "knowledge base name" in result.output


# Servers that do not answer: a value the command accepted would end in "cannot connect" (exit 1),
# not in the usage error (exit 2) expected, and would start nothing.
_NO_SERVERS = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/x", "REDIS_URL": "redis://127.0.0.1:1/0"}


@pytest.mark.parametrize(
    "args",
    [
        ["ingest", "DIR", "--kb", "x", "--wait", "--timeout", "-5"],
        ["ingest", "DIR", "--kb", "x", "--wait", "--timeout", "0"],
        ["ingest", "DIR", "--kb", "x", "--wait", "--timeout", "nan"],
        ["ingest", "DIR", "--kb", "x", "--wait", "--timeout", "inf"],
        ["delete", "--kb", "x", "a.md", "--wait", "--timeout", "-1"],
        ["status", "--kb", "x", "--tenant", "-1"],
        ["status", "--kb", "x", "--tenant", str(2**63)],
        ["serve", "--tenant", "-2"],
        ["dead-letters", "list", "--tenant", "-1"],
        ["dead-letters", "show", "0"],
        ["dead-letters", "requeue", "0"],
        ["dead-letters", "purge", "0"],
    ],
)
def test_nonsensical_numbers_are_usage_errors(tmp_path, args):
    (tmp_path / "a.md").write_text("# A\n\nA document long enough to be stored as one.\n")
    args = [str(tmp_path) if a == "DIR" else a for a in args]
    result = CliRunner().invoke(main, args, env={**_NO_SERVERS, "KBWIKI_HOME": str(tmp_path / "home")})
    assert result.exit_code == 2, result.output
    assert "Invalid value" in result.output and "Traceback" not in result.output


def test_a_file_just_over_the_limit_never_reads_as_the_limit(tmp_path):
    from kbwiki.corpus import MIB, too_large

    assert too_large(20 * MIB + 1, 20).startswith("too large: 20.1 MiB, over the 20 MiB limit")
