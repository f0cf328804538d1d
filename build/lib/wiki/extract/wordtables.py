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

Building a trie reads the library's whole table into Python strings first, and a process keeps
most of that memory after the strings are freed (Python's and glibc's allocators rarely give it
back): ~40 MiB in every worker process and in ``kbwiki lint``. So each trie is built once, by a
short-lived child process (``python -m wiki.extract.wordtables FOLDER``), saved under
:func:`cache_folder` in a file named for the libraries' versions, and every process maps that
file (``mmap``): its pages are the kernel's page cache, shared by all processes and never copied.
Where the folder cannot be written, a process builds the trie in its own memory as before.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from functools import cache, partial
from importlib.metadata import version
from pathlib import Path

import marisa_trie
import structlog
from platformdirs import user_cache_path

from wiki.settings import get_settings

log = structlog.get_logger(__name__)

_lock = threading.Lock()
#: Bumped when what a trie file holds changes; old files are then simply never read again.
FORMAT = 1
#: (language, wordlist) of every frequency table the lexicon reads.
FREQUENCY_TABLES = (("en", "best"), ("ja", "small"), ("zh", "small"))


def cache_folder() -> Path:
    """Where trie files live: ``KBWIKI_CACHE_DIR`` when set, else the per-user cache folder
    (``$XDG_CACHE_HOME/kbwiki``, ``~/.cache/kbwiki`` by default, via platformdirs)."""
    folder = get_settings().cache_dir
    return Path(folder).expanduser() if folder else user_cache_path("kbwiki", appauthor=False)


@cache
def _trie_folder() -> Path | None:
    """The folder of this version's trie files, built by the child process when any is missing
    (once per process); None, with one warning, when it cannot be built there."""
    libs = "-".join(version(d) for d in ("wordfreq", "lemminflect", "marisa-trie"))
    folder = cache_folder() / f"wordtables-{FORMAT}-{libs}"
    if not all((folder / f"{name}.marisa").exists() for name in _TRIES):
        done = subprocess.run([sys.executable, "-m", __name__, str(folder)], capture_output=True, text=True)
        if done.returncode != 0:
            log.warning("wordtables.not_cached", folder=str(folder), error=done.stderr.strip().splitlines()[-1:])
            return None
    return folder


def _mapped(name: str, empty: marisa_trie.Trie, build: Callable[[], marisa_trie.Trie]):
    """The trie ``name`` mapped from its file, or built in memory (``build``) when no file can be had."""
    folder = _trie_folder()
    return empty.mmap(str(folder / f"{name}.marisa")) if folder else build()


def _save(folder: Path) -> None:
    """Build every trie and write it under ``folder`` (each file written whole, then renamed:
    processes building at once leave one complete file)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, build in _TRIES.items():
        path = folder / f"{name}.marisa"
        if not path.exists():
            part = path.with_suffix(f".{os.getpid()}.part")
            build().save(str(part))
            os.replace(part, path)


def _build_frequency(lang: str, wordlist: str) -> marisa_trie.RecordTrie:
    from wordfreq import available_languages, read_cBpack

    # the pack is transient; where a word sits in two buckets the dict keeps the last (rarest)
    pack = read_cBpack(available_languages(wordlist)[lang])
    return marisa_trie.RecordTrie("<H", ((word, (i,)) for i, bucket in enumerate(pack) for word in bucket))


@cache
def _frequency_trie(lang: str, wordlist: str) -> marisa_trie.RecordTrie:
    name = f"frequency-{lang}-{wordlist}"
    return _mapped(name, marisa_trie.RecordTrie("<H"), lambda: _build_frequency(lang, wordlist))


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

    def __init__(self, trie: marisa_trie.BytesTrie, parse: Callable[[str], dict], fixed: dict | None = None):
        self._trie = trie
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


def _read_lookup_file(path: str) -> marisa_trie.BytesTrie:
    """A lemminflect lookup file's lines keyed by their word."""
    with gzip.open(path, "rt") as f:
        # the file's line number keeps its order: marisa sorts a key's values by their bytes
        rows = ((line.split(",", 1)[0], b"%08d%s" % (n, line.strip().encode())) for n, line in enumerate(f))
        return marisa_trie.BytesTrie(rows)


def _build_lemminflect(name: str) -> marisa_trie.BytesTrie:
    from lemminflect import config

    return _read_lookup_file(config.lemma_lu_fn if name == "lemmas" else config.inflection_lu_fn)


def _lemminflect_trie(name: str) -> marisa_trie.BytesTrie:
    return _mapped(name, marisa_trie.BytesTrie(), lambda: _build_lemminflect(name))


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
    from lemminflect import Inflections, Lemmatizer
    from lemminflect.codecs.InflectionLUCodec import InflectionLUCodec

    with _lock:
        lemmatizer, inflections = Lemmatizer(), Inflections()
        if not hasattr(lemmatizer, "lemma_dict"):
            lemmatizer.lemma_dict = _PackedTable(_lemminflect_trie("lemmas"), _lemma_entry)
        if not hasattr(inflections, "infl_dict"):
            fixed = InflectionLUCodec.updateForAuxMod({})
            inflections.infl_dict = _PackedTable(_lemminflect_trie("inflections"), _inflection_entry, fixed)


#: Every trie file, by name, with the function that builds it.
_TRIES: dict[str, Callable[[], marisa_trie.Trie]] = {
    **{f"frequency-{lang}-{wl}": partial(_build_frequency, lang, wl) for lang, wl in FREQUENCY_TABLES},
    **{name: partial(_build_lemminflect, name) for name in ("lemmas", "inflections")},
}

if __name__ == "__main__":
    _save(Path(sys.argv[1]))
