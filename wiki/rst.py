"""reStructuredText: the RST syntax kbwiki recognises, defined once for :func:`rst_to_text` (an ``.rst``
document as Markdown-ish text at ingest) and for the offline extractor's prose reader (RST in docstrings
and in submitted text)."""

from __future__ import annotations

import re

#: A section title's over- or underline, or a transition: one punctuation character repeated, 3 or more.
ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
#: Explicit markup: a directive, comment, target, footnote or substitution definition (``.. ``).
EXPLICIT = re.compile(r"^(\s*)\.\.(?:\s|$)")
#: A field list's marker at a line's start and the blanks after it (``:param x: ...``; a directive's
#: options are fields). A blank or the line's end must follow: ``:class:`Foo` is ...`` opens with a role.
FIELD = re.compile(r"^\s*:[\w ()-]+:(?:\s+|$)")
#: A simple table's border ("=====  =====", two columns or more).
SIMPLE_TABLE_BORDER = re.compile(r"^\s*=+(?:[ \t]+=+)+\s*$")
#: Interpreted text with a role, ``:role:`text``` or ``:domain:role:`text```: group 1 the text.
ROLE = re.compile(r":[A-Za-z][\w.+-]*(?::[A-Za-z][\w.+-]*)*:`([^`]+)`")
#: A hyperlink reference, ```text <target>`_`` or ```text`_`` (``__`` if anonymous): groups 1 text, 2 target.
HYPERLINK = re.compile(r"`([^`<]+?)\s*(<[^<>`]+>)?`__?(?![\w`])")
FOOTNOTE_REF = re.compile(r"\[(?:#\w*|\d+|\*)\]_")
SUBSTITUTION_REF = re.compile(r"\|([\w -]+)\|")

_DIRECTIVE = re.compile(r"^(\s*)\.\.[ \t]+([\w:+.-]+)::(?:[ \t]+(.*))?$")
_FOOTNOTE = re.compile(r"^(\s*)\.\.[ \t]+(\[[^\]]+\])[ \t]+(.*)$")
_ANON_TARGET = re.compile(r"^\s*__ ")
_TEXT_TARGET = re.compile(r"^(.*?)\s*<[^<>]+>$", re.DOTALL)
_LITERAL = re.compile(r"``([^`]+)``")
_SIMPLE_REF = re.compile(r"(?<![\w`])([A-Za-z][\w-]*[A-Za-z0-9])_(?![\w`])")
_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode"})
#: Directives that only point elsewhere, lay out a table or set options: dropped with their content.
_DROPPED_DIRECTIVES = frozenset(
    "toctree raw include literalinclude kernel-doc kernel-include kernel-abi kernel-feat image highlight contents"
    " index meta csv-table list-table flat-table only ifconfig default-role default-domain sectionauthor"
    " moduleauthor currentmodule module program tabularcolumns cssclass class role".split()
)


def role_text(body: str) -> str:
    """What a role shows for its ``body`` (the text between the backticks): the title of
    ``title <target>``, the last dotted part of ``~a.b.c``, else the body without a leading ``!``."""
    target = _TEXT_TARGET.match(body)
    if target and target.group(1):
        return target.group(1)
    if body.startswith("~"):
        return body[1:].rsplit(".", 1)[-1]
    return body.lstrip("!")


def _inline_rst(line: str) -> str:
    line = ROLE.sub(lambda m: role_text(m.group(1).strip()), line)
    line = HYPERLINK.sub(r"\1", line)
    line = _LITERAL.sub(r"`\1`", line)
    return _SIMPLE_REF.sub(r"\1", line)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _block_end(lines: list[str], start: int, base: int) -> int:
    """Index after the block of lines indented more than ``base`` (blank lines included)."""
    i = start
    last = start
    while i < len(lines):
        line = lines[i]
        if line.strip():
            if _indent(line) <= base:
                break
            last = i + 1
        i += 1
    return last


def _dedented(lines: list[str]) -> list[str]:
    indents = [_indent(line) for line in lines if line.strip()]
    cut_at = min(indents, default=0)
    return [line[cut_at:] if line.strip() else "" for line in lines]


def rst_to_text(rst: str) -> str:
    """Readable Markdown-ish prose from reStructuredText, by regex and one pass over the lines.

    Section titles (underlined, or over- and underlined) become Markdown headings, levels in the
    order their adornment styles first appear (first style ``#``, second ``##``, ...); lone
    adornment lines (transitions) are dropped. Directives lose their ``.. name::`` line but keep
    its argument and their content (dedented, options dropped); code directives and ``::``
    literal blocks become fenced code; directives that only point elsewhere (toctree, include,
    image, raw, kernel-doc, ...) are dropped with their content; so are comments, ``.. _label:``
    targets and substitution definitions. Roles keep their text (:ref:`text <target>` -> text,
    :c:func:`kmalloc` -> kmalloc), ````literal```` becomes ```literal```, hyperlink references keep
    their text. Linear in the input (a 200 KB file takes milliseconds).
    """
    lines = rst.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[str] = []
    styles: list[tuple[str, bool]] = []

    def heading(title: str, style: tuple[str, bool]) -> None:
        if style not in styles:
            styles.append(style)
        level = min(styles.index(style) + 1, 6)
        if out and out[-1].strip():
            out.append("")
        out.append("#" * level + " " + _inline_rst(title.strip()))
        out.append("")

    def fenced(block: list[str], lang: str = "") -> None:
        out.append("```" + lang)
        block = _dedented(block)
        while block and not block[0].strip():
            block.pop(0)
        out.extend(block)
        while out and not out[-1].strip():
            out.pop()
        out.append("```")

    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        stripped = line.strip()
        nxt = lines[i + 1] if i + 1 < n else ""

        if ADORNMENT.match(line):
            after = lines[i + 2] if i + 2 < n else ""
            if nxt.strip() and not ADORNMENT.match(nxt) and ADORNMENT.match(after) and after.strip()[0] == stripped[0]:
                heading(nxt, (stripped[0], True))
                i += 3
            else:
                i += 1  # a transition, or an orphan adornment
            continue
        if stripped and _indent(line) == 0 and ADORNMENT.match(nxt):
            heading(line, (nxt.strip()[0], False))
            i += 2
            continue

        directive = _DIRECTIVE.match(line)
        if directive:
            base = len(directive.group(1))
            name = directive.group(2).lower()
            arg = (directive.group(3) or "").strip()
            end = _block_end(lines, i + 1, base)
            body = lines[i + 1 : end]
            while body and FIELD.match(body[0]):
                body.pop(0)
            if name in _CODE_DIRECTIVES:
                fenced(body, arg.split()[0] if arg else "")
            elif not (name.startswith("auto") or name in _DROPPED_DIRECTIVES):
                if arg:
                    out.append(_inline_rst(arg))
                out.extend(_inline_rst(b) for b in _dedented(body))
            i = end
            continue

        footnote = _FOOTNOTE.match(line)
        if footnote:
            out.append(footnote.group(2) + " " + _inline_rst(footnote.group(3)))
            i += 1
            continue
        if EXPLICIT.match(line) or _ANON_TARGET.match(line):
            # Comments, ``.. _label:`` targets, substitution definitions: not prose.
            i = _block_end(lines, i + 1, _indent(line))
            continue

        if stripped.endswith("::") and not stripped.startswith(".."):
            # "Paragraph::" introduces an indented literal block.
            text = stripped[:-2].rstrip()
            if text:
                out.append(" " * _indent(line) + _inline_rst(text) + ":")
            j = i + 1
            while j < n and not lines[j].strip():
                j += 1
            if j < n and _indent(lines[j]) > _indent(line):
                end = _block_end(lines, j, _indent(line))
                out.append("")
                fenced(lines[j:end])
                i = end
            else:
                i += 1
            continue

        out.append(_inline_rst(line))
        i += 1
    return "\n".join(out)
