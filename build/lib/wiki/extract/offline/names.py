"""Finding names: code identifiers, capitalised names and acronyms in sentences (``_Entities``),
the concept a yake keyphrase names (``_concept_name``), and the whole-word search (``_find``)
the other modules use."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from wiki.extract import is_stopword, lexicon, validate_item_name
from wiki.extract.offline.limits import WORDLIKE_ZIPF
from wiki.extract.offline.prose import _Sentence
from wiki.extract.offline.words import AFTER_VERB, DEICTIC, DOCSTRING_OPENERS, FILE_EXT, NOT_NAMES
from wiki.slugs import CJK_CLASS, has_cjk

# --- names --------------------------------------------------------------------------------------

_IDENT = re.compile(r"^_*[A-Za-z][\w]*(?:(?:\.|::|->)[A-Za-z_]\w*)*(?:\(\))?$")
_CALL = re.compile(r"(?<![\w.*])(_*[A-Za-z]\w{2,})\(\)")
_DOTTED = re.compile(r"(?<![\w./@-])(_*[A-Za-z]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(/@-])")
_CONSTANT = re.compile(r"(?<![\w.])(_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
#: A lower-case identifier with underscores in running prose ("io_uring", "panic_on_oops"): code,
#: as ``_code_name`` reads it.
_SNAKE = re.compile(r"(?<![\w./@-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![\w(/@-])")
#: A lower-case word that may be jargon ("sysfs", "cgroups", "kexec"): ``_jargon`` decides.
_LOWER_WORD = re.compile(r"(?<![\w./@'\u2019-])([a-z][a-z0-9]{2,}[a-z0-9])(?![\w/@'\u2019-])")
#: wordfreq Zipf frequency under which a lower-case word no dictionary knows is jargon of the
#: corpus rather than a word of English or a typo-like abbreviation ("sysfs" 1.2, "cgroups" 1.3,
#: "kexec" 0.0; "buf" 2.3, "struct" 2.4, "foo" 2.8 are above it).
JARGON_ZIPF = 2.0
_MIXED = re.compile(r"(?<![\w.])([A-Za-z][a-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*)(?![\w])")
_ACRONYM = re.compile(r"(?<![\w.-])([A-Z][A-Z0-9&]*[A-Z0-9](?:v\d+)?(?:-[0-9]+)?)(?![\w-])")


def _char_class(predicate, lo: int, hi: int) -> str:
    """The body of a regex character class of the code points in [lo, hi) matching ``predicate``."""
    parts: list[str] = []
    start = prev = None
    for cp in [c for c in range(lo, hi) if predicate(chr(c))] + [None]:
        if cp is not None and prev is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None:
            parts.append(re.escape(chr(start)) + ("-" + re.escape(chr(prev)) if prev > start else ""))
        start = prev = cp
    return "".join(parts)


# Capitals and letters of the Latin, Greek and Cyrillic blocks, so "Åland Islands", "Øresund
# Bridge" and "Łódź" are found like "Aland Islands" (re has no \p{Lu}).
_UC = _char_class(str.isupper, 0x41, 0x530)
_LC = _char_class(str.isalpha, 0x41, 0x530)
_CAPSEQ = re.compile(
    rf"(?<![\w.])[{_UC}][\w&'\u2019-]*\w(?:\s+(?:(?:of|for|de|on|of the)\s+)?[{_UC}][\w&'\u2019-]*\w)*"
)
_WORD = re.compile(rf"[{_LC}][{_LC}'-]*[{_LC}]|[{_LC}]")
_POSSESSIVE = re.compile(r"['\u2019]s?$")
_CJK_TAIL = re.compile(f"[{CJK_CLASS}].*$", re.S)
_ROMAN = re.compile(r"^[IVXLCDM]+$")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_ACRONYM_PLURAL = re.compile(r"^[A-Z]{2,}s$")
_SPELLED = r"[A-Z][\w-]*(?:\s+(?:of|for|and|the|on|[A-Z][\w-]*)){1,5}"
_EXPANSION_FIRST = re.compile(rf"({_SPELLED})\s+\(([A-Z][A-Z0-9]{{1,9}})\)")
_ACRONYM_FIRST = re.compile(rf"\b([A-Z][A-Z0-9]{{1,9}})\s+\(({_SPELLED})\)")


@dataclass
class _Candidate:
    forms: Counter[str] = field(default_factory=Counter)
    count: int = 0
    first: int = 1 << 30
    bonus: float = 0.0

    def add(self, form: str, order: int, bonus: float = 0.0) -> None:
        self.forms[form] += 1
        self.count += 1
        self.first = min(self.first, order)
        self.bonus = max(self.bonus, bonus)

    @property
    def name(self) -> str:
        # Most frequent surface form; ties go to the alphabetically first for determinism.
        return min(self.forms.items(), key=lambda kv: (-kv[1], kv[0]))[0]


# --- entities -----------------------------------------------------------------------------------


def _named_file(stem: str) -> bool:
    """Whether a file named ``stem`` plus an extension is a subject of its own ("pg_hba.conf",
    "postgresql.conf": a stem no dictionary knows or with an underscore), not an example file
    ("index.html", "file.txt")."""
    return "_" in stem or (stem.isalpha() and len(stem) >= 4 and not lexicon.dictionary_word(stem))


def _code_name(span: str, plain_ok: bool = False) -> str | None:
    """The identifier named by a code span (``os.path``, ``kmalloc()``, ``GFP_KERNEL``), or None.

    A plain lowercase word (``kmalloc``) counts only with ``plain_ok``: the caller saw it in code
    spans more often than in running prose, so it is not an ordinary English word.
    """
    span = span.strip()
    if not _IDENT.match(span) or has_cjk(span):
        return None  # a CJK heading ("CVE分配") is a title, never an identifier
    call = span.endswith("()")
    span = span.removesuffix("()")
    dotted = "." in span or "::" in span or "->" in span
    if dotted:
        last = span.replace("::", ".").replace("->", ".").rsplit(".", 1)[-1]
        first = span.split(".", 1)[0]
        segments = re.split(r"\.|::|->", span)
        if first.lower() == "www" or min(map(len, segments)) < 2:
            return None
        if last.lower() in FILE_EXT and not _named_file(first):
            return None  # "index.html", "file.txt": a file of one example, no subject of the KB
    if len(span) < 3 or span.lower() in NOT_NAMES:
        return None
    mixed = any(c.isupper() for c in span[1:]) and any(c.islower() for c in span)
    if span.isalpha() and span.islower() and (lexicon.dictionary_word(span) or lexicon.zipf(span) >= WORDLIKE_ZIPF):
        return None  # "open()", "timeout()", "## filename": a method of every other module
    if call or dotted or "_" in span.strip("_") or mixed or span.isupper():
        return span
    if plain_ok and not is_stopword(span) and span.isalnum():
        return span  # "kmalloc", "copytree"; "load" and "set" name a method of every other module
    return None


class _Entities:
    """Collects entity candidates keyed by case-folded name."""

    def __init__(self, lower_words: Counter[str], cap_words: Counter[str], jargon: bool = True) -> None:
        self.found: dict[str, _Candidate] = {}
        self.expansions: set[str] = set()  # case-folded spelled-out forms of acronyms
        self.lower_words = lower_words
        self.cap_words = cap_words
        #: case-folded names found only as lower-case jargon words (``_jargon``)
        self.jargon: set[str] = set()
        self.jargon_ok = jargon  # an English document: its unknown lower-case words may be jargon

    def add(self, name: str, order: int, bonus: float = 0.0) -> None:
        # The Latin patterns' \w takes CJK characters too: "SPARSEMEM是Linux中最通用的内存模型" is a
        # clause of mixed text, of which only "SPARSEMEM" is a Latin name (CJK names: cjk.names).
        name = _CJK_TAIL.sub("", name)
        # "Ada Lovelace's" and "the Jones' house" name "Ada Lovelace" and "Jones".
        clean = validate_item_name(_POSSESSIVE.sub("", name) if " " in name or name[:1].isupper() else name)
        if clean is None or clean.lower() in NOT_NAMES:
            return
        alias = None
        if _ACRONYM_PLURAL.match(clean):
            clean, alias = clean[:-1], clean
            if validate_item_name(clean) != clean:
                return
        cand = self.found.setdefault(clean.casefold(), _Candidate())
        cand.add(clean, order, bonus)
        if alias:
            cand.forms.setdefault(alias, 0)

    def _common(self, word: str) -> bool:
        """Whether a capitalised ``word`` is an ordinary word the text also writes in lower case
        ("Photons"/"photons"); a word no dictionary knows is a name however else it is written
        ("Btrfs" beside the "btrfs" of a path or a command)."""
        low = word.lower()
        if is_stopword(word) or low in NOT_NAMES:
            return True
        return lexicon.dictionary_word(low) and self.lower_words[low] >= max(1, self.cap_words[word])

    def scan(self, sentence: _Sentence) -> None:
        text, order = sentence.text, sentence.start
        # All-caps sentences (licence text, warnings) make every word look like an acronym.
        upper = len(_UPPER.findall(text))
        shouting = upper > 0.5 * (upper + len(_LOWER.findall(text)))
        for regex, bonus in ((_DOTTED, 1.0), (_CALL, 1.0), (_CONSTANT, 0.5), (_MIXED, 0.5), (_SNAKE, 0.5)):
            for m in regex.finditer(text):
                name = _code_name(m.group(1) + ("()" if regex is _CALL else ""))
                if name:
                    self.add(name.removesuffix("()"), order, bonus)
        if not shouting:
            for m in _ACRONYM.finditer(text):
                word = m.group(1)
                if (
                    2 <= sum(c.isupper() for c in word)
                    and len(word) <= 10
                    and not _ROMAN.match(word)
                    and not _emphasis(word)
                    and not _path_segment(text, m.start(), m.end())
                ):
                    self.add(word, order, 0.5)
        for m in _CAPSEQ.finditer(text):
            words = m.group(0).split()
            before = text[: m.start()].rstrip(" \"'(\u201c")
            # After "name: " a docstring line starts a new clause, as a sentence would.
            at_start = not before or before.endswith((":", ";", "\u2014", " -"))
            if at_start and (self._common(words[0]) or (len(words) > 1 and _imperative(words[0]))):
                words = words[1:]  # "Raise KeyError if ...", "Use Redis for ...": an opening verb
                at_start = False
            while words and (
                is_stopword(words[0])
                or words[0].lower() in NOT_NAMES
                or (words[0][0].isupper() and words[0][1:].islower() and _verb_first(words[0]))
            ):
                words = words[1:]  # "Called Foo": a verb or adverb opening a clause is not a name
            while words and (is_stopword(words[-1]) or words[-1].lower() in NOT_NAMES):
                words = words[:-1]
            if not words:
                continue
            if len(words) == 1:
                word = words[0]
                # A word opening every sentence it is in is a name only when no dictionary has it
                # and the text never writes it in lower case ("Redis", not "Photons").
                opener = at_start and (lexicon.dictionary_word(word) or self.lower_words[word.lower()] > 0)
                if (
                    opener
                    or word.isupper()
                    or self._common(word)
                    or (_MIXED.fullmatch(word) and not _ACRONYM_PLURAL.match(word))
                ):
                    continue  # sentence-initial word, acronym or identifier: handled elsewhere
                if _hyphenated_adjective(word) or _path_segment(text, m.start(), m.end()):
                    continue
                self.add(word, order)
            else:
                self.add(" ".join(words), order, 0.5)
                # "Linux" of "Linux Security Module": a proper name inside a longer one is named too
                for word in words:
                    if word.isalpha() and word[1:].islower() and not lexicon.dictionary_word(word):
                        self.add(word, order)

    def scan_jargon(self, sentence: _Sentence) -> None:
        """Record the lower-case jargon words of ``sentence`` (``_jargon``: "sysfs", "cgroups"), in
        an English document only."""
        if not self.jargon_ok:
            return
        for m in _LOWER_WORD.finditer(sentence.text):
            word = m.group(1)
            if word.casefold() not in self.found and _jargon(word):
                self.jargon.add(word.casefold())
            if word.casefold() in self.jargon:
                self.add(word, sentence.start)

    def scan_expansions(self, sentence: _Sentence) -> None:
        """Record "Portable Operating System Interface (POSIX)" and "JSON (JavaScript Object
        Notation)" so the spelled-out form becomes an alias of the acronym, not its own item."""
        for regex, acronym_group in ((_EXPANSION_FIRST, 2), (_ACRONYM_FIRST, 1)):
            for m in regex.finditer(sentence.text):
                acronym = m.group(acronym_group)
                expansion = m.group(3 - acronym_group)
                if acronym[0] != expansion[0].upper() or acronym.casefold() in NOT_NAMES:
                    continue
                if validate_item_name(expansion) is None or validate_item_name(acronym) != acronym:
                    continue
                self.add(acronym, sentence.start, 0.5)
                self.found[acronym.casefold()].forms.setdefault(expansion, 0)
                self.expansions.add(expansion.casefold())

    def ranked(self, title: str, sentences: int) -> list[tuple[str, _Candidate]]:
        self._merge()
        title_fold = title.casefold()
        scored = []
        for cand in self.found.values():
            name = cand.name
            position = 1.0 + 1.0 / (1.0 + 10.0 * cand.first / max(sentences, 1))
            score = cand.count * position + cand.bonus + (2.0 if name.casefold() in title_fold else 0.0)
            scored.append((-score, name, cand))
        scored.sort(key=lambda t: (t[0], t[1]))
        return [(name, cand) for _, name, cand in scored]

    def _merge(self) -> None:
        """Fold "Popen" into "subprocess.Popen", "Widgets" into "Widget" and spelled-out
        acronyms into the acronym (the folded forms become aliases)."""
        for expansion in sorted(self.expansions):
            owner = next(
                (
                    k
                    for k in sorted(self.found)
                    if expansion in {f.casefold() for f in self.found[k].forms} and k != expansion
                ),
                None,
            )
            if owner and expansion in self.found:
                self._fold(expansion, owner)
        # "Venn" after "Oskar Venn": the surname of a person the text named in full is that person
        full_names: dict[str, list[str]] = {}
        for key in self.found:
            words = key.split()
            if 2 <= len(words) <= 3 and all(w[:1].isalpha() for w in words):
                full_names.setdefault(words[-1], []).append(key)
        for key in sorted(self.found):
            owners = full_names.get(key, [])
            if " " not in key and len(owners) == 1 and key.isalpha() and not lexicon.dictionary_word(key):
                if owners[0] in self.found and key in self.found:
                    self._fold(key, owners[0])
        by_last: dict[str, list[str]] = {}
        for key in self.found:
            if "." in key:
                by_last.setdefault(key.rsplit(".", 1)[-1], []).append(key)
        for key in sorted(self.found):
            if key not in self.found:
                continue
            targets = by_last.get(key, [])
            if "." not in key and len(targets) == 1 and not lexicon.dictionary_word(key):
                # "Popen" is subprocess.Popen; "Generator" (a class) is not the email.generator module
                self._fold(key, targets[0])
                continue
            for other in (key + "s", key + "es"):
                if other in self.found and other != key:
                    keep, drop = (key, other) if self.found[key].count >= self.found[other].count else (other, key)
                    self._fold(drop, keep)
                    break

    def _fold(self, drop: str, keep: str) -> None:
        gone = self.found.pop(drop)
        target = self.found[keep]
        # The folded forms become aliases; with a zero count they never win the name.
        for form in gone.forms:
            target.forms.setdefault(form, 0)
        target.count += gone.count
        target.first = min(target.first, gone.first)
        target.bonus = max(target.bonus, gone.bonus)


def _jargon(word: str) -> bool:
    """Whether a lower-case ``word`` is jargon of the corpus ("sysfs", "cgroups", "kexec",
    "tmpfs"): no dictionary knows it, wordfreq finds it rarer than ``JARGON_ZIPF``, it has a
    letter after its first and is no stopword. Such a word names a page only where some
    document defines it (it is a term, ``wiki.coverage.page_worthy``), so "ptr" and "buf" do not."""
    return (
        word.isalnum()
        and sum(c.isalpha() for c in word) >= 3
        and not is_stopword(word)
        and word not in NOT_NAMES
        and not lexicon.dictionary_word(word)
        and lexicon.zipf(word) < JARGON_ZIPF
    )


def _generic_word(name: str) -> bool:
    """Whether entity ``name`` is one capitalised common noun ("Bus", "Master", "Host", "Device"):
    capitalised in one document's prose, it still names no one thing of the KB (``lexicon.too_common``;
    "Thunderbird", "Ethernet" and "Linux" are rarer and stay)."""
    return (
        name.isalpha()
        and name[:1].isupper()
        and not name.isupper()
        and lexicon.too_common(name)
        and "NOUN" in lexicon.lemmas(name)
    )


def _imperative(word: str) -> bool:
    """Whether ``word`` is a verb's base form ("Raise", "Return", "Use"): opening a sentence it is
    an instruction, not the first word of a name ("Python Software Foundation" keeps "Python")."""
    return word.lower() in lexicon.lemmas(word).get("VERB", ())


def _verb_first(word: str) -> bool:
    """Whether a capitalised word opening a run is a verb or adverb, not a name ("Called",
    "Extending", "Simply")."""
    pos = lexicon.lemmas(word)
    return bool(pos) and not pos.keys() & {"NOUN", "PROPN", "ADJ"}


def _emphasis(word: str) -> bool:
    """Whether an all-caps ``word`` is an ordinary English word set in capitals ("LAYOUT",
    "MAPPINGS", "WARNING"), not an acronym ("JSON", "NUMA"): 4+ letters the lexicon knows."""
    return len(word) >= 4 and word.isalpha() and lexicon.dictionary_word(word)


def _hyphenated_adjective(word: str) -> bool:
    """Whether a capitalised hyphenated word ends in a lower-case part ("Real-valued",
    "Thread-safe", "Built-in"): a compound adjective or a sentence opener, not a proper name
    ("Île-de-France" and "Wi-Fi" end in a capital)."""
    return "-" in word and word.rsplit("-", 1)[-1][:1].islower()


def _path_segment(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a piece of a path such as ``Documentation/ABI/stable`` or
    ``Documentation/foo.rst`` (a ``/`` next to it, and two of them, a dot, or a part after a ``/``
    longer than 3 characters in the token), not a name like "TCP/IP" or "I/O"."""
    if (start == 0 or text[start - 1] != "/") and (end >= len(text) or text[end] != "/"):
        return False
    left = text.rfind(" ", 0, start) + 1
    right = text.find(" ", end)
    token = text[left : right if right >= 0 else len(text)].rstrip(".,;:)")
    # "Documentation/admin-guide", "ABI/testing/sysfs", "Documentation/foo.rst"
    return token.count("/") >= 2 or "." in token or any(len(p) > 3 for p in token.split("/")[1:])


def _word_counts(sentences: list[_Sentence]) -> tuple[Counter[str], Counter[str]]:
    lower: Counter[str] = Counter()
    cap: Counter[str] = Counter()
    for s in sentences:
        for i, m in enumerate(_WORD.finditer(s.text)):
            word = m.group(0)
            if word.islower():
                lower[word] += 1
            elif i > 0 and word[0].isupper():
                cap[word] += 1
    return lower, cap


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole word/identifier (no word character or ``-`` around)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-")


def _find(text: str, needles: list[str]) -> bool:
    """Whether any needle occurs in ``text`` as a whole word (needles and text in the same case);
    a CJK needle anywhere, since those scripts put no space between words."""
    for needle in needles:
        start = text.find(needle)
        if start >= 0 and has_cjk(needle):
            return True
        while start >= 0:
            if _bounded(text, start, start + len(needle)):
                return True
            start = text.find(needle, start + 1)
    return False


def _occurrences(text: str, needle: str) -> list[int]:
    """The start offsets of ``needle`` in ``text`` not glued to a word before it (plain string
    search: a regex per name would be compiled afresh for every document)."""
    out = []
    start = text.find(needle)
    while start >= 0:
        if start == 0 or not (text[start - 1].isalnum() or text[start - 1] in "_."):
            out.append(start)
        start = text.find(needle, start + 1)
    return out


_NEXT_WORD = re.compile(r"\s+([a-z]+)")


def _verb_in_context(phrase: str, prose_low: str) -> bool:
    """Whether the last word of ``phrase`` reads as a verb where the phrase occurs: followed, in
    at least half of its occurrences, by a word that follows verbs, not nouns ("the method checks
    whether ...")."""
    needle = phrase.lower()
    follows = []
    for start in _occurrences(prose_low, needle):
        m = _NEXT_WORD.match(prose_low, start + len(needle))
        if m:
            follows.append(m.group(1))
    verbal = sum(w in AFTER_VERB or w.endswith("ly") for w in follows)
    return bool(follows) and 2 * verbal >= len(follows)


_PARAMETER_NOUNS = r"(?:argument|parameter|flag|keyword|option)s?"
_VALUE_NOUNS = r"(?:optional\s+)?(?:flag|argument|parameter|boolean|bool|integer|int|string|str|number|callable)"


def _parameter(word: str, prose_low: str) -> bool:
    """Whether the lone ``word``, unknown to the lexicon and to wordfreq, is a parameter of a
    function the document describes: it calls it one ("the kwds argument", "headersonly is a
    flag", "timeout=None"). A parameter means something only inside its function's docstring;
    unknown words it never calls so ("cpusets", "kprobes") stay terms."""
    low = word.lower()
    if lexicon.dictionary_word(low) or lexicon.zipf(low) > 0:
        return False
    w = re.escape(low)
    return (
        re.search(
            rf"\b{w}\s+{_PARAMETER_NOUNS}\b|\b{_PARAMETER_NOUNS}\s+{w}\b|\b{w}\s*=[^=]"
            rf"|\b{w}\s+(?:is|are)\s+(?:a|an|the)\s+{_VALUE_NOUNS}\b",
            prose_low,
        )
        is not None
    )


#: Prepositions the stopword list lacks: a keyphrase holding one is a clause's piece.
_PREPOSITIONS = frozenset({"unlike", "like", "via", "per", "versus", "despite", "except", "besides", "whereas", "upon"})


def _concept_name(phrase: str, prose_low: str) -> str | None:
    """The concept a yake keyphrase names, or None when the phrase is not a noun phrase.

    Refused: words with non-letters, a stopword anywhere (determiners, prepositions, pronouns:
    "instances of parsemap", "designed by diego"), a last word that is never a noun ("blocks
    allocated", "abc represents", "aborted or closed", "real-valued"), a plural or a verb's -s
    form before the last word ("photons travel"), a last word read as a verb in the text ("method
    checks whether"), and lone words too common to mean one thing (``lexicon.COMMON_ZIPF``).
    All-caps ordinary words ("PHOTONS") are lower-cased like the rest; acronyms keep their case.
    """
    words = phrase.split()
    while len(words) > 1 and words[0].lower() in DOCSTRING_OPENERS:
        words = words[1:]  # "Optional headersonly is a flag": the docstring's word, not the name's
        if len(words) == 1 and not lexicon.dictionary_word(words[0]):
            return None  # what such a word introduces, when no dictionary has it, is a parameter
    if any(len(w) < 2 for w in words):
        return None
    if any(not re.fullmatch(r"[A-Za-z][A-Za-z0-9'-]*", w) for w in words):
        return None
    if any(is_stopword(w) or w.lower() in _PREPOSITIONS for w in words):
        return None  # "unlike kdump": a sentence's opening, not a name
    if words[0].lower() in DEICTIC:
        return None  # "previous data", "current setting": which one, the sentence around it says
    words = [w if (w.isupper() and not _emphasis(w)) or _ACRONYM_PLURAL.match(w) else w.lower() for w in words]
    last = words[-1]
    tail = last.rsplit("-", 1)[-1]
    if lexicon.not_a_noun(tail) or lexicon.inflected_verb(tail):
        return None
    for word in words[:-1]:
        if not word.isupper() and (lexicon.plural_noun(word) or lexicon.inflected_verb(word)):
            return None
    if len(words) == 1 and lexicon.too_common(last):
        return None
    if len(words) == 1 and _parameter(last, prose_low):
        return None
    if (
        len(words) > 1
        and last.endswith("s")
        and "VERB" in lexicon.lemmas(last)
        and _verb_in_context(" ".join(words), prose_low)
    ):
        return None
    return validate_item_name(" ".join(words))
