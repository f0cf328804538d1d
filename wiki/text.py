"""Document text: binary detection, decoding, cleanup, cutting and format conversion.

Bad input gets a clear error and loses nothing: binary or unsupported files raise
:class:`BadDocument` with a short ``reason``; everything else becomes clean UTF-8 text that
PostgreSQL accepts (no NUL bytes, no lone surrogates, no stray control characters).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import PurePosixPath

import html2text

from wiki.errors import BadDocument
from wiki.markdown import MD_LINK_RE, WIKI_LINK_RE, fenced_code_lines, front_matter, wiki_link_text
from wiki.rst import rst_to_text

_SNIFF_BYTES = 8192
#: Share of control bytes above which data is binary (text rarely has any besides \t \n \r).
CONTROL_BYTE_RATIO = 0.30

_BINARY_MAGIC: tuple[bytes, ...] = (
    b"%PDF-",
    b"PK\x03\x04",  # ZIP and every format built on it (docx, xlsx, epub, jar)
    b"PK\x05\x06",
    b"\x89PNG\r\n\x1a\n",
    b"\x7fELF",
    b"\x1f\x8b",  # gzip
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",  # JPEG
    b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",  # OLE2: doc, xls, ppt, msi
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",  # zstd
    b"BZh91AY&SY",
    b"RIFF",
    b"\x00asm",
    b"SQLite format 3\x00",
)
_TEXT_CONTROLS = frozenset(b"\t\n\r\f\x1b")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")

_TEXT_EXTENSIONS = frozenset({".md", ".markdown", ".txt"})
_RST_EXTENSIONS = frozenset({".rst"})
_HTML_EXTENSIONS = frozenset({".html", ".htm"})

from wiki.models import MAX_SOURCE_TITLE_CHARS as _MAX_TITLE_CHARS  # noqa: E402

# --- bytes -------------------------------------------------------------------------------


def is_binary(data: bytes) -> bool:
    """True when ``data`` is not text.

    Binary means: a known binary signature at the start (PDF, ZIP, PNG, ELF, gzip, JPEG, ...),
    a NUL byte in the first 8 KiB, or more than 30 % control bytes there (tab, newlines, form
    feed and escape do not count). Data starting with a UTF-16 byte order mark is text even
    though it holds NUL bytes. Empty data is not binary.
    """
    head = data[:_SNIFF_BYTES]
    if not head:
        return False
    if head.startswith(_UTF16_BOMS):
        return False
    if head.startswith(_BINARY_MAGIC):
        return True
    if b"\x00" in head:
        return True
    controls = sum(1 for b in head if (b < 0x20 or b == 0x7F) and b not in _TEXT_CONTROLS)
    return controls / len(head) > CONTROL_BYTE_RATIO


def decode(data: bytes) -> str:
    """``data`` as text: UTF-8 without its BOM, invalid sequences as U+FFFD. Never raises.

    Data with a UTF-16 byte order mark is decoded as UTF-16 (editors on Windows write it).
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace")
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", errors="replace")
    return data.decode("utf-8", errors="replace")


# --- text --------------------------------------------------------------------------------

_SURROGATE_PAIR_RE = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# C0 except \t and \n (\r is handled before), DEL, C1, and stray byte order marks.
_CONTROL_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff]")
_TRAILING_SPACE_RE = re.compile(r"[^\S\n]+$", re.MULTILINE)
_BLANK_RUN_RE = re.compile(r"\n{4,}")


def _join_pair(m: re.Match[str]) -> str:
    hi, lo = ord(m.group()[0]), ord(m.group()[1])
    return chr(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))


def clean_text(text: str) -> str:
    """Text fit for storage and extraction.

    CRLF and lone CR become LF; surrogate pairs written as two code points are joined and lone
    surrogates removed (they cannot be encoded as UTF-8 for PostgreSQL); NUL and the other C0
    and C1 controls except ``\\n`` and ``\\t`` are removed; NFC; trailing whitespace of each
    line is stripped; runs of 3 or more blank lines become 2; blank lines at the start and
    whitespace at the end are dropped.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _SURROGATE_RE.search(text):
        text = _SURROGATE_PAIR_RE.sub(_join_pair, text)
        text = _SURROGATE_RE.sub("", text)
    text = _CONTROL_RE.sub("", text)
    text = unicodedata.normalize("NFC", text)
    text = _TRAILING_SPACE_RE.sub("", text)
    text = _BLANK_RUN_RE.sub("\n\n\n", text)
    return text.lstrip("\n").rstrip()


#: What one CJK character counts for when judging whether a document is near-empty: a Chinese or
#: Japanese word is 1-2 characters where an English one is ~6 with its space, so 14 CJK characters
#: (a short sentence) say about what 40 Latin characters do.
CJK_CHAR_WEIGHT = 3
_CJK_CHAR_RE = re.compile(
    "[\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3100-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f]"
)


def prose_size(text: str) -> int:
    """The size of ``text`` for the near-empty test, in Latin-character equivalents: characters of
    the stripped text, each CJK character counting ``CJK_CHAR_WEIGHT`` (3). The ranges are
    ``wiki.slugs.CJK_RANGES``."""
    text = text.strip()
    return len(text) + (CJK_CHAR_WEIGHT - 1) * len(_CJK_CHAR_RE.findall(text))


_SENTENCE_END_RE = re.compile(r"(?:[.!?…][\"')\]»”’]*(?=\s)|[。！？])")


def cut(text: str, max_chars: int) -> tuple[str, bool]:
    """``text`` shortened to at most ``max_chars`` characters; returns (text, was_cut).

    The cut falls at the last paragraph end (blank line) before ``max_chars``, else the last
    sentence end (., !, ?, … followed by space, or 。！？), else the last line end, else the last
    space, each only if it keeps at least half of ``max_chars`` (so one long final paragraph
    does not throw most of the text away); else at ``max_chars`` exactly. Trailing whitespace of
    the result is stripped. Raises ``ValueError`` when ``max_chars`` < 1.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
    if len(text) <= max_chars:
        return text, False
    window = text[:max_chars]
    floor = max_chars // 2
    at = window.rfind("\n\n")
    if at < floor:
        at = -1
        for m in _SENTENCE_END_RE.finditer(window, floor):
            at = m.end()
    if at < floor:
        at = window.rfind("\n")
    if at < floor:
        at = max(window.rfind(" "), window.rfind("\t"))
    if at < floor:
        at = max_chars
    return window[:at].rstrip(), True


# --- formats -----------------------------------------------------------------------------


def html_to_text(html: str) -> str:
    """Markdown text of an HTML page (html2text): headings as ``#`` headings, links as their
    text, images, scripts and styles dropped, no hard line wrapping."""
    converter = html2text.HTML2Text()
    converter.ignore_images = True
    converter.ignore_links = True
    converter.body_width = 0
    converter.unicode_snob = True
    return converter.handle(html)


def document_text(name: str, data: bytes) -> str:
    """The clean text of the document file ``name`` with raw bytes ``data``.

    Dispatch on the extension, case-insensitively: ``.md``, ``.markdown`` and ``.txt`` as they
    are, ``.rst`` through :func:`wiki.rst.rst_to_text`, ``.html`` and ``.htm`` through
    :func:`html_to_text`; the result passes through :func:`clean_text`. Raises
    ``BadDocument("binary")`` for binary data (checked first) and
    ``BadDocument("unsupported type")`` for any other extension.
    """
    if is_binary(data):
        raise BadDocument("binary", name)
    suffix = PurePosixPath(name.replace("\\", "/")).suffix.lower()
    text = decode(data)
    if suffix in _TEXT_EXTENSIONS:
        pass
    elif suffix in _RST_EXTENSIONS:
        text = rst_to_text(text)
    elif suffix in _HTML_EXTENSIONS:
        text = html_to_text(text)
    else:
        raise BadDocument("unsupported type", name)
    return clean_text(text)


_ATX_TITLE_RE = re.compile(r"^ {0,3}#{1,2}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_EMPHASIS_RE = re.compile(r"(\*{1,3}|_{1,3}|`)(\S(?:.*?\S)?)\1")
_EDGE_MARKUP = "*_` \t"


def _title_line(raw: str) -> str:
    title = MD_LINK_RE.sub(r"\g<text>", WIKI_LINK_RE.sub(wiki_link_text, raw))
    title = _EMPHASIS_RE.sub(r"\2", title)
    title = " ".join(title.split()).strip(_EDGE_MARKUP)
    if len(title) > _MAX_TITLE_CHARS:
        head = title[:_MAX_TITLE_CHARS]
        space = head.rfind(" ")
        title = head[:space] if space >= _MAX_TITLE_CHARS // 2 else head
    return title


def document_title(name: str, text: str) -> str:
    """The title of a document: its first ``#`` or ``##`` heading (or a setext heading), outside
    code blocks, else the file name's stem with ``_`` and ``-`` read as spaces, else
    "Untitled". One line, at most 200 characters, never empty."""
    prev = ""
    text = text.replace("\r\n", "\n")
    # YAML front matter: its closing "---" would read as a setext underline.
    lines = text[front_matter(text)[1] :].split("\n")
    for line, is_code in zip(lines, fenced_code_lines(lines)):
        if is_code:
            prev = ""
            continue
        atx = _ATX_TITLE_RE.match(line)
        if atx:
            title = _title_line(atx.group(1))
            if title:
                return title
        elif _SETEXT_RE.match(line) and prev.strip() and not _ATX_TITLE_RE.match(prev):
            title = _title_line(prev)
            if title:
                return title
        prev = line
    stem = PurePosixPath(name.replace("\\", "/")).stem
    title = _title_line(stem.replace("_", " ").replace("-", " "))
    return title or "Untitled"
