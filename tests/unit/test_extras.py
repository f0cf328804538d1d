"""A feature whose extra is not installed says which extra to install (``wiki.extras``), from the
command that needs it and from the offline extractor's Chinese and Japanese paths."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

from kbwiki.cli import main
from wiki.errors import ExtractionUnavailable, MissingExtra
from wiki.extras import require


@pytest.fixture()
def missing(monkeypatch):
    """Make the named modules unimportable (None in sys.modules), with require's cache cleared."""

    def hide(*modules: str) -> None:
        for module in modules:
            monkeypatch.setitem(sys.modules, module, None)

    require.cache_clear()
    yield hide
    require.cache_clear()


def test_a_missing_module_names_its_extra_and_the_install(missing):
    missing("rjieba")
    with pytest.raises(
        MissingExtra, match=r"Chinese and Japanese text needs kbwiki's cjk extra: pip install 'kbwiki\[cjk\]'"
    ):
        require("cjk", "rjieba")
    require("llm", "json")  # present: no error


def test_chinese_text_without_the_cjk_extra_is_unavailable_not_a_bad_document(missing):
    from wiki.extract import cjk

    missing("rjieba")
    with pytest.raises(MissingExtra) as caught:
        cjk._zh_runs("北京大兴国际机场位于北京。")
    # the document waits and is tried again once the extra is there, as for any unavailable extractor
    assert isinstance(caught.value, ExtractionUnavailable)


def test_serve_without_the_web_extra_is_one_line_naming_it(missing, tmp_path):
    missing("uvicorn")
    result = CliRunner().invoke(main, ["serve"], env={"KBWIKI_HOME": str(tmp_path)})
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the web face (kbwiki serve, kbwiki mcp) needs kbwiki's web extra: pip install 'kbwiki[web]'"
        " (module uvicorn is missing: import of uvicorn halted; None in sys.modules)"
    ]


def test_mcp_without_the_web_extra_is_one_line_naming_it(missing, tmp_path):
    missing("mcp")
    result = CliRunner().invoke(main, ["mcp"], env={"KBWIKI_HOME": str(tmp_path)})
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "Error: the web face (kbwiki serve, kbwiki mcp) needs kbwiki's web extra: pip install 'kbwiki[web]'"
        " (module mcp is missing: import of mcp halted; None in sys.modules)"
    ]
