"""Slugs and name keys: how a title becomes a page address and a dedup key.

A slug is what ``[[slug|display]]`` links point at and what the export writes as a file name, so
it must be stable (same title, same slug, in every process), never empty, and safe as a path
segment. Latin text is folded to plain ASCII letters; CJK, Hangul, Kana and the letters of other
scripts are kept as written (lowercased where the script has case) so that non-Latin titles keep
readable, distinct slugs instead of collapsing to nothing.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from functools import lru_cache

from wiki.errors import BadInput

#: Code point ranges treated as CJK: Han (with extensions and compatibility ideographs),
#: Hiragana, Katakana, Hangul (syllables and jamo), Bopomofo and the iteration marks.
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),
    (0x3005, 0x3007),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3130, 0x318F),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)

#: The same ranges as the body of a regex character class (``[...]``).
CJK_CLASS: str = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in CJK_RANGES)

_CJK_RE = re.compile(f"[{CJK_CLASS}]")

# Latin letters that have no decomposition but a usual ASCII spelling.
_LATIN_SPECIAL = {
    "ß": "ss",
    "æ": "ae",
    "Æ": "AE",
    "œ": "oe",
    "Œ": "OE",
    "ø": "o",
    "Ø": "O",
    "đ": "d",
    "Đ": "D",
    "ł": "l",
    "Ł": "L",
    "þ": "th",
    "Þ": "TH",
    "ð": "d",
    "Ð": "D",
    "ı": "i",
    "ħ": "h",
    "Ħ": "H",
}

# Apostrophes inside words are dropped rather than turned into separators, so that
# "Don't Panic" and "Dont Panic" share a slug instead of giving "don-t-panic".
_APOSTROPHES = re.compile(r"(?<=\w)['’ʼ`](?=\w)")
_HYPHENS = re.compile(r"-{2,}")
_SPACES = re.compile(r" {2,}")
_SLUG_SEPARATORS = re.compile(r"[\s_\-]+")

#: The slug of a KB's index page, which the pipeline writes itself.
INDEX_SLUG = "index"

#: Slugs no entity, concept or summary page is ever given: a concept named "Index" would
#: otherwise take the index page's slug, and the two would overwrite each other.
RESERVED_SLUGS = frozenset({INDEX_SLUG})

_HASH_SUFFIX_LEN = 8
_MIN_MAX_LEN = 20


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one CJK character."""
    return _CJK_RE.search(text) is not None


@lru_cache(maxsize=4096)
def _is_latin(ch: str) -> bool:
    if ch.isascii():
        return ch.isalpha()
    return "LATIN" in unicodedata.name(ch, "")


@lru_cache(maxsize=8192)
def _char_kind(ch: str) -> str:
    """'w' for letters and numbers, 'm' for combining marks, '-' for everything else."""
    cat = unicodedata.category(ch)
    if cat[0] in "LN":
        return "w"
    if cat[0] == "M":
        return "m"
    return "-"


def fold_latin(text: str) -> str:
    """Strip accents from Latin letters only ("Café Müller" -> "Cafe Muller", "ß" -> "ss").

    Marks on letters of other scripts (Devanagari vowel signs, Kana voicing marks) are kept,
    because there they are part of the letter, not decoration.
    """
    out: list[str] = []
    prev_latin = False
    for ch in unicodedata.normalize("NFKD", text):
        if prev_latin and unicodedata.combining(ch):
            continue
        special = _LATIN_SPECIAL.get(ch)
        if special is not None:
            out.append(special)
            prev_latin = True
            continue
        prev_latin = _is_latin(ch)
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))


def _words(text: str, sep: str) -> str:
    """NFKC, casefold, fold Latin, then every run of non-letters/numbers becomes ``sep``."""
    text = unicodedata.normalize("NFKC", text)
    text = _APOSTROPHES.sub("", text)
    text = fold_latin(text.casefold())
    out: list[str] = []
    prev_word = False
    for ch in text:
        kind = _char_kind(ch)
        if kind == "w" or (kind == "m" and prev_word):
            out.append(ch)
            prev_word = True
        else:
            out.append(sep)
            prev_word = False
    return "".join(out)


def _sha1(text: str) -> str:
    # surrogatepass: a title with a lone surrogate must still hash instead of raising.
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def slugify(text: str, max_len: int = 80) -> str:
    """The slug of ``text``: lowercase words joined by single hyphens, at most ``max_len`` chars.

    Latin accents are folded (é -> e, ß -> ss), letters of other scripts are kept; every run of
    other characters becomes one hyphen, and hyphens at the ends are stripped. Never empty: text
    with no letters or digits (punctuation, emoji, whitespace) gives ``"page-"`` + the first 10
    hex digits of SHA-1 of the text. A slug longer than ``max_len`` is cut at a hyphen when one
    falls in the second half of the kept part, then ``"-"`` + 8 hex digits of SHA-1 of the full
    uncut slug are appended, so two long titles with the same beginning get different slugs while
    titles that differ only in case or punctuation still share one (as short titles do).

    The result never contains ``/``, ``.`` or whitespace. Raises ``ValueError`` when
    ``max_len`` < 20 (too short to hold a prefix and the hash).
    """
    if max_len < _MIN_MAX_LEN:
        raise BadInput(f"max_len must be >= {_MIN_MAX_LEN}, got {max_len}")
    slug = _HYPHENS.sub("-", _words(text, "-")).strip("-")
    if not slug:
        return "page-" + _sha1(text)[:10]
    if len(slug) <= max_len:
        return slug
    keep = max_len - _HASH_SUFFIX_LEN - 1
    head = slug[:keep]
    cut_at = head.rfind("-")
    if cut_at >= keep // 2:
        head = head[:cut_at]
    head = head.strip("-")
    return f"{head}-{_sha1(slug)[:_HASH_SUFFIX_LEN]}"


def summary_slug(title: str) -> str:
    """The slug of a document's summary page: ``"doc-" + slugify(title)``, at most 80 chars.

    Summary pages share the slug space with entity and concept pages; the prefix keeps the
    summary of a document titled "Redis" apart from the entity page "redis".
    """
    return "doc-" + slugify(title, max_len=76)


def summary_suffix(source_uri: str, knowledge_id: str) -> str:
    """The 8 hex digits that tell apart summaries of documents sharing a title: of the document's
    source URI (the same file gets the same slug in every ingest), else of its knowledge id."""
    return _sha1(source_uri)[:8] if source_uri else knowledge_id[:8]


def normalize_name(name: str) -> str:
    """The exact-dedup key of an entity or concept name.

    NFKC, casefold, Latin accents folded, apostrophes inside words dropped, every run of
    punctuation and whitespace collapsed to one space, stripped. "ACME Corp" and "Acme  Corp."
    give "acme corp"; "Acme Cloud" gives a different key. May be empty (for "!!!").
    """
    return _SPACES.sub(" ", _words(name, " ")).strip()


def normalize_slug(slug: str) -> str:
    """A slug with case, Latin accents, hyphens, underscores and whitespace taken out.

    Used to match dead links to live pages that differ only in word splitting or case:
    "shang-hai-tower", "Shanghai_Tower" and "shanghai tower" all give "shanghaitower".
    CJK and other scripts are kept as they are.
    """
    return _SLUG_SEPARATORS.sub("", fold_latin(unicodedata.normalize("NFKC", slug).casefold()))
