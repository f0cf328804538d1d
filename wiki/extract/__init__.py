"""The extractor seam: one document's text in, a validated ``Extraction`` out.

Two implementations sit behind ``Extractor``: the deterministic offline one
(``wiki.extract.offline.OfflineExtractor``, the default) and the LLM one (``wiki.extract.llm``). Both pass every
entity and concept name through ``validate_item_name`` so that no page is ever named after a
URL, a file path, a ``<think>`` tag, link syntax or a stopword.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from wiki.errors import ExtractionError, ExtractionUnavailable
from wiki.extras import require
from wiki.llm_config import config_from_settings
from wiki.models import Extraction
from wiki.stopwords import is_stopword

if TYPE_CHECKING:
    from wiki.settings import Settings

__all__ = [
    "ExtractionError",
    "ExtractionUnavailable",
    "Extractor",
    "MAX_NAME_CHARS",
    "MAX_NAME_WORDS",
    "get_extractor",
    "is_stopword",
    "validate_item_name",
]

MAX_NAME_CHARS = 80
MAX_NAME_WORDS = 6


@runtime_checkable
class Extractor(Protocol):
    """Turns one document into an ``Extraction``.

    ``name`` identifies the implementation *and its version* (e.g. ``"offline-v1"``); it is part
    of the ``wiki_extractions`` cache key, so bump it whenever the output for the same input changes.
    """

    name: str

    def extract(self, title: str, text: str) -> Extraction:
        """Extract summary, body and items from ``text``.

        Raises ``ExtractionError`` when the document cannot give a valid extraction (for good: it
        is skipped) and ``ExtractionUnavailable`` when the extractor could not run (for now: the
        document is tried again within its fail budget).
        """
        ...


def get_extractor(settings: Settings) -> Extractor:
    """The extractor chosen by ``settings.extractor``.

    ``"llm"`` gives ``wiki.extract.llm.LLMExtractor`` on the ``KBWIKI_LLM_*`` settings. Raises
    ``ValueError`` for an unknown value (settings validation normally prevents that).
    """
    if settings.extractor == "offline":
        from wiki.extract.offline import OfflineExtractor

        return OfflineExtractor()
    if settings.extractor == "llm":
        require("llm", "openai", "json_repair", "tiktoken", "nh3")
        from wiki.extract.llm import LLMExtractor

        return LLMExtractor(config_from_settings(settings))
    raise ValueError(f"unknown extractor {settings.extractor!r}")


_URL = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://|\bwww\.|\bmailto:|^[\w.+-]+@[\w-]+\.[\w.]+$)")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
_TAG = re.compile(r"[<>]")
_LINK_SYNTAX = re.compile(r"\[|\]|\||`|\{\{|\}\}|\]\(")
# "C#" and "F#" are real names; a "#" anywhere else is a heading or an anchor.
_HASH_OK = re.compile(r"^[A-Za-z]{1,3}#$")
# Pairs of wrapping marks an LLM or a Markdown source commonly leaves around a name.
_WRAPPERS = (
    ("**", "**"),
    ("__", "__"),
    ("*", "*"),
    ("`", "`"),
    ('"', '"'),
    ("'", "'"),
    ("\u201c", "\u201d"),
    ("\u2018", "\u2019"),
)
_TRAILING = " \t.,;:!?"


def _clean(name: str) -> str:
    name = " ".join(name.split())
    changed = True
    while changed and name:
        changed = False
        stripped = name.strip(_TRAILING)
        if stripped != name:
            name, changed = stripped, True
        for left, right in _WRAPPERS:
            if len(name) > len(left) + len(right) and name.startswith(left) and name.endswith(right):
                name, changed = name[len(left) : -len(right)].strip(), True
    return name


def _looks_like_path(name: str) -> bool:
    if "\\" in name or _DRIVE.match(name):
        return True
    if name.startswith(("/", "./", "../", "~/", "~")) or "../" in name or "/." in name:
        return True
    # "TCP/IP" and "I/O" are names; "usr/share/doc" or "src/main.py" are paths.
    if name.count("/") >= 2:
        return True
    return "/" in name and re.search(r"\.[A-Za-z0-9]{1,5}$", name) is not None


def validate_item_name(name: str) -> str | None:
    """The cleaned entity/concept name, or ``None`` when it must not become a page.

    Cleaning collapses whitespace and strips trailing punctuation and wrapping quotes, ``**``
    and backticks. Rejected: empty names, names over ``MAX_NAME_CHARS`` (80) characters or
    ``MAX_NAME_WORDS`` (6) words, URLs and e-mail addresses, file paths (``../x``, ``/usr/bin``,
    ``C:\\``, ``a/b/c``), anything with ``<`` or ``>`` (``<think>`` and other tags), Markdown or
    wiki-link syntax (``[``, ``]``, ``|``, backtick, ``{{``, ``#`` except in names like ``C#``),
    control or emoji/symbol characters, names with no letter (digits/punctuation only) and names
    made only of English stopwords (yake's list).
    """
    if not isinstance(name, str):
        return None
    name = _clean(name)
    if not name or len(name) > MAX_NAME_CHARS or len(name.split()) > MAX_NAME_WORDS:
        return None
    if _URL.search(name) or _looks_like_path(name) or _TAG.search(name) or _LINK_SYNTAX.search(name):
        return None
    if "#" in name and not _HASH_OK.match(name):
        return None
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cs", "So", "Sk") for ch in name):
        return None
    if not any(ch.isalpha() for ch in name):
        return None
    words = [w.strip(".,;:!?()'\"-") for w in name.split()]
    if all(not w or is_stopword(w) for w in words):
        return None
    return name
