"""The one Markdown scanner: which parts of a text are front matter, code, links, URLs or prose.

Every module that must tell Markdown structure from prose asks here, so they all agree on what is
code and what is a link: the offline extractor (which lines are prose), link parsing, linkify and
candidate phrases (``wiki.links``), lint (links and prose of a page), document titles
(``wiki.text``), the corpus reader (front matter) and the check of an exported vault.

It is a scanner, not a parser: one pass over the lines for the block level, one regex for the
inline level, linear in the text, giving :class:`Span` s with exact character offsets into the text
as given (linkify edits the text at those offsets). Rules, in the order they apply:

- **Front matter**: the text's first line is exactly ``---`` and a later line is exactly ``---``
  or ``...`` (Jekyll, Hugo, Obsidian and Pandoc agree on this); a block never closed is not
  front matter.
- **Fenced code**: a line that starts, after any indentation, with a run of 3 or more backticks or
  tildes opens a fence; the next line holding only a run of the same character at least as long
  closes it (both fence lines belong to the block). Any indentation, not CommonMark's 0-3 spaces:
  a fence inside a nested list item is indented further and is still code. Two would-be openers
  are text: a backtick run followed by another backtick on its line (``"```x``` is inline"``, as
  CommonMark says), and a bare run directly under a text line that it underlines (an RST-style
  title, ``ast`` / ``~~~``; see ``_is_underline``).
- **An unclosed fence runs to the end of the document**, as CommonMark says and as every renderer
  (Obsidian, GitHub) shows it: what follows a stray or half-typed opener is code there, so linkify
  must not link inside it and the extractor does not read it as prose. The tilde underline that
  once made documents lose their prose to such a fence is the underline rule above, not this one.
- **Headings** (ATX, ``#`` to ``######``), **reference definitions** (``[x]: url``) and **table
  rows** (a line starting with ``|``) are whole-line blocks.
- **Inline** (outside the blocks above): code spans (a backtick run closed by a run of the same
  length; may wrap a line, never a blank line), wiki links (:data:`WIKI_LINK_RE`, the one pattern
  of the project), Markdown links and images (:data:`MD_LINK_RE`), reference links
  (``[text][ref]``), autolinks (``<scheme:...>``), bare URLs (``scheme://`` or ``www.``), e-mail
  addresses and HTML tags. At one position the first of these that matches wins, in that order,
  so a backtick inside a URL does not open a code span.
- **Prose** is everything else. Indented code blocks are not detected: without a full parser they
  cannot be told from list continuations.

Why not a CommonMark library (markdown-it-py): its inline tokens carry no offsets (only block
tokens carry line numbers), and linkify needs exact character offsets; wiki links and the RST
underline rule are outside CommonMark anyway; and this scanner is a regex per line.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Sequence
from typing import NamedTuple


class Kind(enum.StrEnum):
    """What a :class:`Span` of a text is."""

    FRONT_MATTER = "front_matter"
    FENCED_CODE = "fenced_code"
    HEADING = "heading"
    REF_DEF = "ref_def"
    TABLE_ROW = "table_row"
    INLINE_CODE = "inline_code"
    WIKI_LINK = "wiki_link"
    MD_LINK = "md_link"
    REF_LINK = "ref_link"
    AUTOLINK = "autolink"
    URL = "url"
    EMAIL = "email"
    HTML = "html"
    PROSE = "prose"


class Span(NamedTuple):
    """``text[start:end]`` is of kind ``kind`` (character offsets, end exclusive)."""

    kind: Kind
    start: int
    end: int


#: The wiki link, ``[[target]]``, ``[[target|display]]``, ``[[target#heading|display]]``: groups
#: 1 target, 2 heading, 3 display (None when absent). No bracket or newline inside.
WIKI_LINK_RE = re.compile(r"\[\[([^\[\]\n|#]*)(?:#([^\[\]\n|]*))?(?:\|([^\[\]\n]*))?\]\]")

_MD_LINK = (
    r"!?\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"  # text: one level of nested brackets
    r"\((?:[^()\s]|\([^()\s]*\))*(?:[ \t]+\"[^\"\n]*\")?\)"  # destination, optional "title"
)
#: A Markdown link or image, ``[text](url "title")`` / ``![alt](src)``; group ``text``.
MD_LINK_RE = re.compile(_MD_LINK)
_AUTOLINK = r"<(?:[a-zA-Z][a-zA-Z0-9+.-]*:|mailto:)[^<>\s]+>"
#: An autolink, ``<https://example.org>``.
AUTOLINK_RE = re.compile(_AUTOLINK)

# The inline scan needs no captures inside the link patterns (they cost it ~4 %): the same
# patterns with their groups made non-capturing.
_WIKI_LINK_BARE = WIKI_LINK_RE.pattern.replace("(?:", "(").replace("(", "(?:")
_MD_LINK_BARE = _MD_LINK.replace("(?P<text>", "(?:")
_INLINE_RE = re.compile(
    "|".join(
        f"(?P<{kind}>{pattern})"
        for kind, pattern in (
            (Kind.INLINE_CODE, r"(?<!`)(`+)(?!`)(?:[^`\n]|`(?!\2)|\n(?![ \t]*\n))+?(?<!`)\2(?!`)"),
            (Kind.WIKI_LINK, _WIKI_LINK_BARE),
            (Kind.MD_LINK, _MD_LINK_BARE),
            (Kind.REF_LINK, r"\[[^\[\]\n]+\]\[[^\[\]\n]*\]"),
            (Kind.AUTOLINK, _AUTOLINK),
            (Kind.URL, r"(?:\b[a-zA-Z][a-zA-Z0-9+.-]*://|\bwww\.)[^\s<>\[\]]+"),
            # only where a run starts: retrying inside every word was a third of the scan
            (Kind.EMAIL, r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
            (Kind.HTML, r"</?[a-zA-Z][^<>\n]*>"),
        )
    )
)
_KIND_OF_GROUP = {kind.value: kind for kind in Kind}


# The first line is exactly "---"; the block ends at the first line "---" or "..."; \r? keeps
# CRLF files working.
_FRONT_MATTER_RE = re.compile(r"\A---\r?\n(.*?)^(?:---|\.\.\.)\r?(?:\n|\Z)", re.DOTALL | re.MULTILINE)

# A fence line: indentation, a run of 3+ backticks or tildes, the rest (info string or nothing).
_FENCE_LINE_RE = re.compile(r"^([ \t]*)(`{3,}|~{3,})(.*)$")
# Whole-line blocks, one match per line: an ATX heading, a reference definition, a table row (a
# link's "|" would split a table cell, so table rows are not linkified).
_ATX_HEADING = r" {0,3}#{1,6}(?:[ \t]|$)"
_LINE_BLOCK_RE = re.compile(rf"({_ATX_HEADING})|( {{0,3}}\[[^\]\n]+\]:[ \t])| {{0,3}}\|")
#: An ATX heading's start (``#`` to ``######`` after up to 3 spaces, then a blank or the line end).
HEADING_RE = re.compile(_ATX_HEADING)
#: A whole ATX heading line (``#`` to ``######`` after up to 3 spaces), for callers that drop them.
HEADING_LINE_RE = re.compile(rf"^(?={_ATX_HEADING}).*$", re.MULTILINE)


# --- front matter ------------------------------------------------------------------------


def front_matter(text: str) -> tuple[str | None, int]:
    """(the front matter's inner text, the offset where the rest of ``text`` starts), or
    (None, 0) when ``text`` opens with no closed front matter block (see the module's rules)."""
    m = _FRONT_MATTER_RE.match(text)
    return (m.group(1), m.end()) if m else (None, 0)


# --- fenced code -------------------------------------------------------------------------


def _fence_run(line: str) -> tuple[str, int, bool, bool] | None:
    """(char, run length, bare, indented) of a fence line, or None. ``bare``: nothing after the
    run but spaces (only a bare run can close a fence or underline a title)."""
    m = _FENCE_LINE_RE.match(line)
    if m is None:
        return None
    run, rest = m.group(2), m.group(3)
    if run[0] == "`" and "`" in rest:
        return None  # "```x``` and more" is inline code at a line start, not a fence
    return run[0], len(run), not rest.strip(), bool(m.group(1))


def _is_underline(run: tuple[str, int, bool, bool], title: str) -> bool:
    """Whether a bare, unindented run directly under the text line ``title`` underlines it.

    RST titles sit at the line start and their underline is about as long: tildes may be up to
    2 characters short (a common ``tilde`` / ``~~~`` sloppiness), backticks, which Markdown
    fences use far more, must be at least as long. A line ending in ":" introduces its block.
    """
    char, length, bare, indented = run
    stripped = title.strip()
    if not bare or indented or not stripped or title[:1] in (" ", "\t") or stripped.endswith(":"):
        return False
    slack = 2 if char == "~" else 0
    return length + slack >= len(stripped)


def fence_blocks(lines: Sequence[str]) -> list[tuple[int, int]]:
    """(first line, line after the last) of each fenced code block of ``lines``, fence lines
    included, in order; an unclosed fence runs to the last line. Lines may keep their line ends.
    Linear in the number of lines."""
    blocks: list[tuple[int, int]] = []
    fence: tuple[str, int] | None = None
    opened = 0
    prev_text = ""  # the previous line when it is text (no fence line, not code), else ""
    for i, line in enumerate(lines):
        run = _fence_run(line)
        if fence is not None:
            if run is not None and run[2] and run[0] == fence[0] and run[1] >= fence[1]:
                blocks.append((opened, i + 1))
                fence = None
            prev_text = ""
            continue
        if run is None:
            prev_text = line
            continue
        if not _is_underline(run, prev_text):
            fence, opened = (run[0], run[1]), i
        prev_text = ""
    if fence is not None:
        blocks.append((opened, len(lines)))
    return blocks


def fenced_code_lines(lines: Sequence[str]) -> list[bool]:
    """For each of ``lines``, whether it belongs to a fenced code block (fence lines included;
    see :func:`fence_blocks`)."""
    code = [False] * len(lines)
    for first, end in fence_blocks(lines):
        code[first:end] = [True] * (end - first)
    return code


# --- spans -------------------------------------------------------------------------------


def block_spans(text: str) -> list[Span]:
    """The whole-line blocks of ``text`` in order: front matter, fenced code, headings, reference
    definitions and table rows. A span ends after its last line's line end (an unclosed fence
    at the end of the text)."""
    spans: list[Span] = []
    _, body = front_matter(text)
    if body:
        spans.append(Span(Kind.FRONT_MATTER, 0, body))
    lines = text[body:].splitlines(keepends=True)
    starts = [body] * (len(lines) + 1)
    for i, line in enumerate(lines):
        starts[i + 1] = starts[i] + len(line)
    fences = fence_blocks(lines)
    fences.append((len(lines), len(lines)))
    i = 0
    for first, end in fences:
        for k in range(i, first):
            m = _LINE_BLOCK_RE.match(lines[k])
            if m:
                kind = Kind.HEADING if m.group(1) is not None else Kind.REF_DEF if m.group(2) else Kind.TABLE_ROW
                spans.append(Span(kind, starts[k], starts[k + 1]))
        if end > first:
            spans.append(Span(Kind.FENCED_CODE, starts[first], starts[end]))
        i = end
    return spans


def _spans(text: str, code_only: bool) -> list[tuple[str, int, int]]:
    """:func:`spans` as plain (kind, start, end) tuples: linkify scans every page it links, and
    building a :class:`Span` per inline match made the scan a quarter slower."""
    out: list[tuple[str, int, int]] = []
    pos = 0
    code = Kind.INLINE_CODE.value
    for block in [*block_spans(text), Span(Kind.FENCED_CODE, len(text), len(text))]:
        if code_only and block.kind is not Kind.FENCED_CODE:
            continue
        for m in _INLINE_RE.finditer(text, pos, block.start):
            kind = m.lastgroup
            if not code_only or kind == code:
                out.append((kind, m.start(), m.end()))  # type: ignore[arg-type]
        if block.end > block.start:
            out.append(block)
        pos = block.end
    return out


def spans(text: str, code_only: bool = False) -> list[Span]:
    """Every non-prose span of ``text``, sorted and non-overlapping: blocks, then inline spans
    between them. With ``code_only`` just fenced and inline code (inline code is still found by
    the full scan, so a backtick inside a URL or a link opens nothing), and inline spans inside
    headings and tables count too."""
    return [Span(_KIND_OF_GROUP[kind], start, end) for kind, start, end in _spans(text, code_only)]


def scan(text: str) -> list[Span]:
    """``text`` cut into spans that cover it end to end, prose included (``Kind.PROSE`` for the
    gaps between :func:`spans`)."""
    out: list[Span] = []
    pos = 0
    for span in spans(text):
        if span.start > pos:
            out.append(Span(Kind.PROSE, pos, span.start))
        out.append(span)
        pos = span.end
    if pos < len(text):
        out.append(Span(Kind.PROSE, pos, len(text)))
    return out


def prose_segments(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each stretch of prose in ``text``, in order."""
    pos = 0
    for _, start, end in _spans(text, code_only=False):
        if start > pos:
            yield pos, start
        pos = max(pos, end)
    if pos < len(text):
        yield pos, len(text)


# --- wiki links --------------------------------------------------------------------------


def wiki_link_matches(text: str) -> Iterator[re.Match[str]]:
    """The :data:`WIKI_LINK_RE` matches of ``text`` in order, skipping those overlapping code
    (fenced or inline): a wiki link in code is no link."""
    code = _spans(text, code_only=True)
    ci = 0
    for m in WIKI_LINK_RE.finditer(text):
        while ci < len(code) and code[ci][2] <= m.start():
            ci += 1
        if ci < len(code) and code[ci][1] < m.end():
            continue
        yield m


def wiki_link_text(m: re.Match[str]) -> str:
    """What a reader sees of the wiki link ``m`` (a :data:`WIKI_LINK_RE` match): its display
    text, else its target as written (heading included)."""
    display = m.group(3)
    return display if display is not None else m.group(0)[2:-2]
