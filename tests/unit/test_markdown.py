"""The one Markdown scanner (``wiki.markdown``): each span kind, offsets, and the unclosed-fence rule."""

from __future__ import annotations

import pytest

from wiki.extract.offline import OfflineExtractor
from wiki.links import LinkTarget, linkify, parse_links
from wiki.markdown import (
    WIKI_LINK_RE,
    Kind,
    Span,
    block_spans,
    front_matter,
    prose_segments,
    scan,
    spans,
    wiki_link_matches,
    wiki_link_text,
)
from wiki.text import document_title


def _kinds(text: str) -> list[tuple[Kind, str]]:
    """(kind, covered text) of every non-prose span of ``text``."""
    return [(s.kind, text[s.start : s.end]) for s in spans(text)]


# --- each span kind ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "covered"),
    [
        ("---\ntitle: X\n---\nBody", Kind.FRONT_MATTER, "---\ntitle: X\n---\n"),
        ("---\ntitle: X\n...\nBody", Kind.FRONT_MATTER, "---\ntitle: X\n...\n"),
        ("a\n```py\nx = 1\n```\nb", Kind.FENCED_CODE, "```py\nx = 1\n```\n"),
        ("a:\n~~~~\n~~~\n~~~~\nb", Kind.FENCED_CODE, "~~~~\n~~~\n~~~~\n"),
        ("a\n## Heading\nb", Kind.HEADING, "## Heading\n"),
        ("a\n[1]: https://example.org\nb", Kind.REF_DEF, "[1]: https://example.org\n"),
        ("a\n| x | y |\nb", Kind.TABLE_ROW, "| x | y |\n"),
        ("use `x = 1` here", Kind.INLINE_CODE, "`x = 1`"),
        ("use ``a ` b`` here", Kind.INLINE_CODE, "``a ` b``"),
        ("see [[acme-corp|Acme]] now", Kind.WIKI_LINK, "[[acme-corp|Acme]]"),
        ('see [the docs](https://x.org/a_(b) "T") now', Kind.MD_LINK, '[the docs](https://x.org/a_(b) "T")'),
        ("a ![logo](logo.png) b", Kind.MD_LINK, "![logo](logo.png)"),
        ("see [the docs][1] now", Kind.REF_LINK, "[the docs][1]"),
        ("see <https://x.org/a> now", Kind.AUTOLINK, "<https://x.org/a>"),
        ("see https://x.org/a?b=1 now", Kind.URL, "https://x.org/a?b=1"),
        ("see www.x.org now", Kind.URL, "www.x.org"),
        ("mail ann@x.org now", Kind.EMAIL, "ann@x.org"),
        ('a <span title="x">b', Kind.HTML, '<span title="x">'),
    ],
)
def test_each_kind(text: str, kind: Kind, covered: str) -> None:
    assert (kind, covered) in _kinds(text)


def test_scan_covers_the_text_with_exact_offsets() -> None:
    text = "---\nt: 1\n---\n# Title\n\nSee [[a|A]] and `b`, https://c.org.\n\n```\ncode\n```\nEnd."
    parts = scan(text)
    assert parts[0].start == 0 and parts[-1].end == len(text)
    assert all(a.end == b.start for a, b in zip(parts, parts[1:]))
    assert "".join(text[p.start : p.end] for p in parts) == text
    assert [p.kind for p in parts] == [
        Kind.FRONT_MATTER,
        Kind.HEADING,
        Kind.PROSE,
        Kind.WIKI_LINK,
        Kind.PROSE,
        Kind.INLINE_CODE,
        Kind.PROSE,
        Kind.URL,
        Kind.PROSE,
        Kind.FENCED_CODE,
        Kind.PROSE,
    ]
    assert [text[a:b] for a, b in prose_segments(text)] == [
        "\nSee ",
        " and ",
        ", ",
        "\n\n",
        "End.",
    ]  # the URL takes its final dot, as before


def test_first_inline_kind_at_a_position_wins() -> None:
    # A backtick inside a URL opens no code span; code hides a wiki link.
    assert _kinds("https://x.org/`a and `b`") == [(Kind.URL, "https://x.org/`a"), (Kind.INLINE_CODE, "`b`")]
    assert _kinds("`[[a]]`") == [(Kind.INLINE_CODE, "`[[a]]`")]


def test_inline_code_wraps_a_line_not_a_paragraph() -> None:
    assert _kinds("`a\nb`") == [(Kind.INLINE_CODE, "`a\nb`")]
    assert _kinds("`a\n\nb`") == []


def test_front_matter_needs_its_first_line_and_a_closer() -> None:
    assert front_matter("---\ntitle: X\n---\nBody") == ("title: X\n", 17)
    assert front_matter("---\ntitle: X\nBody") == (None, 0)  # never closed
    assert front_matter("Intro\n---\ntitle: X\n---\n") == (None, 0)  # not at the start
    assert front_matter(" ---\nx\n---\n") == (None, 0)
    assert Kind.FRONT_MATTER not in [s.kind for s in block_spans("---\nnot closed\n")]


def test_no_fence_inside_front_matter() -> None:
    # The front matter's lines are metadata: a "```" there opens nothing.
    text = "---\nx: ```\n---\nText"
    assert [s.kind for s in spans(text)] == [Kind.FRONT_MATTER]


# --- the unclosed-fence rule ---------------------------------------------------------------


def test_unclosed_fence_runs_to_the_end_of_the_document() -> None:
    text = "Intro.\n\n```python\ncode Acme Corp\n\n# Heading\n\nmore"
    assert block_spans(text) == [Span(Kind.FENCED_CODE, 8, len(text))]
    assert list(prose_segments(text)) == [(0, 8)]


def test_unclosed_fence_rule_is_the_same_for_every_user() -> None:
    text = "Intro about Acme Corp.\n\n```\n[[acme-corp]] and Acme Corp\n\n# Title in code\n"
    acme = LinkTarget("acme-corp", "Acme Corp")
    assert parse_links(text) == []  # link parsing, lint, crosslink
    out, _ = linkify(text, [acme])
    assert out.count("[[acme-corp") == 2 and out.index("[[acme-corp|Acme Corp]]") < text.index("```")
    assert document_title("doc.md", text) == "doc"  # titles
    body = OfflineExtractor().extract("Acme", "Acme Corp makes widgets for everyone here.\n\n" + text).body
    assert "Title in code" not in body and "makes widgets" in body  # the extractor


def test_a_closer_must_be_bare_long_enough_and_of_the_same_character() -> None:
    text = "```\nx\n~~~\n``` no\n``\n"  # none of these closes it
    assert block_spans(text) == [Span(Kind.FENCED_CODE, 0, len(text))]
    assert block_spans("````\nx\n```\n````\ny") == [Span(Kind.FENCED_CODE, 0, 16)]
    assert block_spans("  ```\nx\n      ```\ny") == [Span(Kind.FENCED_CODE, 0, 18)]  # any indentation


def test_underline_and_inline_code_at_a_line_start_open_no_fence() -> None:
    assert block_spans("Usage guide\n~~~~~~~~~~~\n\ntext") == []
    assert block_spans("```x``` is inline code\ntext") == []


# --- wiki links ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("link", "groups", "seen"),
    [
        ("[[a-b]]", ("a-b", None, None), "a-b"),
        ("[[a-b|Ab]]", ("a-b", None, "Ab"), "Ab"),
        ("[[a-b#Sec|Ab]]", ("a-b", "Sec", "Ab"), "Ab"),
        ("[[a-b#Sec]]", ("a-b", "Sec", None), "a-b#Sec"),
        ("[[a|b|c]]", ("a", None, "b|c"), "b|c"),
        ("[[a|]]", ("a", None, ""), ""),
    ],
)
def test_wiki_link_pattern(link: str, groups: tuple, seen: str) -> None:
    m = WIKI_LINK_RE.fullmatch(link)
    assert m is not None and m.groups() == groups
    assert wiki_link_text(m) == seen


@pytest.mark.parametrize("text", ["[[a\nb]]", "[[a[b]]", "[a]"])
def test_not_a_wiki_link(text: str) -> None:
    assert WIKI_LINK_RE.search(text) is None or WIKI_LINK_RE.search(text).group(0) != text


def test_wiki_links_in_code_are_skipped() -> None:
    text = "[[a]] `[[b]]`\n```\n[[c]]\n```\n# [[d]]\n| [[e]] |"
    assert [m.group(1) for m in wiki_link_matches(text)] == ["a", "d", "e"]
