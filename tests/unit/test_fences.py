"""Fenced code versus text: an RST ``~~~`` underline must not swallow prose; an unclosed fence runs
to the end of the document (``wiki.markdown``'s one rule, CommonMark's).

Seen in a new-user trial: a Markdown file with a tilde-underlined heading, and the stdlib ``ast``
module's docstring in the demo, were skipped as "no wiki content: the document has no usable
sentence" because the ``~~~`` line opened a fence that never closed.
"""

from __future__ import annotations

import time

import pytest

from wiki.extract import ExtractionError
from wiki.extract.offline import OfflineExtractor
from wiki.markdown import fenced_code_lines
from wiki.text import document_title

TILDE_DOC = (
    "# Tilde\n\ntilde\n~~~\n\nThe tilde module helps Python programs do things. It keeps the work to a minimum. "
    "Python is a programming language.\n"
)


def _code(text: str) -> list[int]:
    """Indexes of the lines of ``text`` that are fenced code."""
    return [i for i, is_code in enumerate(fenced_code_lines(text.split("\n"))) if is_code]


# --- fenced_code_lines -----------------------------------------------------------------------


def test_closed_fences_are_code_fences_included() -> None:
    assert _code("a\n\n```py\nx = 1\n```\nb") == [2, 3, 4]
    assert _code("~~~~\n~~~\nstill code\n~~~~\nafter") == [0, 1, 2, 3]  # closer needs >= 4 tildes
    assert _code("```\n~~~\n```") == [0, 1, 2]  # the other character does not close


def test_unclosed_fence_runs_to_the_end() -> None:
    assert _code("intro\n\n```python\nwhat follows\nmore") == [2, 3, 4]
    assert _code("a\n\n````\ncode\n```\nb") == [2, 3, 4, 5]  # a shorter run does not close
    # A later unclosed opener keeps the earlier closed block and the text between them.
    assert _code("```\ncode\n```\n\ntext\n\n```\ncode") == [0, 1, 2, 6, 7]


def test_tilde_underline_is_not_a_fence() -> None:
    assert _code(TILDE_DOC) == []
    # An underline followed by a real tilde-fenced block: the block stays code, the prose text.
    text = "ast\n~~~\n\nThe ast module parses code.\n\n~~~\nnode = parse(src)\n~~~\n\nEnd."
    assert _code(text) == [5, 6, 7]
    assert _code("Usage guide\n~~~~~~~~~~~\n\ntext\n\n~~~\ncode\n~~~") == [5, 6, 7]


def test_fence_after_a_text_line_is_still_a_fence() -> None:
    # Markdown lets a fence interrupt a paragraph: longer lines, "...:" lines, backticks shorter
    # than the line, indented lines and info strings are not underlines.
    assert _code("Run this command\n~~~\nmake\n~~~") == [1, 2, 3]
    assert _code("Run:\n```\nmake\n```") == [1, 2, 3]
    assert _code("Usage\n```\nmake\n```") == [1, 2, 3]
    assert _code("  - step\n  ~~~\n  make\n  ~~~") == [1, 2, 3]
    assert _code("ast\n~~~python\nx\n~~~") == [1, 2, 3]


def test_inline_code_at_line_start_is_not_a_fence() -> None:
    assert _code("```x``` is inline\n\ntext") == []
    assert _code("```x``` is inline\n\ntext\n```") == [3]  # the bare run opens a fence


@pytest.mark.timing
def test_many_fences_stay_linear() -> None:
    # Openers with an info string cannot close each other: a naive look-ahead is quadratic here.
    lines = ["```python", "text"] * 20_000
    started = time.perf_counter()
    assert all(fenced_code_lines(lines))
    lines = ["title", "~~~"] * 20_000  # underlines all, never a fence
    assert not any(fenced_code_lines(lines))
    assert time.perf_counter() - started < 1.0


# --- titles and extraction ---------------------------------------------------------------------


def test_title_inside_an_unclosed_fence_is_not_found() -> None:
    assert document_title("x.md", "```\nstray fence\n\n# Not a title\n\nText.") == "x"
    assert document_title("x.md", "```\n# not a title\n```\n\n# Title") == "Title"


def test_tilde_underlined_markdown_yields_wiki_content() -> None:
    extraction = OfflineExtractor().extract("Tilde", TILDE_DOC)
    assert extraction.summary.startswith("The tilde module helps Python programs")
    assert extraction.items
    assert "~" not in extraction.summary and "tilde\n" not in extraction.body


def test_ast_docstring_shape_yields_wiki_content() -> None:
    text = (
        "# ast\n\nast\n~~~\n\nThe `ast` module helps Python applications to process trees of the Python\n"
        "abstract syntax grammar.  The abstract syntax itself might change with\neach Python release.\n"
    )
    extraction = OfflineExtractor().extract("ast", text)
    assert "process trees of the Python abstract syntax grammar" in extraction.summary


def test_unclosed_fence_is_not_prose() -> None:
    text = (
        "Intro text about the widget library for everyone.\n\n```python\nThe widget library draws widgets on screens.\n"
    )
    extraction = OfflineExtractor().extract("Widgets", text)
    assert "`" not in extraction.body
    assert "Intro text about the widget library" in extraction.body
    assert "draws widgets on screens" not in extraction.body


def test_only_code_still_has_no_usable_sentence() -> None:
    with pytest.raises(ExtractionError, match="no usable sentence"):
        OfflineExtractor().extract("Code", "```\nThe fenced text is not prose at all here.\n```\n")
