"""wordfreq's and lemminflect's word tables, held in marisa tries instead of Python dicts.

Both libraries load their data into dicts of Python strings: English frequencies (321,180 words)
33 MiB, lemminflect's lemmas 31 MiB and inflections 17 MiB in every worker process (issue 24). The
same tables as ``marisa_trie`` tries (a static, succinct trie in C++) take ~3.4 MiB and answer a
lookup in ~0.5 µs. The data stay the libraries' own, read from their packages' files:

- ``frequency(word, lang, wordlist)``: wordfreq's frequency of one listed token, exactly as
  ``get_frequency_dict(lang, wordlist)[word]`` (the list's bucket ``i`` holds the words of
  frequency ``10 ** (-i / 100)``).
- ``use_compact_lemminflect()``: gives lemminflect's own lemmatizer and inflector (singletons) a
  trie-backed table in place of the dict each would load, so ``getAllLemmas`` and
  ``getInflection`` keep their own rules and overrides and return the same answers.

``tests/unit/test_wordtables.py`` compares every entry with the libraries' dicts.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Callable
from functools import cache

import marisa_trie

_lock = threading.Lock()


@cache
def _frequency_trie(lang: str, wordlist: str) -> marisa_trie.RecordTrie:
    from wordfreq import available_languages, read_cBpack

    # the pack is transient; where a word sits in two buckets the dict keeps the last (rarest)
    pack = read_cBpack(available_languages(wordlist)[lang])
    return marisa_trie.RecordTrie("<H", ((word, (i,)) for i, bucket in enumerate(pack) for word in bucket))


def frequency(word: str, lang: str, wordlist: str = "best") -> float:
    """wordfreq's frequency (occurrences per word of text, 0..1) of ``word`` as listed, a token
    already lower-cased and normalised as wordfreq lists it; 0.0 when unlisted. ``lang`` is a
    wordfreq language code ("en", "zh", "ja"); ``wordlist`` "best", "large" or "small". Raises
    KeyError for a list wordfreq does not ship."""
    with _lock:  # functools.cache may build a trie twice under threads; one is enough
        trie = _frequency_trie(lang, wordlist)
    buckets = trie.get(word)
    return 10 ** (-max(b for (b,) in buckets) / 100) if buckets else 0.0


class _PackedTable:
    """A read-only ``get(word, default)`` over a lemminflect lookup file (gzipped lines
    ``word,category,forms``): lines stay bytes in a trie and are parsed on lookup, entry by entry
    as lemminflect's codec parses them (``parse(line) -> {tag: forms}``) and merged in file order.
    ``fixed`` entries replace the file's (lemminflect hard-codes auxiliaries and modals)."""

    def __init__(self, path: str, parse: Callable[[str], dict], fixed: dict | None = None):
        with gzip.open(path, "rt") as f:
            # the file's line number keeps its order: marisa sorts a key's values by their bytes
            rows = ((line.split(",", 1)[0], b"%08d%s" % (n, line.strip().encode())) for n, line in enumerate(f))
            self._trie = marisa_trie.BytesTrie(rows)
        self._parse = parse
        self._fixed = fixed or {}

    def get(self, word: str, default=None):
        if word in self._fixed:
            return self._fixed[word]
        lines = self._trie.get(word)
        if not lines:
            return default
        entry: dict = {}
        for raw in sorted(lines):
            entry.update(self._parse(raw[8:].decode()))
        return entry


def _lemma_entry(line: str) -> dict:
    from lemminflect.codecs.LemmaLUCodec import LemmaLUCodec
    from lemminflect.core.LexicalUtils import categoryToUPos

    _, category, forms = LemmaLUCodec.fromString(line)
    return {categoryToUPos(category): forms}


def _inflection_entry(line: str) -> dict:
    from lemminflect.codecs.InflectionLUCodec import InflectionLUCodec

    return InflectionLUCodec.fromString(line)[2]


@cache
def use_compact_lemminflect() -> None:
    """Give lemminflect's ``Lemmatizer`` and ``Inflections`` singletons trie-backed tables before
    they load their dicts (they load lazily, into ``lemma_dict`` and ``infl_dict``, and only ever
    call ``.get`` on them: lemminflect 0.2.3). Idempotent; call before any lemminflect lookup."""
    from lemminflect import Inflections, Lemmatizer, config
    from lemminflect.codecs.InflectionLUCodec import InflectionLUCodec

    with _lock:
        lemmatizer, inflections = Lemmatizer(), Inflections()
        if not hasattr(lemmatizer, "lemma_dict"):
            lemmatizer.lemma_dict = _PackedTable(config.lemma_lu_fn, _lemma_entry)
        if not hasattr(inflections, "infl_dict"):
            fixed = InflectionLUCodec.updateForAuxMod({})
            inflections.infl_dict = _PackedTable(config.inflection_lu_fn, _inflection_entry, fixed)
