"""Command lines refused before any server is asked (exit 2, one line saying why), found by a new
user trying options that made no sense together or values other commands refuse."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kbwiki.cli import main


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["export", "--kb", "docs", ""], "an empty folder name"),  # was the current folder
        (["kbs", "--tenant", "-1"], "-1 is not in the range"),  # as every other --tenant
        (["ingest", ".", "--kb", "docs", "--estimate", "--wait"], "--estimate stores nothing: --wait"),
        (["ingest", ".", "--kb", "docs", "--estimate", "--set-root"], "--estimate stores nothing: --set-root"),
    ],
)
def test_a_command_line_that_cannot_mean_anything_is_refused(argv, said):
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output
