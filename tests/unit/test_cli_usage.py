"""Usage errors of the kbwiki command that come before any server starts."""

from __future__ import annotations

from click.testing import CliRunner

from kbwiki.cli import main


def test_bad_kb_names_get_a_usage_error_before_any_server_starts():
    for name in ("", "   ", "x" * 300):
        result = CliRunner().invoke(main, ["status", "--kb", name])
        assert result.exit_code == 2, result.output
        assert "knowledge base name" in result.output
