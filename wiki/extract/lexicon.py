"""What English words can be: which parts of speech a word form has, and how common it is.

Two data sets that ship inside their PyPI packages, loaded once per process (~0.2 s each) into
marisa tries (``wiki.extract.wordtables``: ~3 MiB where the libraries' dicts took 81 MiB) and
then answering in microseconds:

- ``lemminflect`` (its authors' package; lexicon from the NIH SPECIALIST lexicon): the parts of
  speech and lemmas of a word form, e.g. "checks" -> NOUN check, VERB check; "allocated" ->
  VERB allocate only. Words it does not know (``kmalloc``, ``mutex``) give an empty set: for a
  technical text that usually means a name or a term, so callers treat unknown words as nouns.
- ``wordfreq`` (Speer et al.): a word's Zipf frequency, log10 of occurrences per billion words
  (``the`` 7.7, ``line`` 5.5, ``string`` 4.4, ``photons`` 3.2, ``kmalloc`` 0).

docs/decisions.md says why these and not a tagger model.
"""

from __future__ import annotations

import math
from functools import lru_cache

from wiki.extract import wordtables
from wiki.extras import require

#: Words each lookup below remembers per process: words are Zipf-distributed, so 16,384 keep ~95 %
#: of the hits of an unbounded cache, and a worker's memory stays flat over a 40,000-document KB
#: (65,536 grew it ~1 MiB per 1,000 documents: issue 24).
WORD_CACHE = 16384

#: Zipf frequency at or above which a lone word is too common to name one thing in a wiki
#: ("line" 5.5, "method" 4.8, "string" 4.4, "set" 5.6 are; "socket" 3.5, "photons" 3.2, "cache"
#: 3.6 are not). 4.3 is about 20 occurrences per million words; chosen on the issue's examples
#: and the demo's lone-word concepts.
COMMON_ZIPF = 4.3


@lru_cache(maxsize=WORD_CACHE)
def zipf(word: str) -> float:
    """wordfreq's Zipf frequency of ``word`` (any case) in English; 0.0 for unknown words. A word
    of letters is looked up in wordfreq's frequency table directly: ``zipf_frequency`` tokenizes
    its argument first, which cost an eighth of the offline extractor's time once every lower-case
    word of a document was asked about (equal on 4,982 sampled words, checked when changed).
    Other text ("x86", "block layer") is tokenized and combined as ``zipf_frequency`` does it."""
    low = word.lower()
    frequency = wordtables.frequency(low, "en") if low.isalpha() else _english_text_frequency(low)
    return round(math.log10(frequency * 1e9), 2) if frequency else 0.0


def _english_text_frequency(text: str) -> float:
    """wordfreq's ``word_frequency(text, "en")`` read from the trie (its own reads the dict this
    module avoids): the tokens' frequencies combine as 1/f = sum of 1/f_i, a digit run counts as
    zeros times wordfreq's estimate for its digits, an unlisted token makes 0.0, and the result
    keeps three significant digits."""
    from wordfreq import lossy_tokenize
    from wordfreq.numbers import digit_freq, smash_numbers

    tokens = lossy_tokenize(text, "en")
    inverse = 0.0
    for token in tokens:
        smashed = smash_numbers(token)
        frequency = wordtables.frequency(smashed, "en")
        if not frequency:
            return 0.0
        inverse += 1.0 / (frequency * (digit_freq(token) if smashed != token else 1.0))
    if not inverse:
        return 0.0
    frequency = 1.0 / inverse
    return round(frequency, math.floor(-math.log10(frequency)) + 3)


@lru_cache(maxsize=WORD_CACHE)
def lemmas(word: str) -> dict[str, tuple[str, ...]]:
    """lemminflect's {universal POS tag: lemmas} of ``word`` lowercased; {} for unknown words."""
    from lemminflect import getAllLemmas

    wordtables.use_compact_lemminflect()
    return dict(getAllLemmas(word.lower()))


def inflected_verb(word: str) -> bool:
    """Whether ``word`` is only a verb's -s, -ed or -en form ("represents", "allocated",
    "handled"), never a noun or adjective: a phrase ending in one is a clause, not a name."""
    pos = lemmas(word)
    if "VERB" not in pos or "NOUN" in pos or "ADJ" in pos or "PROPN" in pos:
        return False
    return word.lower() not in pos["VERB"] and not word.lower().endswith("ing")


def plural_noun(word: str) -> bool:
    """Whether ``word`` is a noun's plural ("photons", "instances"): English compounds take the
    singular in front ("photon travel"), so a plural before another word ends a noun phrase."""
    pos = lemmas(word)
    nouns = pos.get("NOUN", ())
    low = word.lower()
    return bool(nouns) and low not in nouns and low.endswith("s")


def not_a_noun(word: str) -> bool:
    """Whether the lexicon knows ``word`` and never as a noun (adjectives, adverbs, verb forms
    other than the -ing form that names an action: "locking")."""
    pos = lemmas(word)
    if not pos or "NOUN" in pos or "PROPN" in pos:
        return False
    return not word.lower().endswith("ing")


def dictionary_word(word: str) -> bool:
    """Whether ``word`` is an ordinary English word the lexicon knows (any part of speech)."""
    return bool(lemmas(word))


def too_common(word: str) -> bool:
    """Whether a lone word is too common to name one thing (``COMMON_ZIPF``), singular or plural."""
    low = word.lower()
    singular = low[:-1] if low.endswith("s") and len(low) > 3 else low
    return max(zipf(low), zipf(singular)) >= COMMON_ZIPF


def third_person(word: str) -> str | None:
    """The third-person singular of a verb that opens a docstring, lower-cased: "Return" ->
    "returns", "Returns" -> "returns"; None when ``word`` is not a verb's base or -s form the
    lexicon knows ("Stuff" is a verb too: callers check what follows)."""
    from lemminflect import getInflection

    wordtables.use_compact_lemminflect()
    low = word.lower()
    verbs = lemmas(low).get("VERB", ())
    if not lemmas(low):
        # "Undefine", "Reindent", "Preload": a prefix the lexicon lacks on a verb it knows
        for prefix in ("un", "re", "de", "pre", "dis"):
            stem = low[len(prefix) :]
            if low.startswith(prefix) and len(stem) > 3 and stem in lemmas(stem).get("VERB", ()):
                forms = getInflection(stem, tag="VBZ")
                return prefix + forms[0] if forms else None
    if low in verbs:
        forms = getInflection(low, tag="VBZ")
        return forms[0] if forms else None
    if verbs and low.endswith("s") and low in getInflection(verbs[0], tag="VBZ"):
        return low
    return None


#: Zipf frequency at or above which a lone Chinese or Japanese word is everyday vocabulary, not a
#: term a page can be about. Lower than ``COMMON_ZIPF``: on linux-doc's zh_CN and ja_JP
#: translations the lone words the judges failed as generic lay at 3.27 to 5.3 (贴标签 "put a
#: label on" 3.27, カーネル "kernel" 3.28, 返回值 "return value" 3.4, 稳定期 "stable period" 3.96,
#: ユーザ "user" 4.02, 先生 5.3), the terms they passed below 2.1 (哈希值 "hash value" 2.05, 制表符
#: "tab character" 1.74, スケジューラ 1.67).
CJK_COMMON_ZIPF = 3.0


@lru_cache(maxsize=WORD_CACHE)
def cjk_zipf(word: str, japanese: bool) -> float:
    """wordfreq's Zipf frequency of a Chinese (simplified or traditional) or Japanese ``word``, as
    ``zipf_frequency(word, lang, wordlist="small")`` gives it; 0.0 for words it does not list. The
    "small" lists (words seen at least once per million) hold 30,215 Japanese entries and a few
    MiB against 214,960 and ~30 MiB for "best" (~40 MiB for Chinese); whether a word reaches
    ``CJK_COMMON_ZIPF`` is all this is asked (issue 24: on 4,342 names of linux-doc's zh_CN
    translation the two lists decide alike but for one word at exactly 3.0). A Japanese word is
    looked up whole: ``zipf_frequency`` would segment it with MeCab's Python binding, which kbwiki
    does not install (fugashi tags Japanese instead), and the words asked about are one token."""
    if japanese:
        frequency = wordtables.frequency(word, "ja", "small")
    else:
        frequency = _zh_frequency(word)
    return round(math.log10(frequency * 1e9), 2) if frequency else 0.0


#: wordfreq's factor against a word break it inferred in Chinese (``INFERRED_SPACE_FACTOR``).
_INFERRED_BREAK = 10.0


def _zh_frequency(word: str) -> float:
    """wordfreq's frequency of a Chinese ``word`` in its "small" list, computed as
    ``word_frequency`` does but without the Python ``jieba`` tokenizer that loads for it (19 MiB a
    process, issue 24): the simplified word is cut into listed words along the route with the
    highest product of frequencies (jieba's rule, over the same list), and the parts combine as
    wordfreq combines them, 1/f = sum of 1/f_i, divided by ``_INFERRED_BREAK`` per break. Same
    decision at ``CJK_COMMON_ZIPF`` as ``zipf_frequency`` on all 6,862 names of linux-doc's zh_CN
    translation. 0.0 when no cut into listed words exists (wordfreq's estimate for digits is left
    out: names with digits read as rare)."""
    require("cjk", "jieba")  # wordfreq's Chinese module imports it
    from wordfreq.chinese import simplify_chinese

    text = simplify_chinese(word)
    n = len(text)
    # best[i]: (log-probability, words) of the best cut of text[i:]; names are <= 16 characters
    best: list[tuple[float, list[str]] | None] = [None] * n + [(0.0, [])]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n + 1):
            rest = best[j]
            frequency = wordtables.frequency(text[i:j], "zh", "small") if rest is not None else 0.0
            if frequency:
                score = math.log(frequency) + rest[0]
                if best[i] is None or score > best[i][0]:
                    best[i] = (score, [text[i:j], *rest[1]])
    if not n or best[0] is None:
        return 0.0
    parts = best[0][1]
    return 1.0 / sum(1.0 / wordtables.frequency(p, "zh", "small") for p in parts) / _INFERRED_BREAK ** (len(parts) - 1)
