"""The offline extractor: deterministic, no network, good enough for a useful wiki from real docs.

Pipeline for one document (Markdown, reStructuredText or plain text):

1. keep the first ``MAX_ANALYSED_CHARS`` characters; drop code (fences, ``::`` literal blocks,
   doctest lines), tables, headings and directives; strip inline markup, remembering the inline
   code spans (they name functions, modules and constants);
2. split prose into sentences: ``pysbd`` for the first ``PYSBD_PREFIX_CHARS`` of prose (the part
   the summary and body come from; pysbd costs about 2 ms per KB) and ``segtok`` (the splitter
   yake itself uses, ~15x faster) for the rest, so a 50 KB document stays well under 150 ms;
3. summary = the first informative sentence; body = 1-3 short paragraphs of leading informative
   sentences;
4. entities = capitalised multi-word names, proper nouns seen capitalised mid-sentence, acronyms
   and code identifiers, ranked by frequency and first position; concepts = ``yake`` keyphrases
   (Campos et al., 2020) of the first ``YAKE_CHARS`` of prose that do not repeat an entity;
5. each item gets a one-sentence description (a definitional sentence "X is/provides/... " from
   the document when there is one) and up to 3 evidence sentences quoted from the document.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from dataclasses import dataclass, field

import pysbd
import yake
from segtok.segmenter import split_single

from wiki.extract import ExtractionError, cjk, is_stopword, lexicon, validate_item_name
from wiki.markdown import AUTOLINK_RE, HEADING_RE, MD_LINK_RE, WIKI_LINK_RE, fenced_code_lines, wiki_link_text
from wiki.models import ExtractedItem, Extraction
from wiki.slugs import CJK_CLASS, has_cjk

MAX_ANALYSED_CHARS = 50_000
PYSBD_PREFIX_CHARS = 2_500
YAKE_CHARS = 6_000
MAX_ENTITIES = 12
MAX_CONCEPTS = 12
MAX_ALIASES = 5
SUMMARY_CHARS = 300
DESCRIPTION_CHARS = 400
EVIDENCE_CHARS = 400
#: wordfreq Zipf frequency from which a lower-case identifier reads as an English word ("timeout"
#: 3.2, "callback" 2.8, "filename" 2.7): many modules have one, so a page of it would merge them;
#: "mmap" 1.3 and "readline" 1.3 stay names.
WORDLIKE_ZIPF = 2.5
#: Longest sentence quoted at all: evidence is whole sentences, never cut.
MAX_QUOTE_CHARS = 800
BODY_PARAGRAPHS = 3
BODY_PARAGRAPH_SENTENCES = 3
BODY_CHARS = 1200

# --- block level: which lines are prose -------------------------------------------------------

_UNDERLINE = re.compile(r"^\s*([=\-~^*#+`'\"._:])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\.(\s|$)")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|#\.|\([a-z0-9]\))\s+")
_TABLE = re.compile(r"^\s*(?:\||\+[-=+]{2,})|\s\|\s.*\s\|\s")
#: An RST simple table's border ("=====  =====", two columns or more): the lines from one border to
#: a border followed by a blank line are the table's rows.
_TABLE_BORDER = re.compile(r"^\s*=+(?:[ \t]+=+)+\s*$")
#: Text in columns: a tab or three spaces between two words of one line ("in0_alarm<TAB>AVDDL voltage
#: alarm.", "影子寄存器      被中断处理代码使用"). A row of a table or a list aligned by hand is no
#: sentence (the linux-doc judge failed both quoted as evidence); prose puts at most two spaces
#: after a full stop.
_COLUMNS = re.compile(r"\S(?:[ ]*\t[ \t]*|[ ]{3,})\S")
_DOCTEST = re.compile(r"^\s*(?:>>>|\.\.\.(\s|$)|\$\s)")
_FIELD = re.compile(r"^\s*:[\w ()-]+:\s*")
_CODE_LINE = re.compile(r"[;{}]\s*$|^\s*(?:#include|#define|struct\s+\w+\s*\{|\w+\s*\(.*\)\s*;)")

# --- inline markup ------------------------------------------------------------------------------

_ROLE = re.compile(r":[\w:+.-]+:`([^`]*)`")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<[^`>]*>`_{1,2}")
_DOUBLE_BT = re.compile(r"``(.+?)``")
_SINGLE_BT = re.compile(r"`([^`]+)`_{0,2}")
# Emphasis only where the markers stand outside words: "2*k+1] and a[2*k+2]" is arithmetic.
_EMPH = re.compile(r"(?<![\w*])(\*\*|\*)(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])")
_FOOTNOTE = re.compile(r"\[(?:#\w*|\d+|\*)\]_")
_SUBST = re.compile(r"\|([\w -]+)\|")
_ROLE_TARGET = re.compile(r"^(.*?)\s*<[^>]*>$")

# --- names --------------------------------------------------------------------------------------

_IDENT = re.compile(r"^_*[A-Za-z][\w]*(?:(?:\.|::|->)[A-Za-z_]\w*)*(?:\(\))?$")
_CALL = re.compile(r"(?<![\w.*])(_*[A-Za-z]\w{2,})\(\)")
_DOTTED = re.compile(r"(?<![\w./@-])(_*[A-Za-z]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(/@-])")
_CONSTANT = re.compile(r"(?<![\w.])(_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
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

_FILE_EXT = frozenset(
    "py pyc txt rst md html htm c h cc cpp hpp so o ko a json yaml yml toml cfg ini conf sh bat "
    "gz tar zip bz2 xz pdf png jpg jpeg gif svg js css xml log csv tsv com org net io edu gov "
    "uk de fr exe dll dts dtsi".split()
)
_NOT_NAMES = frozenset(
    "true false none null nil i ok note notes todo fixme xxx warning warnings caution example "
    "examples see also returns return raises parameters args arguments kwargs usage default "
    "yes no etc".split()
)
_ROMAN = re.compile(r"^[IVXLCDM]+$")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")
_ACRONYM_PLURAL = re.compile(r"^[A-Z]{2,}s$")
_SPELLED = r"[A-Z][\w-]*(?:\s+(?:of|for|and|the|on|[A-Z][\w-]*)){1,5}"
_EXPANSION_FIRST = re.compile(rf"({_SPELLED})\s+\(([A-Z][A-Z0-9]{{1,9}})\)")
_ACRONYM_FIRST = re.compile(rf"\b([A-Z][A-Z0-9]{{1,9}})\s+\(({_SPELLED})\)")
_BOILERPLATE = re.compile(
    r"(?i)^(?:copyright|\(c\)|©|spdx|license|licensed|all rights reserved|author|authors|"
    r"maintainer|written by|generated by|table of contents|contents)\b"
)
_VERBS = (
    r"is|are|was|were|provides?|implements?|represents?|contains?|defines?|describes?|allows?|"
    r"enables?|lets|manages?|handles?|stores?|holds?|means|refers to|consists of|offers?|"
    r"supports?|acts as|serves as|returns?|gives|creates?|controls?"
)


@dataclass(frozen=True)
class _Sentence:
    text: str
    block: int
    start: int  # order of the sentence in the document


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


# --- text preparation ---------------------------------------------------------------------------


def _strip_inline(text: str, code: list[str]) -> str:
    """Remove inline Markdown/RST markup from ``text``; append inline code spans to ``code``."""

    def role(m: re.Match[str]) -> str:
        inner = m.group(1)
        target = _ROLE_TARGET.match(inner)
        inner = (target.group(1) if target else inner).lstrip("~!")
        code.append(inner)
        return inner

    def span(m: re.Match[str]) -> str:
        inner = m.group(1)
        code.append(inner.lstrip(".") or inner)
        return inner

    text = WIKI_LINK_RE.sub(wiki_link_text, text)
    text = MD_LINK_RE.sub(r"\g<text>", text)
    text = AUTOLINK_RE.sub("", text)
    text = _RST_LINK.sub(r"\1", text)
    text = _ROLE.sub(role, text)
    text = _DOUBLE_BT.sub(span, text)
    text = _SINGLE_BT.sub(span, text)
    text = _FOOTNOTE.sub("", text)
    text = _EMPH.sub(r"\2", text)
    text = _SUBST.sub(r"\1", text)
    text = text.replace("[[", "[").replace("]]", "]")
    text = re.sub(r"::(\s|$)", r":\1", text)
    return " ".join(text.split())


#: A line of a paragraph shorter than this share of the paragraph's longest line, with no
#: punctuation at its end, before a line opening like a new item: the author broke the line on
#: purpose (docstring lists such as "*metaclass* is ... / *namespace* is ..."), wrapped prose
#: fills its lines to about the same width.
SHORT_LINE_SHARE = 0.7
_ITEM_OPENER = re.compile(r"^[*`'\"A-Z0-9]")
_LINE_END_PUNCT = re.compile(r"[.!?:;,(\[{\-\u2014/&|]$")
#: A line opening with a path ("Documentation/admin-guide/mds.rst techniques to ..."): wrapped
#: prose that names a file, never a list item of its own.
_PATH_OPENER = re.compile(r"^[\w.-]+/[\w./-]+")


def _list_units(lines: list[str]) -> list[list[str]]:
    """``lines`` of one paragraph cut into units where a line is a list item of its own: it ends
    short (``SHORT_LINE_SHARE``) with no punctuation and the next line opens like an item
    (``*word*``, a capital, a quote). Wrapped prose stays one unit."""
    if len(lines) < 2:
        return [lines]
    width = max(len(line.strip()) for line in lines)
    units: list[list[str]] = [[lines[0]]]
    for prev, line in zip(lines, lines[1:]):
        before, after = prev.strip(), line.strip()
        if (
            len(before) < SHORT_LINE_SHARE * width
            and not _LINE_END_PUNCT.search(before)
            and _ITEM_OPENER.match(after)
            and not _PATH_OPENER.match(after)
        ):
            units.append([line])
        else:
            units[-1].append(line)
    return units


def _prose_blocks(text: str) -> tuple[list[str], list[str], dict[int, str]]:
    """Split a document into prose blocks (inline markup removed), its inline code spans, and
    {block index: the Markdown heading right above that block}."""
    blocks: list[str] = []
    code: list[str] = []
    headings: dict[int, str] = {}
    current: list[str] = []
    skip_indented = False
    heading = ""

    def flush() -> None:
        nonlocal heading
        for unit in _list_units(current) if current else []:
            block = _strip_inline(" ".join(unit), code)
            if block:
                if heading:
                    headings[len(blocks)] = heading
                blocks.append(block)
                heading = ""
        current.clear()

    lines = text.splitlines()
    in_table = False
    for i, (line, is_code) in enumerate(zip(lines, fenced_code_lines(lines))):
        stripped = line.strip()
        if is_code:
            flush()
            continue
        if _TABLE_BORDER.match(line):
            flush()
            in_table = not (in_table and (i + 1 == len(lines) or not lines[i + 1].strip()))
            continue
        if in_table or _COLUMNS.search(stripped):
            flush()
            continue
        indented = line[:1] in (" ", "\t")
        if skip_indented:
            if not stripped or indented:
                continue
            skip_indented = False
        if not stripped:
            flush()
            continue
        if _UNDERLINE.match(line):
            # An RST section title is the line just above its underline.
            if current and len(stripped) + 2 >= len(current[-1].strip()):
                current.pop()
            flush()
            continue
        if HEADING_RE.match(line) or _TABLE.search(line):
            flush()
            heading = stripped.lstrip("#").strip() if HEADING_RE.match(line) else ""
            continue
        if _DIRECTIVE.match(line):
            flush()
            skip_indented = True
            continue
        if _DOCTEST.match(line) or (indented and _CODE_LINE.search(line)):
            flush()
            continue
        bullet = _BULLET.match(line)
        if bullet:
            flush()
            line = line[bullet.end() :]
        field_line = _FIELD.match(line)
        if field_line:
            flush()  # each field of a field list is a unit of its own, never joined to the last
            line = line[field_line.end() :]
        current.append(line)
        if stripped.endswith("::"):
            flush()
            skip_indented = True
    flush()
    return blocks, code, headings


# pysbd's Segmenter and yake's KeywordExtractor keep per-call state on the instance, so worker
# threads sharing one got each other's sentences and keyphrases: one instance per thread.
_local = threading.local()


def _segmenter() -> pysbd.Segmenter:
    if not hasattr(_local, "pysbd"):
        _local.pysbd = pysbd.Segmenter(language="en", clean=False)
    return _local.pysbd


def _keyword_extractor() -> yake.KeywordExtractor:
    if not hasattr(_local, "yake"):
        _local.yake = yake.KeywordExtractor(lan="en", n=3, dedup_lim=0.8, top=3 * MAX_CONCEPTS)
    return _local.yake


# A dot with a word or a path right after it (".netrc", "./configure", "<package>.pth", "3.8") is
# not a sentence end, but pysbd reads some as one: it is swapped for ONE DOT LEADER while
# splitting, then put back.
_LEADING_DOT = re.compile(r"\.(?=[\w/])")
_DOT_MASK = "\u2024"


def _split_english(block: str, pysbd_ok: bool) -> list[str]:
    masked = _LEADING_DOT.sub(_DOT_MASK, block) if _DOT_MASK not in block else block
    parts = _segmenter().segment(masked) if pysbd_ok else split_single(masked)
    if masked is not block:
        parts = [part.replace(_DOT_MASK, ".") for part in parts]
    joined: list[str] = []
    for part in parts:
        if joined and _ABBREVIATION_END.search(joined[-1]):
            joined[-1] = joined[-1].rstrip() + " " + part.lstrip()  # "... mitigation e.g. Icelake are ..."
        else:
            joined.append(part)
    return joined


#: Abbreviations both splitters end a sentence at when a capital follows ("e.g. Icelake"): the
#: sentence goes on (the linux-doc judge found "Icelake are not vulnerable to VMSCAPE." quoted alone).
_ABBREVIATION_END = re.compile(r"(?:^|\s|\()(?:e\.g|i\.e|etc|vs|cf|incl|approx|resp)\.\s*$", re.IGNORECASE)


def _sentences(blocks: list[str]) -> list[_Sentence]:
    """The sentences of ``blocks``: Chinese/Japanese sentence marks first (``cjk.split_sentences``),
    then the English splitters on each piece that has no CJK character."""
    out: list[_Sentence] = []
    budget = PYSBD_PREFIX_CHARS
    for index, block in enumerate(blocks):
        pieces = cjk.split_sentences(block) if has_cjk(block) else [block]
        parts: list[str] = []
        for piece in pieces:
            if has_cjk(piece):
                parts.append(piece)
                continue
            parts.extend(_split_english(piece, budget > 0))
            budget -= len(piece)
        for part in parts:
            part = " ".join(part.split())
            if part:
                out.append(_Sentence(part, index, len(out)))
    return out


def _usable(sentence: str) -> bool:
    """A sentence with something to say: 3 words and 3 letters, or 5 CJK characters."""
    if cjk.cjk_chars(sentence) >= 5:
        return True
    return sum(c.isalpha() for c in sentence) >= 3 and len(sentence.split()) >= 3


def _informative(sentence: str) -> bool:
    """A sentence fit for a summary: prose, complete, not boilerplate."""
    if has_cjk(sentence):
        return cjk.cjk_chars(sentence) >= 8 and re.search(r"[。！？!?；.][」』”’）)]*$", sentence) is not None
    words = sentence.split()
    if len(words) < 6 or len(sentence) < 30 or _BOILERPLATE.match(sentence):
        return False
    if not (sentence[0].isupper() or sentence[0].isdigit() or sentence[0] in "\"'(\u201c"):
        return False
    if not re.search(r"[.!?][\"')\u201d]?$", sentence) or re.search(r"\s\S?[.!?]$", sentence):
        return False
    if sentence.count("(") != sentence.count(")"):
        return False  # cut inside a parenthesis, usually by a stripped code span
    letters = sum(ch.isalpha() or ch == " " for ch in sentence)
    return letters / len(sentence) >= 0.75


def _shorten(text: str, limit: int) -> str:
    """``text`` cut at a word boundary to at most ``limit`` characters, marked with an ellipsis."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:-") + "\u2026"


# --- entities -----------------------------------------------------------------------------------


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
        if last.lower() in _FILE_EXT or first.lower() == "www" or min(map(len, segments)) < 2:
            return None
    if len(span) < 3 or span.lower() in _NOT_NAMES:
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

    def __init__(self, lower_words: Counter[str], cap_words: Counter[str]) -> None:
        self.found: dict[str, _Candidate] = {}
        self.expansions: set[str] = set()  # case-folded spelled-out forms of acronyms
        self.lower_words = lower_words
        self.cap_words = cap_words

    def add(self, name: str, order: int, bonus: float = 0.0) -> None:
        # The Latin patterns' \w takes CJK characters too: "SPARSEMEM是Linux中最通用的内存模型" is a
        # clause of mixed text, of which only "SPARSEMEM" is a Latin name (CJK names: cjk.names).
        name = _CJK_TAIL.sub("", name)
        # "Ada Lovelace's" and "the Jones' house" name "Ada Lovelace" and "Jones".
        clean = validate_item_name(_POSSESSIVE.sub("", name) if " " in name or name[:1].isupper() else name)
        if clean is None or clean.lower() in _NOT_NAMES:
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
        low = word.lower()
        return is_stopword(word) or low in _NOT_NAMES or self.lower_words[low] >= max(1, self.cap_words[word])

    def scan(self, sentence: _Sentence) -> None:
        text, order = sentence.text, sentence.start
        # All-caps sentences (licence text, warnings) make every word look like an acronym.
        upper = len(_UPPER.findall(text))
        shouting = upper > 0.5 * (upper + len(_LOWER.findall(text)))
        for regex, bonus in ((_DOTTED, 1.0), (_CALL, 1.0), (_CONSTANT, 0.5), (_MIXED, 0.5)):
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
                or words[0].lower() in _NOT_NAMES
                or (words[0][0].isupper() and words[0][1:].islower() and _verb_first(words[0]))
            ):
                words = words[1:]  # "Called Foo": a verb or adverb opening a clause is not a name
            while words and (is_stopword(words[-1]) or words[-1].lower() in _NOT_NAMES):
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

    def scan_expansions(self, sentence: _Sentence) -> None:
        """Record "Portable Operating System Interface (POSIX)" and "JSON (JavaScript Object
        Notation)" so the spelled-out form becomes an alias of the acronym, not its own item."""
        for regex, acronym_group in ((_EXPANSION_FIRST, 2), (_ACRONYM_FIRST, 1)):
            for m in regex.finditer(sentence.text):
                acronym = m.group(acronym_group)
                expansion = m.group(3 - acronym_group)
                if acronym[0] != expansion[0].upper() or acronym.casefold() in _NOT_NAMES:
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


#: "Private data for that function.": which function, the text before the heading says.
_THAT_THING = re.compile(
    r"(?i)\bthat\s+(?:function|call|method|struct(?:ure)?|object|value|field|file|device|driver|command|callback"
    r"|macro|ioctl|option|flag|parameter|argument|variable|member|list|table|entry)s?\b"
)


def _heading_definitions(sentences: list[_Sentence], headings: dict[int, str]) -> dict[str, _Sentence]:
    """{code name: the first sentence under it} for the sections headed by a code name ("##
    ArgumentParser", "### Popen.wait", "## kmalloc"): reference documentation opens such a
    section with what the thing is ("Object for parsing command line strings into Python
    objects."), without repeating its name. Dictionary words ("## quote") are left out, like
    everywhere else a plain word stands for a code name."""
    out: dict[str, _Sentence] = {}
    firsts: dict[int, _Sentence] = {}
    for sentence in sentences:
        firsts.setdefault(sentence.block, sentence)
    for block, heading in headings.items():
        # a plain lower-case heading ("kmalloc") is code; a capitalised one ("Riferimenti") a title
        name = _code_name(heading, plain_ok=heading.islower())
        if name and name.isupper() and _emphasis(name):
            name = None  # "## INTRODUCTION", "## DESCRIPTION": a section's title in capitals
        first = firsts.get(block)
        if name is None or first is None or name.removesuffix("()") in out:
            continue
        text = first.text
        if (
            _informative(text)
            and len(text) <= DESCRIPTION_CHARS
            and not _UNRESOLVED.match(text)
            and not _narration(text)
            and not _ADMONITION.match(text)
            and not _DEMONSTRATIVE.search(text)
            and not _THAT_THING.search(text)
            and _says_what_heading_names(name.removesuffix("()"), text)
        ):
            # not "Copyright (C) 2004 ...", "This is ...", a story, "WARNING: you may want to ..."
            out[name.removesuffix("()")] = first
    return out


#: Words that open a clause about something else ("For an axis, ...", "Although ...", "If using
#: ...", "With Digital TV, ..."): a section opening with one sets a scene before naming its subject.
_SCENE_OPENERS = frozenset(
    "for although though if when while with without by in on at as since because after before during "
    "once unless until whereas where you we i there here yes no like unlike see please also note".split()
)


def _says_what_heading_names(name: str, text: str) -> bool:
    """Whether ``text``, the first sentence under a heading naming ``name``, can say what ``name``
    is: it names it first ("kmalloc() allocates ...", "The `X` flag ..."), is an instruction a
    docstring leaves the subject out of ("Return the ...", "Enables ..."), or is a noun phrase
    ("Object for parsing ...", "The maximum number of namespaces that ..."). A sentence with its
    own subject and verb ("A long-standing class of security issues is ...", "MHI operation is
    suspended ...") or that sets a scene first ("For some workloads ...", "In order to use VLAN,
    ...") is about something else: the full linux-doc judges failed such leads on sysctl and
    driver sections (about 1 in 10 pages there)."""
    stripped = re.sub(r"^(?:(?:The|A|An)\s+)?`?", "", text)
    if stripped.lower().startswith(name.lower()):
        # what follows the name is judged like any sentence about it ("NAPI is supported in ..."
        # is not what NAPI is)
        return _lead_rank([name], False, text) >= 1
    if name.lower() in text.lower():
        return False  # "The size of a list_head structure.": about a part or a use of the name
    words = [w.strip(",;:.()`\"'") for w in stripped.split()]
    if len(words) < 2 or not words[0] or words[0].lower() in _SCENE_OPENERS:
        return False
    pos = lexicon.lemmas(words[0])
    if stripped == text and "VERB" in pos and (words[0].lower() in pos["VERB"] or lexicon.inflected_verb(words[0])):
        return True  # "Return ...", "Enables ...": the heading is the subject
    if _finite_verb(words[1:12], verb_s_forms=True):
        return False
    return not pos or bool(pos.keys() & {"NOUN", "PROPN", "ADJ", "NUM"}) or words[0].endswith("ed")


_NARRATION = re.compile(r"^(?:The|A|An)\s+(?:[a-z]+\s+){1,2}?([a-z]+ed)\b")


def _narration(text: str) -> bool:
    """Whether ``text`` tells what someone did ("The user selected the menu entry, open the
    tip."): a subject then a past-tense verb. Said under a heading it narrates when the code runs,
    never what the thing is."""
    m = _NARRATION.match(text)
    if m is None:
        return False
    pos = lexicon.lemmas(m.group(1))
    return "VERB" in pos and not pos.keys() & {"NOUN", "ADJ"}


#: Words after a docstring's first word that make it a noun phrase, not an instruction: "Stuff to
#: parse AIFF files", "Base for all ...".
_NOUN_PHRASE_NEXT = frozenset("to for of and or with from in on as".split())
#: Words after a verb that is also a noun ("Return", "Set", "Call") that show it is the verb: an
#: object's determiner or a constant ("Return the ...", "Set a ...", "Return True if ...").
_OBJECT_OPENERS = frozenset(
    "the a an this that these those its their his her our your all any each every some no one "
    "True False None up down out whether if".split()
)
#: Opening words that are verbs in the lexicon but open a comparison or a pointer in a docstring
#: ("Like call_later(), but ...", "See foo() for details").
_NOT_INSTRUCTIONS = frozenset("like unlike see same alias please".split())
_ADMONITION = re.compile(r"(?i)^(?:warning|note|caution|deprecated|todo|xxx|fixme)\b")


#: A heading of a prose document that names code: an underscore, a dot or a call ("kmalloc()"), or
#: camelCase ("setEncoding"). A mixed-case acronym ("WoL", "iSCSI") names no code: the heading's
#: first sentence is no docstring to give a subject to ("`WoL` is a class that wakes up on Lan ...").
_CODE_HEADING = re.compile(r"[_.(]|[a-z][A-Z][a-z]")


def _subject_lead(name: str, text: str, title: str, sections: frozenset[str] = frozenset()) -> str:
    """The lead of code name ``name`` from ``text``, the first sentence of its own section: an
    instruction gets its subject (``_instruction_lead``); a noun-phrase docstring ("Abstract base
    class for import finders.", "Formatted details of methods.") gets one too, as "`X` is an
    abstract base class for ..." (a class named by a singular noun phrase) or "`X` is a function
    of `mod`: formatted details of ..." (a function, a method or a module: what the phrase names is
    what it returns or holds, so it follows a colon). The demo's judge failed the bare phrase: a
    lead with no subject does not say what X is."""
    lead = _instruction_lead(name, text, title, sections)
    module = _module_title(title)
    entry = lead == text and name.lower() not in text.lower()
    if entry and not module and _CODE_HEADING.search(name):
        # "The chunk size in KB for pmsg front-end." under pmsg_size, "Unique identifier of the
        # firmware parameter set." under fw.psid: a definition list's entry, whose subject is the
        # heading (a module's reference says the kind below)
        if _determiner_phrase(text):
            return f"`{name}` is {text[0].lower()}{text[1:]}"
        if _bare_noun_phrase(text) and not lexicon.plural_noun(text.split()[0].lower()):
            article = "an" if text[0].lower() in "aeiou" else "a"
            return f"`{name}` is {article} {text[0].lower()}{text[1:]}"
    if entry and module and _determiner_phrase(text):
        return f"`{name}` is {text[0].lower()}{text[1:]}"
    if lead != text or not _noun_phrase(text) or (not module and not _CODE_HEADING.search(name)):
        return lead
    kind = _code_kind(name, title, sections) if module else None
    if kind is None:
        return text  # outside a module's reference ("max_budget" in a sysfs list) the kind is unknown
    words = text.split()
    first = words[0] if words[0].isupper() and len(words[0]) > 1 else words[0][:1].lower() + words[0][1:]
    phrase = " ".join([first, *words[1:]])
    head = next((w for w in words[:6] if w.lower() in _NOUN_PHRASE_NEXT), None)
    singular = not any(lexicon.plural_noun(w.strip(",;:.").lower()) for w in words[: words.index(head) if head else 3])
    if kind in ("class", "exception") and singular:
        return f"`{name}` is {'an' if first[0].lower() in 'aeiou' else 'a'} {phrase}"
    owner = name.rpartition(".")[0]
    return f"`{name}` is {_kind_phrase(kind, module, owner)}: {phrase}"


#: Finite verbs that show a sentence has its own subject and verb ("Stuff is ...").
_FINITE = frozenset("is are was were has have can will should must may does do".split())


def _noun_phrase(text: str) -> bool:
    """Whether docstring sentence ``text`` is a noun phrase with no verb of its own ("Heap queue
    algorithm.", "Fast version of a heappush.", "Formatted details of methods."): it opens with a
    capitalised noun, adjective or participle and has no finite verb before a relative clause."""
    words = text.split()
    if len(words) < 2 or not words[0].isalpha() or not words[0][0].isupper():
        return False
    if words[0] in ("This", "That", "These", "Those", "It", "The", "A", "An", "If", "When", "See", "Like"):
        return False
    pos = lexicon.lemmas(words[0])
    if not (pos.keys() & {"NOUN", "ADJ"} or words[0].endswith("ed")):
        return False
    return not _finite_verb(words[1:10])


def _determiner_phrase(text: str) -> bool:
    """Whether ``text`` is a noun phrase opened by "The", "A" or "An" with no verb of its own ("The
    chunk size in KB for pmsg front-end.", "The default (and fallback) TTY line discipline."): a
    definition list's entry, no sentence to quote (the linux-doc judge failed such quotes). A verb
    is a finite or modal verb, an -s/-ed form that is only a verb or a word that is only a verb
    ("The drivers allocate ..."); "The drivers return a pointer." is taken for a phrase, so only
    the sentence under a heading naming the thing is asked (``_subject_lead``, ``_item``)."""
    words = text.split()
    if len(words) < 2 or words[0] not in ("The", "A", "An") or not text.endswith("."):
        return False
    for word in words[1:]:
        low = word.strip(",;:.()").lower()
        if low in _CLAUSE_OPENERS:
            return True  # "The maximum number of namespaces that a user may create.": the verb is the clause's
        pos = lexicon.lemmas(low)
        if low in _FINITE or low in _MODAL_VERBS or lexicon.inflected_verb(low):
            return False
        if set(pos) == {"VERB"}:
            return False  # "The drivers allocate ...": a word that is only a verb
    return True


def _bare_noun_phrase(text: str) -> bool:
    """Whether ``text`` is a noun phrase with no article ("Unique identifier of the firmware
    parameter set.", "Access frequency threshold for ..."): ``_noun_phrase``, and its second word
    opens no object, so it is no instruction ("Check the vendor pages ...", "Return the ...")."""
    words = text.split()
    return _noun_phrase(text) and len(words) > 1 and words[1] not in _OBJECT_OPENERS


def _reference_entry(text: str) -> bool:
    """Whether ``text``, the first sentence under a heading naming a thing, is an entry of a
    reference list rather than a sentence: a noun phrase with or without an article, or a predicate
    with no subject."""
    return _determiner_phrase(text) or _bare_noun_phrase(text) or _subjectless(text)


def _subjectless(text: str) -> bool:
    """Whether ``text`` opens with a verb's -s form and no subject ("Gets netdev features like
    ...", "Controls the kernel's behaviour ..."): a reference entry's predicate, whose subject is
    its heading. Quoted alone it is no whole sentence (the linux-doc judge failed such quotes);
    an instruction ("Return the ordinal ...") is one."""
    words = text.split(" ", 2)
    first, second = words[0], (words[1] if len(words) > 1 else "").lower()
    if first.lower() in _FINITE or second in _FINITE or second in _MODAL_VERBS:
        return False  # "Pages are freed ...": a plural noun and its verb
    return first[:1].isupper() and first.endswith("s") and lexicon.third_person(first) == first.lower()


#: Words that open a relative or conditional clause: a verb after one is the clause's, not the phrase's.
_CLAUSE_OPENERS = frozenset("that which who when where if".split())


def _finite_verb(words: list[str], verb_s_forms: bool = False) -> bool:
    """Whether ``words`` hold a finite verb (``_FINITE``, and with ``verb_s_forms`` a word that is
    only a verb's -s form, "indicates") before a clause opener (``_CLAUSE_OPENERS``)."""
    for word in words:
        low = word.strip(",;:.()").lower()
        if low in _CLAUSE_OPENERS:
            return False
        if low in _FINITE or (verb_s_forms and low.endswith("s") and lexicon.inflected_verb(low)):
            return True
    return False


def _code_kind(name: str, title: str, sections: frozenset[str]) -> str | None:
    """What code name ``name`` is by the heading layout: "module" (the document's own title),
    "method" (``Owner.name`` with a capitalised owner or one heading its own section), "class" (a
    CapWords name), "function"; None for a dotted name of a module ("os.path.join")."""
    owner, dot, _member = name.rpartition(".")
    if name == title:
        return "module"
    if dot:
        return "method" if owner[:1].isupper() or owner in sections else None
    return "class" if name[0].isupper() and not name.isupper() and "_" not in name else "function"


def _instruction_lead(name: str, text: str, title: str, sections: frozenset[str] = frozenset()) -> str:
    """The lead of ``name`` from the first sentence of its own section, with the subject a
    docstring leaves out: "Write a bytes object to the file." under ``### LZMAFile.write`` of
    ``lzma`` becomes "LZMAFile.write is a method of lzma.LZMAFile that writes a bytes object to
    the file." Only the kind the heading layout says is added (``Owner.name`` is a method; a
    CapWords name a class, any other a function), and "of <module>" only when the document's
    ``title`` is a module name; the rest is the sentence's own words. ``Owner.name`` is a method
    when ``Owner`` is capitalised or heads a section of its own (``sections``: the code names the
    document's headings name, so ``date.toordinal`` under ``## date``); "An abstract method that
    ..." becomes "`X` is an abstract method that ...". ``text`` unchanged when it does not open
    with a verb or an indefinite article ("Stuff to parse AIFF files.", "HTTPError is ...")."""
    module = _module_title(title)
    if not module and not _CODE_HEADING.search(name):
        return text  # "## URLS", "WoL" in a prose document title a section; they name no code
    words = text.split(" ", 2)
    owner, dot, _member = name.rpartition(".")
    if (
        len(words) > 2
        and words[0] in ("A", "An")
        and name != title
        and not (dot and owner not in sections and not owner[:1].isupper())
    ):
        # the subject's words: up to a relative pronoun or a comma ("An instance of this class
        # represents ..." has its verb after four words; "A ... that does" is a noun phrase)
        head: list[str] = []
        for w in text.split()[1:8]:
            if w.lower() in ("that", "which", "who", "whose", "where"):
                break
            head.append(w.strip(",;:.").lower())
            if w.endswith((",", ";", ":")):
                break
        if (
            _member.lower() not in head
            and name.lower() not in head
            and not any(lexicon.third_person(w) == w and "NOUN" not in lexicon.lemmas(w) for w in head)
        ):
            # "An abstract method that ...", not "An SSLContext holds ..." (a sentence with a verb)
            tokens = text.split(" ")
            modal = next((i for i in range(2, min(len(tokens), 5)) if tokens[i] in _MODAL_VERBS), None)
            if modal is not None and all(
                t.isalpha() and t.lower() not in _NOUN_PHRASE_NEXT and t.lower() not in ("that", "which", "who")
                for t in tokens[1:modal]
            ):
                # "A wildcard pattern can match ...": the noun phrase has its own verb; the join
                # needs "that" ("`X` is a wildcard pattern that can match ...")
                tokens.insert(modal, "that")
            return f"`{name}` is {words[0].lower()} {' '.join(tokens[1:])}"
        return text
    if len(words) < 2 or not words[0].isalpha() or not words[0][0].isupper():
        return text
    second = words[1].split(" ", 1)[0] if len(words) > 1 else ""
    if not module and "NOUN" in lexicon.lemmas(words[0]) and second.isalpha() and second not in _OBJECT_OPENERS:
        # "Access frequency threshold for ...": outside a module's reference a noun before a
        # noun is a noun phrase, not "accesses frequency threshold"
        if "NOUN" in lexicon.lemmas(second.lower()) or not lexicon.lemmas(second.lower()):
            return text
    like = _LIKE_BUT.match(text)
    if words[0].lower() in _NOT_INSTRUCTIONS and like is None:
        return text
    adverb = ""
    if (
        len(words) > 2
        and words[0].endswith("ly")
        and set(lexicon.lemmas(words[0])) == {"ADV"}
        and words[1].isalpha()
        and set(lexicon.lemmas(words[1])) == {"VERB"}
    ):
        # "Recursively remove an entire directory tree.": the instruction is the second word
        adverb, words = words[0].lower() + " ", [words[1].capitalize(), *words[2].split(" ", 1)]
        text = " ".join(words)
    passive = (
        like is None
        and words[0].endswith("ed")
        and lexicon.inflected_verb(words[0])
        and words[1].lower() in _PASSIVE_NEXT
    )
    if passive:
        verb = "is " + words[0].lower()  # "Called when ...": "`X` is a method of `Y` that is called when ..."
    else:
        verb = lexicon.third_person(words[0]) if like is None else ""
    if verb is None:
        return text
    if name == title:
        kind = "module"
    elif dot and (owner[:1].isupper() or owner in sections):
        kind = "method"
    elif dot:
        return text  # "os.path.join": a module's function, already written with its module
    else:
        kind = "class" if name[0].isupper() and not name.isupper() and "_" not in name else "function"
    if like is not None:
        # "Like call_later(), but uses ...": the comparison joins as an aside of its own
        # ("`X` is a method of `Y`, like `call_later()`, but uses ..."); a code name is put in a
        # code span, other words stay as written
        other = like.group(1)
        other = f"`{other}`" if _IDENT.match(other) and not other.startswith("`") else other
        return f"`{name}` is {_kind_phrase(kind, module, owner)}, like {other}, but {like.group(2)}"
    if (
        len(words) > 2
        and "NOUN" in lexicon.lemmas(words[0])
        and re.fullmatch(_KIND_NOUNS, words[1])
        and words[2].split(" ", 1)[0].lower() in _NOUN_PHRASE_NEXT
    ):
        # "Hook method for deconstructing ...": a noun phrase naming its kind, not "hooks method"
        article = "an" if words[0][0].lower() in "aeiou" else "a"
        return f"`{name}` is {article} {words[0].lower()} {words[1]} {words[2]}"
    if passive:
        pass
    elif (
        "ADJ" in lexicon.lemmas(words[0])
        and words[1] not in _OBJECT_OPENERS
        and (len(words) < 3 or words[2].split(" ", 1)[0].lower() in _NOUN_PHRASE_NEXT)
    ):
        return text  # "Fast version of a heappush ...": adjective, noun, "of": a noun phrase
    elif "NOUN" in lexicon.lemmas(words[0]) and (
        (words[1].lower() in _NOUN_PHRASE_NEXT and not (kind in ("method", "function") and words[1] == "to"))
        or (kind in ("module", "class") and words[1] not in _OBJECT_OPENERS)
    ):
        # "Stuff to parse", "Heap queue algorithm": a noun may open a module's or a class's
        # docstring; a function's opens with what it does ("Set color options of ...")
        return text
    if passive and kind == "class" and name.endswith(("Error", "Exception", "Warning")):
        kind = "exception"  # "Raised by strict parsers when ...": a class raised is an exception
    rest = text.split(" ", 1)[1] if passive else _AND_VERB.sub(_and_third_person, text.split(" ", 1)[1])
    if kind == "function" and (name.isupper() or not module):
        # STRSET_GET, AUTOFS_DEV_IOCTL_TIMEOUT_CMD: a constant, a command or a message type, which
        # the heading does not say; "is a function" would be wrong, so the name is the bare subject.
        # So is panic_on_oops in a sysctl list: outside a module's reference a lower-case name
        # may be a setting, a file or a parameter as well as a function
        return f"`{name}` {adverb}{verb} {rest}"
    subject = _kind_phrase(kind, module, owner)
    return f"`{name}` is {subject} that {adverb}{verb} {rest}"


#: Words after an opening participle that make a docstring passive ("Called when ...", "Raised by ...").
_PASSIVE_NEXT = frozenset("when whenever by if after before once on for from".split())
#: What a code name's docstring may call it after a noun ("Hook method for ...", "Helper function to ...").
_KIND_NOUNS = r"(?:method|function|class|routine|callback|hook|wrapper|helper|coroutine)"
#: "Like call_later(), but uses an absolute time.": (what it is like, the rest after "but").
_LIKE_BUT = re.compile(r"^Like\s+([^,]{1,60}),\s+but\s+(\S.*)$")


def _kind_phrase(kind: str, module: str, owner: str) -> str:
    """ "a method of `mod.Owner`", "a module", "a function of `mod`": what a code name is. Code
    spans: the cross-linker leaves them alone, so "idlelib" inside the name gets no link."""
    if kind == "method":
        return f"a method of `{module + '.' if module else ''}{owner}`"
    if kind == "module":
        return "a module"
    article = "an" if kind[0] in "aeiou" else "a"
    return f"{article} {kind} of `{module}`" if module else f"{article} {kind}"


#: The verb after a coordinating "and"/"or" in an instruction ("... and apply tags", "... or
#: raise ValueError") and the word after it: put in the third person like the first verb.
_AND_VERB = re.compile(r"(?:(?<=\sand\s)|(?<=\sor\s))([a-z]+)\b(?=(?:\s+(\S+))?)")


def _and_third_person(m: re.Match[str]) -> str:
    """The verb after "and"/"or" in an instruction put in the third person with the first
    ("evaluate text and apply tags" -> "... and applies tags"; "return it or raise ValueError" ->
    "... or raises ValueError"). A word that may be a noun is a verb only before an object's
    determiner or a capitalised name ("or raise ValueError", not "keys and values")."""
    word, following = m.group(1), m.group(2) or ""
    pos = lexicon.lemmas(word)
    if "VERB" not in pos or word not in pos["VERB"]:
        return word
    if set(pos) != {"VERB"} and not (following in _OBJECT_OPENERS or following[:1].isupper()):
        return word
    return lexicon.third_person(word) or word


def _whole_sentence(text: str) -> bool:
    """Whether ``text`` quotes as a sentence of its own: it ends like one and opens with a capital,
    a digit, a quote or a code name ("kmalloc() returns ..."), not with a fragment's "[ch] spit
    out by" or "| LWPCookieJar", nor a table row's "filename Specifies ..."."""
    if has_cjk(text):
        return True
    if not _SENTENCE_END.search(text) or re.search(r"\s\S?[.!?]$", text):
        return False  # "... abs(), ==, and !": a sentence splitter's cut, not an end
    first = text.split(" ", 1)[0]
    if text[0].isupper() or text[0].isdigit() or text[0] in "\"'(\u201c`":
        return True
    if re.match(r"\S+\s+[A-Z][a-z]+\s", text):
        return False  # "filename Specifies that ...": a parameter table's row, its key glued to the text
    if re.match(r"[\w.]+\s+[-\u2013\u2014]\s+[A-Z]", text):
        return False  # "key_hash - A hash of the index key.": a list's entry, its key and a dash
    return text[0].isalpha() and (not first.isalpha() or not lexicon.dictionary_word(first))


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


# --- items --------------------------------------------------------------------------------------


_NOUNS = (
    r"module|package|library|class|function|method|macro|type|object|structure|struct|interface|"
    r"api|driver|subsystem|framework|tool|command|option|flag|flags|protocol|format|file|service|"
    r"system|project|language|standard|variable|constant|attribute|field|parameter|call"
)
# What may follow the name in a definitional sentence: "X (...)", "X, the ...,", "X module", then a verb.
_DEFINES = re.compile(
    rf"^(?:\s*\([^)]{{0,80}}\))?(?:\s*,[^,]{{1,80}},)?(?:\s+(?:{_NOUNS}))?\s+(?:{_VERBS})\b",
    re.IGNORECASE,
)
# The strongest definitions: "X is a/an/the/one ...", "X refers to", "X, the ..., ..." (apposition).
_DEFINES_WHAT = re.compile(
    rf"^(?:\s*\([^)]{{0,80}}\))?(?:\s+(?:{_NOUNS}))?(?:\s+(?:is|are|was|were)\s+(?:a|an|the|one|any)\s"
    rf"|\s+(?:refers to(?!\s+(?:all|every|each|them|it|its|a\s+\w+\s+via)\b)|means|stands for|consists of|is used"
    rf"|are used|(?:is|are)\s+defined\s+as)\b"
    rf"|\s*,\s+(?:a|an|the)\s[^,]{{1,80}},)",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:(?:The|A|An|Each|Every)\s+)?", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?。！？][\"')\u201d」』）]*$")
_MODAL_VERBS = frozenset("can may must should will would could might".split())
_MODALS = _MODAL_VERBS | frozenset("does do has have".split())
#: Modals of a rule: "X should/must/shall ..." says what a caller has to do with X.
_RULE_MODALS = frozenset("should must shall".split())
#: What follows a purpose participle when it says what X is for ("used to", "designed for", "meant as").
_FOR_WHAT = re.compile(r"\s+(?:to|for|as|when|in\s+order\s+to)\b")
# Words that follow a verb but rarely a noun: "the method checks whether", "photons travel the".
_AFTER_VERB = frozenset(
    "the a an this that these those its it their them his her our your whether if how what which "
    "who each every all any some no not also only both either".split()
)

#: A page must earn its place (docs/decisions.md): an item is kept when its document defines it
#: (lead rank >= 2, "X is a ..."/"X provides ..."), or says something with it as the subject
#: (rank 1) in one of at least ``MIN_MENTIONS`` sentences. A name seen in one sentence and never
#: defined stays a phrase of its summary. A concept needs rank 2 (a lone word rank 3): a phrase
#: the text only uses ("the modification time is set to ...") says nothing a page could lead with.
MIN_MENTIONS = 2


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


def _needles(forms: list[str], concept: bool) -> list[str]:
    """Search strings for a name: case-folded with plural variants for concepts, exact for entities."""
    if not concept:
        return sorted(set(forms), key=lambda f: (-len(f), f))
    out: set[str] = set()
    for form in forms:
        low = form.lower()
        out.update({low, low + "s", low + "es"} if not has_cjk(low) else {low})
    return sorted(out, key=lambda f: (-len(f), f))


def _mentions(needles: list[str], concept: bool, sentences: list[_Sentence], lowered: list[str]) -> list[_Sentence]:
    out = []
    for sentence, low in zip(sentences, lowered):
        if _find(low if concept else sentence.text, needles):
            out.append(sentence)
    return out


def _continues(needle: str, after: str) -> bool:
    """Whether the words ``after`` a concept's name make a longer noun phrase the sentence is about:
    a kind noun ("configuration file") or, after a singular name, a noun that cannot be its verb
    ("kernel memory support is ..."; "cpusets provide ..." is a verb after a plural)."""
    m = _NEXT_WORD.match(after.lower())
    if m is None:
        return False
    word = m.group(1)
    if re.fullmatch(_NOUNS, word):
        return True
    if word in _MODALS or word in ("is", "are", "was", "were") or word.endswith("s") or needle.endswith("s"):
        return False
    return "NOUN" in lexicon.lemmas(word)


#: A caveat or a restriction: what X must not, cannot or can only do, what one has to do with it,
#: or that it is deprecated ("LIRC_MODE_PULSE can only be used for transmitting", "Realtime group
#: scheduling means you have to assign ...": the linux-doc judges failed such leads).
_CAVEAT = re.compile(
    r"(?i)\b(?:should|must|may|can|could|do|does|need)\s+not\b|\b(?:cannot|never|deprecated)\b|n't\b"
    r"|\b(?:can|may|must|could)\s+only\b|\bonly\s+be\b|\b(?:have|has|need|needs)\s+to\b"
    # when or how a caller may use it: "free_netdev() can be called after unregister_netdev() returns"
    r"|\b(?:can|may|must|should)\s+be\s+(?:called|invoked|used)\s+"
    r"(?:after|before|when|whenever|from|within|only|if|once|while|during|at|on|under)\b"
)
#: "X is a complex system with many settings", "X are good examples to understand ...", "X is a
#: popular way": a judgement of X with a generic noun, which tells a reader nothing of what X is
#: (the linux-doc judges failed "linux memory management" and "tiny DRM drivers" on such leads).
_JUDGEMENT = re.compile(
    r"^\s+(?:is|are)\s+(?:a\s+|an\s+)?(?:very\s+|quite\s+|rather\s+|fairly\s+|really\s+)?"
    r"(?:complex|complicated|simple|powerful|good|great|nice|useful|important|popular|common|interesting"
    r"|tricky|difficult|easy|flexible|convenient|handy|best|better|excellent|perfect|possible|natural)\s+"
    r"(?:system|thing|way|piece|example|tool|feature|topic|area|subject|part|approach|idea|one|choice"
    r"|place|start|starting|alternative|option|solution|replacement|addition)s?\b"
    # "The LM96080 is a more recent incarnation, ...", "SMBus is a sibling protocol": of what, the
    # sentence does not say
    r"|^\s+(?:is|are)\s+(?:a|an)\s+(?:more\s+recent|newer|older|later|earlier|sibling|similar|related)\s+"
    r"(?:incarnation|version|variant|revision|protocol|chip|device|model|part)s?\b(?!\s+(?:of|to)\b)"
)


def _lead_rank(needles: list[str], concept: bool, text: str) -> int:
    """How well sentence ``text`` says what the item is: 3 "X is a ...", "X is defined as ...",
    "X, the ..., ...", "X refers to ..."; 2 "X provides/implements/... ..."; 1 X is the subject of
    another verb ("X returns ...", "X can ..."); 0 otherwise or when the sentence is incomplete.

    A circular sentence, repeating the name after it ("opcode is an OpcodeInfo record, describing
    the current opcode"), says nothing of what X is: rank 1 at most. A sentence of rank 1 or 2
    carrying a caveat ("A Parser instance contains state ... and should not be used concurrently",
    "X can only be used for ...") ranks 0: a warning about X, not what it is or does."""
    if text.rstrip().endswith(("?", "\uff1f")):
        return 0  # "Does the subsystem use a patchwork instance?": a checklist's question
    rank = _subject_rank(needles, concept, text)
    if rank >= 2:
        start = _ARTICLE.match(text).end()
        rest = (text.lower() if concept else text)[start:]
        needle = next((n for n in needles if rest.startswith(n)), "")
        if needle and _find(rest[len(needle) :], [needle.lower() if concept else needle]):
            return 1
        if needle and _names_itself(needle, rest[len(needle) :]):
            return 0  # "attach_type is the program's attach type.": the name's own words, nothing more
        if needle and _JUDGEMENT.match(rest[len(needle) :].removeprefix("()")):
            return 1
        if concept and needle and not has_cjk(text):
            rank = min(rank, _general_definition_rank(text[start + len(needle) :]))
            singular = re.match(r"\s+is\b", rest[len(needle) :])
            if " " not in needle and singular and text[:start].strip().lower() == "the":
                # "The parameter is the value to be added", "The measurement is a signature of
                # ...": one word with "the" is the one this passage means, not the general term
                # (the linux-doc judge failed both titles as generic words); a plural ("The
                # photons are ...") speaks of the kind
                rank = min(rank, 2)
    if rank in (1, 2) and _CAVEAT.search(text):
        return 0
    if rank >= 1 and _POINTS_ELSEWHERE.search(text):
        return 0  # "... as described in the next section": what X is, another part of the document says
    if rank >= 1 and _POINTS_BACK.search(text):
        return rank - 1  # "... the most popular way to do it": "it" is another sentence's
    if rank <= 2 and _DEMONSTRATIVE.search(text):
        return 0  # "iomap adds more to this mix.", "X returns this on ...": another sentence says what
    return rank


#: A sentence that hands the reader to another part of its document ("the following parameters",
#: "as described in the next section", "listed below"): quoted alone, that part is not there (the
#: linux-doc judge failed "mount trap" and "mv88e6xxx" on such leads).
_POINTS_ELSEWHERE = re.compile(
    r"(?i)\b(?:the\s+following|as\s+follows|(?:next|previous|following|later)\s+(?:section|chapter|paragraph)s?"
    r"|(?:described|shown|listed|explained|given)\s+(?:below|above|later)|see\s+(?:below|above))\b"
)


def _names_itself(needle: str, after: str) -> bool:
    """Whether ``after`` (the words after the name) is only "is/are the/a <someone's> <the name's
    own words>": "attach_type is the program's attach type." defines nothing."""
    m = re.match(r"^\s+(?:is|are)\s+(?:a|an|the)\s+(?:[\w-]+'s\s+)?([\w\s-]+?)\s*[.!?]?$", after)
    if m is None:
        return False
    words = re.sub(r"[_\-\s]+", " ", needle).lower().split()
    return m.group(1).lower().split() == words


#: A definite or indefinite noun phrase after "is/are": the predicate of "X is a/the ...".
_PREDICATE = re.compile(r"^\s+(?:is|are)\s+(a|an|the|one)\s+((?:[\w-]+\s+){0,3}?[\w-]+)(?:\s+(\S+)(?:\s+(\S+))?)?")
#: An object pronoun closing a clause ("the simplest way to do it, but ..."): what it stands
#: for is in another sentence, so quoted as a lead it says nothing.
_POINTS_BACK = re.compile(r"\b(?:do|does|did|doing|use|using|with|to|of|about|for)\s+(?:it|this|that|them)\s*[,.;:!?)]")


#: "are buttons added dynamically using the add method": the predicate is what one named call
#: makes, so the "definition" holds for that one use only.
_ONE_INSTANCE = re.compile(
    r"^\s+(?:is|are)\s+(?:(?:a|an|the)\s+)?(?:[\w-]+\s+){1,3}?[a-z]+ed\b(?:\s+[a-z]+ly)?\s+"
    r"(?:with|using|by|via|through|from)\s+(?:the\s+\w+\s+(?:method|function|call|command|class)\b|`?\w+\(\))"
)


def _general_definition_rank(after: str) -> int:
    """How generally the words ``after`` a concept's name define it, capping ``_lead_rank``: 3
    for "is a/an <noun> ...", "is defined as", "refers to", "X, a <noun>, ..."; 2 for what is
    weaker than a definition, "consists of ..." (its parts), "is one of ..." or what one named
    call makes ("Subwidgets are the buttons added with the add method": the particular ones this
    document means), while "Parallax is the apparent shift of ..." defines; 1 for a
    definition scoped to a named case ("Conjugate is a no-op for Reals": a property of X for
    Reals) and for an appositive naming one instance ("The base class, addbase, defines ...":
    about addbase, not base classes)."""
    if re.match(r"\s*,\s+(?!(?:a|an|the)\s)", after):
        return 1
    if _ONE_INSTANCE.match(after) or re.search(r"\b(?:this|these|those)\s+[a-z]", after):
        return 2  # "The DFA number is the index into this list": which list, another sentence says
    if re.match(r"\s+consists?\s+of\b", after, re.IGNORECASE):
        return 2
    if re.match(r"\s+(?:is|are)\s+a\s+(?:little|lot|bit|few|couple)\b", after):
        return 1  # "Maximum filesystem size is a little over 256MB.": a quantity, not what it is
    m = _PREDICATE.match(after)
    if m is None:
        return 3
    following, then = m.group(3) or "", m.group(4) or ""
    if following.lower() in ("for", "in", "on", "with") and then[:1].isupper():
        return 1
    if m.group(1) == "one" and following == "of":
        return 2  # "X is one of <, <=, ...": a member of a list, not what X is
    return 3


def _subject_rank(needles: list[str], concept: bool, text: str) -> int:
    """``_lead_rank`` before the circularity and caveat checks."""
    if len(text) > DESCRIPTION_CHARS or not _SENTENCE_END.search(text):
        return 0
    if has_cjk(text):
        return max((cjk.definition_rank(n, text) for n in needles), default=0) * 3 // 2
    if len(text.split()) < 4:
        return 0
    rest = text[_ARTICLE.match(text).end() :]
    probe = rest.lower() if concept else rest
    best = 0
    for needle in needles:
        if not probe.startswith(needle) or not _bounded(probe, 0, len(needle)):
            continue
        after = rest[len(needle) :]
        if not concept:
            after = after.removeprefix("()")  # "kmalloc() returns ...": the call is the name
        if concept and _continues(needle, after):
            continue  # "A configuration file consists of" is about the file, not "configuration"
        named = not concept and not _code_like(needle)
        if named and _PART_OF_NAMED.match(after):
            continue  # "The Ethernet driver is bound to ...": about a driver, not about Ethernet
        kind = None if concept else _KIND_NOUN.match(after)
        if kind:
            after = after[kind.end() :]  # "The DSA framework is not involved ...": as "DSA is not ..."
        if _COMPARES.match(after) or _CONTRAST.match(after):
            continue  # "Enhanced IBRS is more efficient than retpoline", "SIOV, in contrast, ...": X beside Y
        if _REQUIREMENT.match(after):
            continue  # "GITS_CREADR must be restored before ...": a rule about X, not what X is
        if not needle.endswith("s") and _BASE_VERB.match(after):
            continue  # "Debugfs support, to check ...": a noun phrase; a singular X "supports"
        if _DEFINES_WHAT.match(after):
            return 3
        plural = re.match(r"\s+are\s+([a-z-]+)(?:\s+([a-z]+))?\b", after)
        if plural and (lexicon.plural_noun(plural.group(1)) or lexicon.plural_noun(plural.group(2) or "")):
            return 3  # "Photons are particles of light", "Rotary encoders are small devices"
        passive = re.match(r"\s+(?:is|are|was|were)\s+(?:not\b|(?:[a-z]+ly\s+)?([a-z]+))", after)
        if passive and (
            passive.group(1) is None or passive.group(1).endswith("ed") or lexicon.inflected_verb(passive.group(1))
        ):
            # "X is set to ...", "X are rarely used", "X is not ...": what happens to X, not what it is.
            # Only "X is used/designed/meant to ..." says what X is for; a lead like "X is interrupted
            # by ..." or "The GIL is not released" tells one event or caveat, so it ranks 0 and another
            # sentence leads the page, or there is no page
            # "used to/for/as" says what X is for; "is only used by custom drivers" who uses it
            purpose = passive.group(1) in _PURPOSE_PARTICIPLES and bool(_FOR_WHAT.match(after[passive.end() :]))
            best = max(best, 1 if concept or purpose else 0)
        elif re.match(r"\s*(?:\([^)]{0,80}\)\s*)?(?:is|are|was|were)\b", after):
            # "UUID objects are immutable", "The special characters are:": a property, not a definition;
            # of a named thing that is no code ("HPET is quite complex", "IOMMU is also required ..."),
            # it tells a reader who does not know the thing nothing at all
            if not _JUST_ADJECTIVE.match(after):  # "walk_component() is even easier.": no more than a quality
                best = max(best, 1 if concept or _code_like(needle) else 0)
        elif _DEFINES.match(after) and not re.match(r"\s+[a-z]+\s+(?:for|of|in|on|with|to)\b", after):
            if named and _PROPERTY_VERB.match(after):
                continue  # "Hyper-V supports receive side scaling": one property of a named thing
            best = 2  # "Weak reference support for Python" is a noun phrase, not "X supports"
        else:
            follow = re.match(r"\s*(?:\([^)]{1,80}\)\s*)?([A-Za-z]+)(?:\s+([A-Za-z]+))?", after)
            word = follow.group(1).lower() if follow else ""
            then = (follow.group(2) or "").lower() if follow else ""
            pos = lexicon.lemmas(word)
            # "X returns the ..." is a verb; "Configuration functions for ..." a plural noun.
            verb = word.endswith("s") and "VERB" in pos and ("NOUN" not in pos or then in _AFTER_VERB)
            if word in _RULE_MODALS:
                continue  # "sev_fd should point to ...": a rule for the caller, not what sev_fd is
            if (verb or word in _MODALS) and (concept or _code_like(needle)):
                # "kmalloc returns ...": what code does is what it is. Of a named thing that is no
                # code, "The TMP108 has ...", "Andrew Morton has suggested ...", "The BHB can still
                # influence ..." tell what it has, did or may do, never what it is
                best = max(best, 1)
    return best


def _module_title(title: str) -> str:
    """``title`` when it names a module ("shutil", "importlib.abc"), else "": a document titled
    "Introduction" is no module its names belong to."""
    return title if _IDENT.match(title) and " " not in title and not title[:1].isupper() else ""


def _code_like(name: str) -> bool:
    """Whether ``name`` is written like code (``nr_to_reclaim``, ``kmalloc()``, ``Queue.get``,
    ``setEncoding``): what it does is what it is. An acronym or a proper name (HPET, IOMMU) is not."""
    return bool(re.search(r"[_.()]|[a-z][A-Z]", name)) or (name[:1].islower() and _IDENT.match(name) is not None)


#: "X is more efficient than Y", "X is the same as Y", "X is being implemented", "X is still/now
#: ...": a comparison or a status of X, which tells a reader who does not know X nothing of what
#: it is (the linux-doc judge failed "Enhanced IBRS", "V4L2" and "IIC hardware" on such leads).
_COMPARES = re.compile(
    r"^\s+(?:is|are)\s+(?:not\s+)?(?:[a-z]+ly\s+)?(?:(?:the\s+)?same\s+as\b|similar\s+to\b|identical\s+to\b|being\b"
    r"|still\b|now\b|currently\b|(?:much\s+|far\s+)?(?:more|less|[a-z]{2,}er)\s+(?:[a-z-]+\s+){0,2}?than\b"
    r"|(?:even\s+|much\s+|far\s+)?(?:easier|harder|simpler|faster|slower|better|worse|cheaper|safer)\b"
    r"|(?:by\s+far\s+)?the\s+(?:most|least|best|worst|simplest|easiest|fastest|slowest|largest|smallest|biggest"
    r"|highest|lowest|greatest|preferred|recommended)\b)",
    re.IGNORECASE,
)

#: Kind nouns after a name that is no code which make the sentence about a part of the named
#: thing or a thing for it ("the Ethernet driver", "the CTI interface", "the USB subsystem"); after
#: a code name they name the thing itself ("the e1000 driver", "the KF_KPTR_GET flag"), and
#: "the Python language" or "the Rust project" is the thing itself either way.
_PART_OF_NAMED = re.compile(
    r"\s+(?:driver|drivers|subsystem|interface|api|module|file|service|system|command|option|flag|flags|"
    r"attribute|field|parameter|call|structure|struct|object|type|class|function|method|macro|variable|"
    r"constant|support|core|layer|stack|code|device|devices|controller|port|bus|header|tree|node)\b",
    re.IGNORECASE,
)
#: A defining verb in its base form right after a singular name: the name is a modifier
#: ("Debugfs support", "DMA control"), not the subject of the verb.
_BASE_VERB = re.compile(
    r"\s+(?:provide|implement|represent|contain|define|describe|allow|enable|manage|handle|store|hold|"
    r"offer|support|return|create|control)\b"
)
#: Verbs whose "X <verb>s ..." of a named thing that is no code tells one property, not what it is
#: ("Hyper-V supports receive side scaling", "The TMP108 contains ..."); of code ("kmalloc
#: returns ...") what it does is what it is.
_PROPERTY_VERB = re.compile(
    r"\s+(?:\([^)]{0,80}\)\s*)?(?:supports|contains|holds|stores|handles|gives|returns|creates)\b", re.IGNORECASE
)

#: "X is (even) easier.", "X are quite generic": after "is/are" only an adjective, maybe with an
#: adverb and a short complement: a quality of X, never what X is.
_JUST_ADJECTIVE = re.compile(
    r"^\s*(?:\([^)]{0,80}\)\s*)?(?:is|are|was|were)\s+(?:(?:very|quite|rather|fairly|pretty|even|much|so|too|"
    r"also|really|extremely|relatively)\s+)*[a-z-]+(?:\s+(?:to|for|with|in)\s+\w+)?\s*[.!]?$"
)
#: A demonstrative noun phrase ("this mix", "these cases"): the sentence leans on another one.
_DEMONSTRATIVE = re.compile(
    r"\b(?:this|these|those|such)\s+[a-z]|\b(?:this|that)\s+(?:on|in|for|when|if|to|with|by|as|from)\b"
    r"|\b(?:here|above|below)\s*[,.;]"
)

#: "X, in contrast, ...", "X, however, ...": the sentence reads only beside the one before it.
_CONTRAST = re.compile(
    r"^\s*,\s*(?:in\s+contrast|by\s+contrast|however|instead|on\s+the\s+other\s+hand|too|also|likewise"
    r"|similarly|though|then|in\s+turn)\b",
    re.IGNORECASE,
)
#: A kind noun after an entity's name ("the DSA framework", "the SMB3 protocol"): the sentence is
#: about the named thing, read on after the noun.
_KIND_NOUN = re.compile(rf"\s+(?:{_NOUNS})\b(?!\s*,)", re.IGNORECASE)
#: "X must be restored ...", "X (bit 0) should be initialised ...", "X has been called on ...": what
#: must happen or has happened to X (a rule or an error case), never what X is; "X can be used
#: to ..." says what it is for and stays.
_REQUIREMENT = re.compile(
    r"^\s*(?:\([^)]{0,80}\)\s*)?(?:must|should|shall|has|have|had|needs?\s+to)\s+(?:not\s+|also\s+|only\s+)?"
    r"(?:be|been)\s+(?!used\b|designed\b|meant\b|intended\b)(?:[a-z]+ly\s+)?[a-z]+(?:ed|en|wn|ne)\b"
)

#: Participles after "X is" that say what X is for ("X is used to package widgets").
#: "implemented" and "based" say how X is built ("URD is implemented using the same code as RND"),
#: not what it is: the v12 linux-doc judge failed such a lead.
_PURPOSE_PARTICIPLES = frozenset("used designed meant intended defined".split())


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


def _describe(concept: bool, needles: list[str], mentions: list[_Sentence]) -> tuple[str, int]:
    """(lead sentence, rank): the best-ranked sentence (``_lead_rank``) among ``mentions``, the
    first of equals; else ("", 0). Never a made-up placeholder such as "X is a function.": an
    item no sentence describes is not a page (it stays a mention of its summary)."""
    best, rank = "", 0
    for sentence in mentions:
        r = _lead_rank(needles, concept, sentence.text)
        if r > rank:
            best, rank = sentence.text, r
            if r == 3:
                break
    return best, rank


#: A sentence opening with a pronoun or demonstrative that points back at an earlier sentence.
_UNRESOLVED = re.compile(
    r"^(?:This|That|These|Those|It|Its|They|Their|Them|Such)\b(?!\s+(?:is|are)\s+(?:a|an|the)\s+\w+\s+(?:of|for)\b)"
)


def _evidence(mentions: list[_Sentence], lead: str) -> list[str]:
    """Up to 3 mentions quoted whole (never cut): the lead first when it is one of them, then
    sentences of at most ``EVIDENCE_CHARS``, then of at most ``MAX_QUOTE_CHARS``."""
    out: list[str] = [lead] if any(s.text == lead for s in mentions) else []
    for limit in (EVIDENCE_CHARS, MAX_QUOTE_CHARS):
        for sentence in mentions:
            text = sentence.text
            if len(out) == 3:
                return out
            if (len(text.split()) < 4 and not has_cjk(text)) or text in out or len(text) > limit:
                continue
            if _UNRESOLVED.match(text) or not _whole_sentence(text):
                continue  # "This is similar to ...": quoted alone, nobody knows what "this" is
            out.append(text)
    if not out:
        out = [s.text for s in mentions if len(s.text) <= EVIDENCE_CHARS and _whole_sentence(s.text)][:1]
    return out


def _aliases(name: str, forms: list[str]) -> list[str]:
    """The other names of ``name`` among ``forms``. A plain dictionary word is not an alias of a
    code name ("generator" of ``email.generator``): every page saying "generator" would link it."""
    out: list[str] = []
    code = any(c in name for c in "._")
    for form in forms:
        clean = validate_item_name(form)
        if not clean or clean == name or clean in out:
            continue
        if code and clean.isalpha() and lexicon.dictionary_word(clean):
            continue
        out.append(clean)
    return out[:MAX_ALIASES]


def _overlaps(a: str, b: str) -> bool:
    """Whether one phrase is a whole-word part of the other ("json object" / "json object decoding")."""
    short, long = sorted((a, b), key=len)
    return _find(long, [short])


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
    verbal = sum(w in _AFTER_VERB or w.endswith("ly") for w in follows)
    return bool(follows) and 2 * verbal >= len(follows)


#: Words a docstring opens a line with before the thing it describes ("Optional timeout is ...",
#: "Returns the default timer"): never the first word of a concept's name.
_DOCSTRING_OPENERS = frozenset(
    "optional required returns return default deprecated note param parameter parameters argument "
    "arguments arg args keyword raises yields".split()
)


_PARAMETER_NOUNS = r"(?:argument|parameter|flag|keyword|option)s?"
_VALUE_NOUNS = r"(?:optional\s+)?(?:flag|argument|parameter|boolean|bool|integer|int|string|str|number|callable)"


_TYPE_NOUNS = r"(?:str|int|bool|float|bytes|tuple|list|dict|set|callable|string|integer|boolean|number)"
_PARAMETER_LEAD = re.compile(
    rf"^(?:The\s+)?[^,]{{1,60}}?\s+(?:is|are)\s+(?:(?:a|an|the|one)\s+(?:[\w-]+\s+){{0,4}}?"
    rf"{_PARAMETER_NOUNS}\b|(?:a|an|the)\s+(?:optional\s+)?{_TYPE_NOUNS}\b)"
)


#: A lead saying what an argument carries: "FUNC gives the function ...", "MS specifies the time".
_PLACEHOLDER_LEAD = re.compile(r"^[A-Z]+\s+(?:gives|specifies|determines|names)\s+(?:the|a|an)\s")


def _describes_parameter(lead: str) -> bool:
    """Whether a concept's lead describes a parameter or return value of a function, not an idea:
    it opens with the name in lower case, as only code names open an English sentence ("alpha is
    the shape parameter.", "charset is the input character set"), or it calls the thing a
    parameter or a value of a type ("The fullname is a str")."""
    return (lead[:1].islower() and not has_cjk(lead)) or _PARAMETER_LEAD.match(lead) is not None


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


#: Adjectives that point at one occurrence, not at a kind of thing: a phrase opening with one
#: ("previous data", "current setting", "given value") names nothing outside its sentence.
_DEICTIC = frozenset(
    "previous next current new old other same following above below given certain various different "
    "specific particular several many further additional whole entire actual respective corresponding "
    "appropriate relevant proper former latter last".split()
)


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
    while len(words) > 1 and words[0].lower() in _DOCSTRING_OPENERS:
        words = words[1:]  # "Optional headersonly is a flag": the docstring's word, not the name's
        if len(words) == 1 and not lexicon.dictionary_word(words[0]):
            return None  # what such a word introduces, when no dictionary has it, is a parameter
    if any(len(w) < 2 for w in words):
        return None
    if any(not re.fullmatch(r"[A-Za-z][A-Za-z0-9'-]*", w) for w in words):
        return None
    if any(is_stopword(w) for w in words):
        return None
    if words[0].lower() in _DEICTIC:
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


def _spellings(name: str, sentences: list[str]) -> list[tuple[str, bool]]:
    """(spelling, inside a sentence) of every whole-word occurrence of ``name`` in ``sentences``,
    any case ("Photons" opening a sentence is (Photons, False))."""
    out: list[tuple[str, bool]] = []
    low = name.lower()
    for text in sentences:
        lowered = text.lower()
        if len(lowered) != len(text):
            continue  # a case mapping that changes lengths would shift the offsets
        for start in _occurrences(lowered, low):
            if _bounded(lowered, start, start + len(low)):
                out.append((text[start : start + len(low)], bool(text[:start].strip())))
    return out


def _proper_form(name: str, sentences: list[str]) -> str | None:
    """The one spelling of phrase ``name`` in ``sentences`` when it is a proper name: every word
    capitalised (not all capitals) at every occurrence, and for a single word at least one
    occurrence inside a sentence (a word opening a sentence is capitalised anyway). None
    otherwise ("photons" and "Photons", "page cache")."""
    found = _spellings(name, sentences)
    spellings = {spelling for spelling, _ in found}
    if len(spellings) != 1:
        return None
    form = spellings.pop()
    words = form.split()
    if not all(w[:1].isupper() and not w.isupper() for w in words):
        return None
    return form if len(words) > 1 or any(inside for _, inside in found) else None


def _surface_forms(name: str, sentences: list[str]) -> list[str]:
    """The spellings of ``name`` in ``sentences`` differing in case only ("Photons", "PHOTONS")."""
    return sorted({spelling for spelling, _ in _spellings(name, sentences)} - {name})


# --- the extractor ------------------------------------------------------------------------------


class OfflineExtractor:
    """Deterministic extractor built on ``pysbd``/``segtok`` sentences and ``yake`` keyphrases,
    the ``wiki.extract.lexicon`` word data, and ``wiki.extract.cjk`` for Chinese and Japanese.

    ``extract(title, text)`` analyses at most ``MAX_ANALYSED_CHARS`` (50,000) characters and
    returns at most ``MAX_ENTITIES`` (12) entities and ``MAX_CONCEPTS`` (12) concepts, each with a
    lead that says what it is and whole quoted sentences. About 90-130 ms for a 30 KB document on a
    2-core machine (yake is most of it). Raises ``ExtractionError`` when the text has no usable
    sentence.
    """

    name = "offline-v13"

    def extract(self, title: str, text: str) -> Extraction:
        """See the class docstring. ``title`` is used for ranking."""
        blocks, code, headings = _prose_blocks(text[:MAX_ANALYSED_CHARS])
        sentences = _sentences(blocks)
        usable = [s for s in sentences if _usable(s.text)]
        if not usable:
            raise ExtractionError("the document has no usable sentence")
        informative = [s for s in usable if _informative(s.text)] or usable[:1]
        summary = _shorten(informative[0].text, SUMMARY_CHARS)
        body = self._body(informative)
        items = self._items(title, sentences, code, headings)
        return Extraction(summary=summary, body=body, items=items)

    @staticmethod
    def _body(informative: list[_Sentence]) -> str:
        paragraphs: list[list[str]] = []
        block = None
        total = 0
        for sentence in informative:
            if sentence.block != block:
                if len(paragraphs) == BODY_PARAGRAPHS:
                    break
                paragraphs.append([])
                block = sentence.block
            if len(paragraphs[-1]) >= BODY_PARAGRAPH_SENTENCES:
                continue
            if total and total + len(sentence.text) > BODY_CHARS:
                break
            paragraphs[-1].append(_shorten(sentence.text, 500))
            total += len(sentence.text)
        # CJK sentences are written without a space between them.
        return "\n\n".join(re.sub(r"(?<=[。！？；」』）])\s+(?=\S)", "", " ".join(p)) for p in paragraphs if p)

    def _items(
        self, title: str, sentences: list[_Sentence], code: list[str], headings: dict[int, str]
    ) -> list[ExtractedItem]:
        lower_words, cap_words = _word_counts(sentences)
        entities = _Entities(lower_words, cap_words)
        defined = _heading_definitions(sentences, headings)
        sections = frozenset(h.strip().removesuffix("()") for h in headings.values())
        for name, sentence in defined.items():
            entities.add(name, sentence.start, 1.0)
        spans = Counter(span.strip() for span in code)
        for span in code:
            span = span.strip()
            name = _code_name(span, plain_ok=2 * spans[span] > lower_words[span])
            if name:
                entities.add(name.removesuffix("()"), len(sentences), 1.0)
        for sentence in sentences:
            entities.scan(sentence)
            entities.scan_expansions(sentence)
        lowered = [s.text.lower() for s in sentences]
        items: list[ExtractedItem] = []
        taken: set[str] = set()
        for name, cand in entities.ranked(title, len(sentences)):
            if len([i for i in items if i.kind == "entity"]) == MAX_ENTITIES:
                break
            forms = sorted(cand.forms)
            lead = _subject_lead(name, defined[name].text, title, sections) if name in defined else None
            # outside a module's reference, a definition list's entry ("The chunk size in KB ...",
            # "Gets netdev features like ...") gives the lead its predicate but is no sentence to
            # quote: the page needs a whole sentence about the name. A module's docstrings ("Return
            # the ...", "Base class for ...") are quoted as its reference gives them.
            entry = name in defined and lead != defined[name].text and not _module_title(title)
            quote = not (entry and _reference_entry(defined[name].text))
            item = self._item(name, "entity", forms, sentences, lowered, defined.get(name), lead, quote)
            if item:
                items.append(item)
                taken.update(f.casefold() for f in [name, *forms])
        self._cjk_items(items, taken, sentences, lowered)
        prose = "\n\n".join(s.text for s in sentences if not has_cjk(s.text))[:YAKE_CHARS]
        concepts = sum(i.kind == "concept" for i in items)
        singles = 0
        chosen: list[str] = []
        prose_low = prose.lower()
        taken.update(entities.expansions)
        multiword = sorted(t for t in taken if " " in t)
        for phrase, _score in _keyword_extractor().extract_keywords(prose) if prose else []:
            if concepts == MAX_CONCEPTS:
                break
            name = _concept_name(phrase, prose_low)
            if name is None or name.lower() in _NOT_NAMES:
                continue
            fold = name.casefold()
            if " " not in name:
                # Lone words are yake's weakest phrases: keep few, frequent, non-participles.
                if singles >= MAX_CONCEPTS // 2 or name.endswith("ed") or prose_low.count(name.lower()) < 3:
                    continue
            if any(_overlaps(fold, other) for other in chosen):
                continue
            if any(_find(entity, [fold]) for entity in multiword):
                continue  # "software foundation" is a piece of "Python Software Foundation"
            if any(w.casefold() in taken and not w.isupper() for w in phrase.split()):
                continue  # "Popen constructor" would lowercase the name of an entity
            if name != name.lower() and not _find(prose, [name]):
                continue  # acronym casing must be real: "KERNEL" inside GFP_KERNEL is not
            singular = fold[:-1] if fold.endswith("s") else fold
            if {fold, singular, fold + "s"} & taken:
                continue
            forms = [name] + ([name[:-1]] if name.endswith("s") else [name + "s"])
            proper = _proper_form(name, [s.text for s in sentences])
            if proper is not None and sum(i.kind == "entity" for i in items) < MAX_ENTITIES:
                # "Harbor Labs", "Kestrel" written capitalised wherever they appear: a proper name,
                # so an entity under its own spelling (yake hands phrases over in lower case)
                item = self._item(proper, "entity", [proper], sentences, lowered)
                if item:
                    items.append(item)
                    taken.update({fold, singular, fold + "s"})
                continue
            if proper is not None:
                continue
            item = self._item(name, "concept", forms, sentences, lowered)
            if item:
                items.append(item)
                concepts += 1
                singles += " " not in name
                chosen.append(fold)
                taken.update({fold, singular, fold + "s"})
        return items

    def _cjk_items(
        self, items: list[ExtractedItem], taken: set[str], sentences: list[_Sentence], lowered: list[str]
    ) -> None:
        """Add the Chinese/Japanese names of the CJK sentences (``cjk.names``) to ``items``."""
        texts = [s.text for s in sentences if has_cjk(s.text)]
        if not texts:
            return
        japanese = any(cjk.has_kana(t) for t in texts)
        counts = {"entity": sum(i.kind == "entity" for i in items), "concept": 0}
        limits = {"entity": MAX_ENTITIES, "concept": MAX_CONCEPTS}
        for name, kind, words, _first in cjk.names(texts, japanese):
            if counts[kind] >= limits[kind] or name.casefold() in taken:
                continue
            if (
                kind == "concept"
                and words == 1
                and not any(cjk.definition_rank(name, s.text) == 2 for s in sentences if name in s.text)
            ):
                continue  # a lone word ("函数", "function") is a page only where it is defined
            if words == 1 and lexicon.cjk_zipf(name, japanese) >= lexicon.CJK_COMMON_ZIPF:
                continue  # "返回值" (return value), "目標" (goal), "ユーザ" (user): too common to be one thing
            if any(name in other for other in taken if has_cjk(other)):
                continue  # a piece of a longer name already kept
            item = self._item(name, kind, [name], sentences, lowered)
            if item:
                items.append(item)
                counts[kind] += 1
                taken.add(name.casefold())

    @staticmethod
    def _item(
        name: str,
        kind: str,
        forms: list[str],
        sentences: list[_Sentence],
        lowered: list[str],
        defined: _Sentence | None = None,
        lead: str | None = None,
        quote_defined: bool = True,
    ) -> ExtractedItem | None:
        """The item, or None when the name fails the guard or the page would not earn its place
        (``MIN_MENTIONS``). ``defined``: the sentence opening the section the name heads;
        ``lead``: the description made of it (``_subject_lead``), else ``defined`` as written;
        ``quote_defined``: whether ``defined`` may be quoted as evidence."""
        if validate_item_name(name) != name:
            return None  # the one guard every extractor shares; forms can be renamed by merges
        concept = kind == "concept"
        if not concept and _generic_word(name):
            return None
        needles = _needles([name, *forms], concept)
        mentions = _mentions(needles, concept, sentences, lowered)
        if defined is not None:
            description, rank = lead or defined.text, 3
            mentions = [*([defined] if quote_defined else []), *(m for m in mentions if m is not defined)]
        else:
            description, rank = _describe(concept, needles, mentions)
        if rank < 2 and (rank < 1 or len(mentions) < MIN_MENTIONS):
            return None
        if concept and len(mentions) < MIN_MENTIONS and all(lexicon.too_common(w) for w in name.split()):
            # "starting points" defined once: common words whose meaning the one docstring
            # around them gives; a term the document builds on it uses again
            return None
        if concept and not has_cjk(name) and _describes_parameter(description):
            return None
        if not concept and name.isalpha() and name.isupper() and _PLACEHOLDER_LEAD.match(description):
            # "FUNC gives the function which shall be called": Tk's docstrings name a parameter in
            # capitals; a parameter is no thing of its own
            return None
        if concept and not has_cjk(name) and rank < 3:
            # a concept is a page where its document defines the general term ("X is a ...",
            # ``_general_definition_rank``); what X does or a caveat about it is no definition
            return None
        evidence = _evidence(mentions, description)
        if not evidence:
            return None
        if concept:
            seen = [f for f in forms if any(_find(low, [f.lower()]) for low in lowered)]
            seen += _surface_forms(name, [s.text for s in mentions])
        else:
            seen = forms
        return ExtractedItem(
            name=name,
            kind=kind,
            aliases=_aliases(name, seen),
            description=description,
            evidence=evidence,
        )
