"""``kbwiki ingest`` of a folder whose one file is over the size limit: the error names the size,
the limit and the setting that raises it (the command runs against the test's PostgreSQL)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from kbwiki.cli import main


@pytest.fixture()
def fresh_settings():
    """Settings read anew from each invocation's environment, as in a new process, and after the test."""
    from wiki.settings import get_settings

    get_settings.cache_clear()
    yield get_settings.cache_clear
    get_settings.cache_clear()


def test_a_folder_of_one_file_too_large_names_its_size_the_limit_and_the_setting(
    tmp_path, fresh_settings, database_url
):
    from tests.conftest import REDIS_URL

    folder = tmp_path / "docs"
    folder.mkdir()
    with open(folder / "big.txt", "wb") as f:
        f.truncate(100 * 1024 * 1024)  # sparse: 100 MiB on paper, nothing on disk
    # the KB's root decides the names it reports, so the folder is read once the servers answer
    env = {"DATABASE_URL": database_url, "REDIS_URL": REDIS_URL, "KBWIKI_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(main, ["ingest", str(folder), "--kb", "x"], env=env)
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"Error: nothing was stored: the one document file under {folder} was rejected:",
        "rejected big.txt: too large: 100.0 MiB, over the 20 MiB limit (KBWIKI_MAX_FILE_MB raises it)",
    ]
    # the setting named raises the limit: the file is read (and found to be all zero bytes)
    fresh_settings()
    result = CliRunner().invoke(main, ["ingest", str(folder), "--kb", "x"], env={**env, "KBWIKI_MAX_FILE_MB": "200"})
    assert result.exit_code == 1 and "rejected big.txt: binary" in result.output
