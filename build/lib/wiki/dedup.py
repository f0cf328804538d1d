"""Deciding whether a newly extracted entity or concept is an existing page.

Page identity is a pure function of an item's name: every item whose ``name_key`` is K belongs to
the one entity/concept page whose title has key K. The partition of items into pages therefore
does not depend on which page existed first, on batch size or on document order. Aliases never
decide a merge (they stay display aliases used for linking), and there is no likeness merge: a
ratio threshold is not transitive, so it could chain names differently in different orders;
``name_key`` folds the spelling variants instead (case, accents, separators, a plural last word).
With the LLM extractor, a model may rename a new item after a near page before it reaches reduce
(``stages.llm_merges``, behind ``same_thing_refused``'s guards); reduce still files items by name only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wiki.extract import lexicon
from wiki.slugs import normalize_name

# pg_trgm similarity a title or alias must reach for the similar-title lookup (link repair,
# ``stages.relink``) to return it (the ``pg_trgm.similarity_threshold`` every pooled connection
# sets). 0.6 keeps the GIN lookup at a few ms at 40k pages (bench/scale.py).
TRGM_THRESHOLD = 0.6

# A plain English plural the lexicon does not know ("mutexes", "kprobes", "dentries"): -ies -> -y,
# -es after a sibilant -> drop "es", else a final "s" not in "ss", "us", "is" ("class", "status",
# "Redis" stay; so do "GPUs" and "APIs", which case-free text cannot tell from "virus" or
# "analysis") -> drop it. Words under 4 letters ("aws", "gcs", "os") are kept: too short to tell.
_SIBILANT_ES = re.compile(r"(?:s|x|z|ch|sh)es$")
# Symbols that tell languages apart where the letters do not ("C", "C++", "C#", "F#").
_KEPT_SYMBOLS = "+#"


def singular(word: str) -> str:
    """The singular of a lowercased word when it reads as a noun's plural, else the word.

    The lexicon (``wiki.extract.lexicon``: lemminflect) decides for words it knows: a plural noun
    gives its noun lemma ("actors" -> "actor", "indices" -> "index"), any other word stays ("news",
    "series", "analysis", "data"). Unknown words follow the plain rule above. Words holding a digit
    never change, so numbers and versions keep names apart ("Cortex-A5" / "Cortex-A9").
    """
    if len(word) < 4 or not word.isalpha() or not word.endswith("s"):
        return word
    pos = lexicon.lemmas(word)
    if pos:
        nouns = pos.get("NOUN", ())
        return min(nouns) if nouns and word not in nouns else word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if _SIBILANT_ES.search(word):
        return word[:-2]
    if word.endswith(("ss", "us", "is")):
        return word
    return word[:-1]


#: What makes a name code (an identifier whose case and punctuation are part of it): a dot, an
#: underscore, "::" or "->" between its parts. CamelCase alone does not: "JavaScript" and
#: "Javascript", "GitHub" and "Github" are spellings of one name.
_CODE_MARKS = re.compile(r"[._]|::|->")
#: A lower-camel-case identifier ("setUp", "tearDown", "handleError"): no word of prose is spelled
#: so, and "setUp" (unittest's hook) is not the word "setup".
_LOWER_CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z][a-z][A-Za-z0-9]*")


def is_code_name(name: str) -> bool:
    """Whether ``name`` is a code identifier (``_CODE_MARKS``, one word with a letter, or lower
    camel case): "queue.Queue.get", "GFP_KERNEL", "io_uring", "setUp"; "QueueEmpty" and
    "kmalloc()" are not (they have none of the marks, and are folded like words)."""
    bare = name.strip().removesuffix("()")
    if " " in bare or not any(ch.isalpha() for ch in bare):
        return False
    return _CODE_MARKS.search(bare) is not None or _LOWER_CAMEL.fullmatch(bare) is not None


#: Zipf frequency from which a word the lexicon lacks is still an everyday word ("processor" 3.9).
WORD_ZIPF = 3.0


def _word(text: str) -> bool:
    """Whether ``text`` is one everyday English word: one the lexicon knows or wordfreq finds as
    frequent as ``WORD_ZIPF``; an acronym ("AP") is none."""
    return text.isalpha() and not text.isupper() and (lexicon.dictionary_word(text) or lexicon.zipf(text) >= WORD_ZIPF)


def link_aliases(title: str, aliases: list[str]) -> list[str]:
    """The aliases of a page that its mentions are linked by: all of them, but a plain dictionary
    word naming a code page ("Queue" of ``queue.Queue``, "generator" of ``email.generator``): the
    alias lets a reader find the page, but linking it would point every "queue" of the KB there
    (of any page, one dictionary word of a longer title: "Processor" of "adjunct processor");
    nor a lower-case word that is the last part of a dotted code name ("filename" of
    ``fileinput.filename``, "fileno"): many modules and classes have one, and prose naming it
    means its own."""
    if not is_code_name(title):
        # "Processor" of "adjunct processor": one word of the title alone names no one page of the KB
        words = title.casefold().split()
        return [a for a in aliases if len(words) < 2 or a.casefold() not in words or not _word(a)]
    last = title.rpartition(".")[2]
    return [
        a
        for a in aliases
        if not (a.isalpha() and (lexicon.dictionary_word(a) or (a == last and a.islower() and "." in title)))
    ]


def link_phrases(title: str, aliases: list[str], page_type: str) -> list[str]:
    """The phrases mentions of a page are linked by: its title and ``link_aliases``, but the title
    of an entity page that is one lower-case dictionary word ("random", "copy", "select": a
    module named by a word) links no mention of the word."""
    own = (
        []
        if page_type == "entity" and title.isalpha() and title.islower() and lexicon.dictionary_word(title)
        else [title]
    )
    return own + link_aliases(title, aliases)


def name_key(name: str) -> str:
    """The identity of the page an entity or concept named ``name`` belongs to.

    A code name (``is_code_name``) is its own key, as written without a trailing "()": case and
    qualifier are part of an identifier ("Queue.empty" is not "QueueEmpty" nor "queue.empty",
    "re.findall" is not "distutils.filelist.findall"). Any other name is folded:

    ``normalize_name`` (NFKC, casefold, accents folded, punctuation runs to one space), the last
    word made ``singular``, then every space dropped: "Photons", "photons" and "PHOTONS" give
    "photon"; "file type", "file-type" and "FileType" give "filetype"; "Cortex-A5" gives
    "cortexa5" and "Cortex-A9" "cortexa9". A name with no letter
    or digit ("!!!") is its own key, stripped and casefolded. The "+" and "#" a name holds are
    kept at the end, so "C++" ("c++"), "C#" ("c#") and "C" ("c") stay three pages. Pure: the same
    name always gives the same key.
    """
    if is_code_name(name):
        return name.strip().removesuffix("()")
    words = normalize_name(name).split(" ")
    if words[-1]:
        words[-1] = singular(words[-1])
    key = "".join(words) + "".join(ch for ch in name if ch in _KEPT_SYMBOLS)
    return key or name.strip().casefold()


# A version or ordinal a name carries: a run of digits ("Cortex-A9" → 9, "Python 3.10" → 3, 10,
# "v2" → 2). Leading zeros do not count ("v01" is "v1").
_NUMBER = re.compile(r"\d+")
#: Shortest remainder word that may be read as a piece of the other name ("file" in "filesystem").
_MIN_PIECE = 3


def _numbers(name: str) -> list[int]:
    return [int(n) for n in _NUMBER.findall(normalize_name(name))]


def _initials(words: list[str]) -> str:
    return "".join(w[0] for w in words if w)


def _related(left: list[str], right: list[str]) -> bool:
    """Whether two remainders (the words two names do not share) can name the same thing: one is
    the other's abbreviation (a prefix of it, "corp"/"corporation", or its initials, "vfs"/"virtual
    file system") or one holds a word of the other ("file system"/"filesystem switch")."""
    a, b = "".join(left), "".join(right)
    if a.startswith(b) or b.startswith(a) or a == _initials(right) or b == _initials(left):
        return True
    return any(len(w) >= _MIN_PIECE and w in b for w in left) or any(len(w) >= _MIN_PIECE and w in a for w in right)


def merge_refused(name: str, other: str) -> str | None:
    """Why an item named ``name`` may never be merged into a page titled ``other``, or None when a
    model may be asked (the guards run before any model call; no likeness is ever enough alone).

    - ``"number"``: the names carry different numbers ("Cortex-A5"/"Cortex-A9", "Python 2"/"Python
      3", "v1"/"v2", "Python"/"Python 3"): a version or a model number names another thing.
    - ``"related"``: the names share their leading words and then end differently, in words neither
      of which abbreviates or contains a word of the other ("Contoso Cloud"/"Contoso Corp", "Linux
      Kernel"/"Linux Foundation"): two things of one family, not one thing. Shared trailing words
      are set aside first ("Acme Cloud Platform"/"Acme Corp Platform" compare "cloud"/"corp"). A
      name that extends the other ("Google Cloud"/"Google Cloud Platform") is left to the model, as
      are names with no leading word in common ("Postgres"/"PostgreSQL").

    Words are ``normalize_name``'s (case, accents, punctuation folded); the last word is made
    ``singular`` so that a plural never counts as a different ending.
    """
    if _numbers(name) != _numbers(other):
        return "number"
    a = [w for w in normalize_name(name).split(" ") if w]
    b = [w for w in normalize_name(other).split(" ") if w]
    if a:
        a[-1] = singular(a[-1])
    if b:
        b[-1] = singular(b[-1])
    lead = 0
    while lead < min(len(a), len(b)) and a[lead] == b[lead]:
        lead += 1
    if lead == 0:
        return None
    a, b = a[lead:], b[lead:]
    while a and b and a[-1] == b[-1]:
        a, b = a[:-1], b[:-1]
    if a and b and not _related(a, b):
        return "related"
    return None


#: rapidfuzz ``ratio`` (0-100) of two names' letters at which they read as spellings of one name
#: ("queryplanning"/"queryplanner" 80, "virtualfilesystem"/"virtualfilesystems" 97) while an
#: unrelated pair stays far below ("adminpassword"/"postgresql" 26).
SPELLING_RATIO = 80


def names_agree(name: str, other: str) -> bool:
    """Whether two names can be one thing's names by their own letters: the same ``name_key``, one
    folded name a prefix of the other ("Postgres"/"PostgreSQL", "Google Cloud"/"Google Cloud
    Platform"), one the initials of the other ("VFS"/"Virtual File System"), every word of one
    among the other's ("PostgreSQL"/"PostgreSQL server"), shared words around parts that abbreviate
    each other (``_related``: "Virtual FS"/"Virtual File System"), or spelled alike
    (``SPELLING_RATIO``).
    A model's word that two names are the same is never enough alone (issue 26: a document asked
    for "Admin Password" to be merged into the PostgreSQL page)."""
    from rapidfuzz import fuzz

    if name_key(name) == name_key(other):
        return True
    a = [w for w in normalize_name(name).split(" ") if w]
    b = [w for w in normalize_name(other).split(" ") if w]
    if not a or not b:
        return False
    ca, cb = "".join(a), "".join(b)
    short, long = sorted((ca, cb), key=len)
    if len(short) >= _MIN_PIECE and long.startswith(short):
        return True
    if (len(a) == 1 and len(b) > 1 and ca == _initials(b)) or (len(b) == 1 and len(a) > 1 and cb == _initials(a)):
        return True
    fewer, more = sorted(({singular(w) for w in a}, {singular(w) for w in b}), key=len)
    if fewer <= more:
        return True
    # shared leading or trailing words, the rest abbreviating the other's ("Virtual FS"/"Virtual File System")
    lead = 0
    while lead < min(len(a), len(b)) and a[lead] == b[lead]:
        lead += 1
    rest_a, rest_b = a[lead:], b[lead:]
    while rest_a and rest_b and rest_a[-1] == rest_b[-1]:
        rest_a, rest_b = rest_a[:-1], rest_b[:-1]
    if (len(rest_a), len(rest_b)) != (len(a), len(b)) and rest_a and rest_b and _related(rest_a, rest_b):
        return True
    return fuzz.ratio(ca, cb) >= SPELLING_RATIO


def same_thing_refused(name: str, title: str, aliases: Iterable[str] = ()) -> str | None:
    """Why an item named ``name`` may not be filed under the page ``title`` (with ``aliases``), or
    None: ``merge_refused``'s reasons first ("number", "related"), then ``"unrelated"`` when the
    name agrees (``names_agree``) with neither the title nor any alias. Used for every merge a
    model proposes: ``same_as`` in an extraction and the merge call's choices."""
    why = merge_refused(name, title)
    if why:
        return why
    if names_agree(name, title) or any(names_agree(name, alias) for alias in aliases):
        return None
    return "unrelated"
