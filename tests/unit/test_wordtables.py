"""The trie-backed word tables (``wiki.extract.wordtables``, issue 24) answer exactly as the dicts
wordfreq and lemminflect build, entry for entry, and a process asking the lexicon holds none of
those dicts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from lemminflect import config
from lemminflect.codecs.InflectionLUCodec import InflectionLUCodec
from lemminflect.codecs.LemmaLUCodec import LemmaLUCodec
from wordfreq import get_frequency_dict, zipf_frequency

from wiki.extract import lexicon, wordtables


@pytest.mark.parametrize(("lang", "wordlist"), [("en", "best"), ("ja", "small"), ("zh", "small")])
def test_every_listed_word_has_wordfreqs_frequency(lang, wordlist):
    expected = get_frequency_dict(lang, wordlist)
    differ = [w for w, f in expected.items() if wordtables.frequency(w, lang, wordlist) != pytest.approx(f, rel=1e-12)]
    assert not differ, differ[:10]
    assert wordtables.frequency("kmallocz", lang, wordlist) == 0.0


# words, digit runs, several tokens, an unlisted token, punctuation only, nothing
TEXTS = [
    "socket",
    "Photons",
    "x86",
    "i2c",
    "ipv6",
    "can't",
    "block layer",
    "pg_hba.conf",
    "e-mail",
    "2024",
    "kmalloc",
    "--",
    "",
]


@pytest.mark.parametrize("text", TEXTS)
def test_zipf_is_wordfreqs_zipf_frequency(text):
    assert lexicon.zipf(text) == zipf_frequency(text.lower(), "en")


def test_lemminflect_answers_as_from_its_own_dicts():
    wordtables.use_compact_lemminflect()
    lemmas = LemmaLUCodec.load(config.lemma_lu_fn)
    inflections = InflectionLUCodec.load(config.inflection_lu_fn)
    from lemminflect import Inflections, Lemmatizer

    packed_lemmas, packed_inflections = Lemmatizer().lemma_dict, Inflections().infl_dict
    assert not isinstance(packed_lemmas, dict) and not isinstance(packed_inflections, dict)
    assert [w for w, v in lemmas.items() if packed_lemmas.get(w) != v] == []
    assert [w for w, v in inflections.items() if packed_inflections.get(w) != v] == []
    assert packed_lemmas.get("kmalloc", {}) == {}


def test_the_lexicon_loads_no_library_dict():
    code = (
        "import sys, wordfreq; from wiki.extract import lexicon;"
        " lexicon.zipf('socket'); lexicon.zipf('x86'); lexicon.plural_noun('photons'); lexicon.third_person('Return');"
        " lexicon.cjk_zipf('内核', False); lexicon.cjk_zipf('カーネル', True);"
        " print(wordfreq.get_frequency_dict.cache_info().currsize, wordfreq.get_frequency_list.cache_info().currsize)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0"]


def test_the_stopword_list_is_yakes_own():
    import yake

    from wiki.stopwords import english_stopwords

    assert english_stopwords() == frozenset(w for w in yake.KeywordExtractor(lan="en").stopword_set if w)
    assert len(english_stopwords()) > 500


def _frequency_in_child(cache: str) -> subprocess.CompletedProcess:
    """A fresh process with the cache folder ``cache``: asks the lexicon one frequency, prints
    whether the English trie it holds is mapped from a file (``True``) and the frequency."""
    code = (
        "from wiki.extract import wordtables, lexicon; print(lexicon.zipf('socket'));"
        " import os; print(any(l.rstrip().endswith('frequency-en-best.marisa') for l in open('/proc/self/maps')))"
    )
    env = {**os.environ, "KBWIKI_CACHE_DIR": cache}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)


def test_each_trie_is_built_once_into_the_cache_folder_and_mapped_after(tmp_path):
    first = _frequency_in_child(str(tmp_path))
    files = sorted(p.name for p in tmp_path.rglob("*.marisa"))
    assert files == sorted(
        [f"frequency-{lang}-{wl}.marisa" for lang, wl in wordtables.FREQUENCY_TABLES]
        + ["inflections.marisa", "lemmas.marisa"]
    )
    stamps = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.marisa")}
    second = _frequency_in_child(str(tmp_path))
    assert first.stdout.split() == second.stdout.split() == [str(zipf_frequency("socket", "en")), "True"]
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.marisa")} == stamps  # not built again


def test_a_cache_folder_that_cannot_be_written_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = _frequency_in_child(str(blocker / "cache"))
    assert out.stdout.splitlines()[-2:] == [str(zipf_frequency("socket", "en")), "False"]
    assert out.stdout.count("wordtables.not_cached") == 1  # one warning, not one per table
