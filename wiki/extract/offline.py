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

from wiki.extract import ExtractionError, is_stopword, validate_item_name
from wiki.models import ExtractedItem, Extraction
from wiki.text import fenced_code_lines

MAX_ANALYSED_CHARS = 50_000
PYSBD_PREFIX_CHARS = 2_500
YAKE_CHARS = 6_000
MAX_ENTITIES = 12
MAX_CONCEPTS = 12
MAX_ALIASES = 5
SUMMARY_CHARS = 300
DESCRIPTION_CHARS = 300
EVIDENCE_CHARS = 400
BODY_PARAGRAPHS = 3
BODY_PARAGRAPH_SENTENCES = 3
BODY_CHARS = 1200

# --- block level: which lines are prose -------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_MD_HEADING = re.compile(r"^\s{0,3}#{1,6}(\s|$)")
_UNDERLINE = re.compile(r"^\s*([=\-~^*#+`'\"._:])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\s*\.\.(\s|$)")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)]|#\.|\([a-z0-9]\))\s+")
_TABLE = re.compile(r"^\s*(?:\||\+[-=+]{2,})|\s\|\s.*\s\|\s")
_DOCTEST = re.compile(r"^\s*(?:>>>|\.\.\.(\s|$)|\$\s)")
_FIELD = re.compile(r"^\s*:[\w ()-]+:\s*")
_CODE_LINE = re.compile(r"[;{}]\s*$|^\s*(?:#include|#define|struct\s+\w+\s*\{|\w+\s*\(.*\)\s*;)")

# --- inline markup ------------------------------------------------------------------------------

_ROLE = re.compile(r":[\w:+.-]+:`([^`]*)`")
_RST_LINK = re.compile(r"`([^`<]*?)\s*<[^`>]*>`_{1,2}")
_DOUBLE_BT = re.compile(r"``(.+?)``")
_SINGLE_BT = re.compile(r"`([^`]+)`_{0,2}")
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((?:[^)(]|\([^)]*\))*\)")
_WIKI_LINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")
_ANGLE_URL = re.compile(r"<(?:https?|ftp|mailto):[^>]*>")
_EMPH = re.compile(r"(\*\*|\*)(?=\S)(.+?)(?<=\S)\1")
_FOOTNOTE = re.compile(r"\[(?:#\w*|\d+|\*)\]_")
_SUBST = re.compile(r"\|([\w -]+)\|")
_ROLE_TARGET = re.compile(r"^(.*?)\s*<[^>]*>$")

# --- names --------------------------------------------------------------------------------------

_IDENT = re.compile(r"^_*[A-Za-z][\w]*(?:(?:\.|::|->)[A-Za-z_]\w*)*(?:\(\))?$")
_CALL = re.compile(r"(?<![\w.])(_*[A-Za-z]\w{2,})\(\)")
_DOTTED = re.compile(r"(?<![\w./@-])(_*[A-Za-z]\w*(?:\.[A-Za-z_]\w*)+)(?![\w(/@-])")
_CONSTANT = re.compile(r"(?<![\w.])(_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w])")
_MIXED = re.compile(r"(?<![\w.])([A-Za-z][a-z0-9]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]{2,}[A-Za-z0-9]*)(?![\w])")
_ACRONYM = re.compile(r"(?<![\w.-])([A-Z][A-Z0-9&]*[A-Z0-9](?:v\d+)?(?:-[0-9]+)?)(?![\w-])")
_CAPSEQ = re.compile(
    r"(?<![\w.])[A-Z][\w&'-]*\w(?:\s+(?:(?:of|for|de|on|of the)\s+)?[A-Z][\w&'-]*\w)*"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]")
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
    r"supports?|acts as|serves as|can be|returns?|gives|creates?|controls?"
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
        # ".write()" would read as a sentence end to the splitters.
        inner = m.group(1).lstrip(".") or m.group(1)
        code.append(inner)
        return inner

    text = _WIKI_LINK.sub(r"\1", text)
    text = _MD_IMAGE.sub(r"\1", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _ANGLE_URL.sub("", text)
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


def _prose_blocks(text: str) -> tuple[list[str], list[str]]:
    """Split a document into prose blocks (inline markup removed) and its inline code spans."""
    blocks: list[str] = []
    code: list[str] = []
    current: list[str] = []
    skip_indented = False

    def flush() -> None:
        if current:
            block = _strip_inline(" ".join(current), code)
            if block:
                blocks.append(block)
            current.clear()

    lines = text.splitlines()
    for line, is_code in zip(lines, fenced_code_lines(lines)):
        stripped = line.strip()
        if is_code:
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
        if _FENCE.match(line):
            # An opener never closed (fenced_code_lines keeps what follows as text): not prose itself.
            flush()
            continue
        if _MD_HEADING.match(line) or _TABLE.search(line):
            flush()
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
            line = line[bullet.end():]
        line = _FIELD.sub("", line)
        current.append(line)
        if stripped.endswith("::"):
            flush()
            skip_indented = True
    flush()
    return blocks, code


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


def _sentences(blocks: list[str]) -> list[_Sentence]:
    out: list[_Sentence] = []
    budget = PYSBD_PREFIX_CHARS
    for index, block in enumerate(blocks):
        if budget > 0:
            parts = _segmenter().segment(block)
            budget -= len(block)
        else:
            parts = split_single(block)
        for part in parts:
            part = " ".join(part.split())
            if part:
                out.append(_Sentence(part, index, len(out)))
    return out


def _informative(sentence: str) -> bool:
    """A sentence fit for a summary: prose, complete, not boilerplate."""
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
    if not _IDENT.match(span):
        return None
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
    if call or dotted or "_" in span.strip("_") or mixed or span.isupper():
        return span
    if plain_ok and not is_stopword(span) and span.isalnum():
        return span
    return None


class _Entities:
    """Collects entity candidates keyed by case-folded name."""

    def __init__(self, lower_words: Counter[str], cap_words: Counter[str]) -> None:
        self.found: dict[str, _Candidate] = {}
        self.expansions: set[str] = set()  # case-folded spelled-out forms of acronyms
        self.lower_words = lower_words
        self.cap_words = cap_words

    def add(self, name: str, order: int, bonus: float = 0.0) -> None:
        clean = validate_item_name(name)
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
                if 2 <= sum(c.isupper() for c in word) and len(word) <= 10 and not _ROMAN.match(word):
                    self.add(word, order, 0.5)
        for m in _CAPSEQ.finditer(text):
            words = m.group(0).split()
            before = text[: m.start()].rstrip(" \"'(\u201c")
            # After "name: " a docstring line starts a new clause, as a sentence would.
            at_start = not before or before.endswith((":", ";", "\u2014", " -"))
            if at_start and self._common(words[0]):
                words = words[1:]
                at_start = False
            while words and (is_stopword(words[0]) or words[0].lower() in _NOT_NAMES):
                words = words[1:]
            while words and (is_stopword(words[-1]) or words[-1].lower() in _NOT_NAMES):
                words = words[:-1]
            if not words:
                continue
            if len(words) == 1:
                word = words[0]
                if at_start or word.isupper() or self._common(word) or (
                    _MIXED.fullmatch(word) and not _ACRONYM_PLURAL.match(word)
                ):
                    continue  # sentence-initial word, acronym or identifier: handled elsewhere
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
            owner = next((k for k in sorted(self.found) if expansion in
                          {f.casefold() for f in self.found[k].forms} and k != expansion), None)
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
            if "." not in key and len(targets) == 1:
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
    r"system|project|language|standard|variable|constant|attribute|field|parameter"
)
# What may follow the name in a definitional sentence: "X (...)", "X, the ...,", "X module", then a verb.
_DEFINES = re.compile(
    rf"^(?:\s*\([^)]{{1,80}}\))?(?:\s*,[^,]{{1,80}},)?(?:\s+(?:{_NOUNS}))?\s+(?:{_VERBS})\b",
    re.IGNORECASE,
)
_ARTICLE = re.compile(r"^(?:(?:The|A|An|Each|Every)\s+)?", re.IGNORECASE)


def _bounded(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole word/identifier (no word character or ``-`` around)."""
    before = text[start - 1] if start > 0 else " "
    after = text[end] if end < len(text) else " "
    return not (before.isalnum() or before in "_-") and not (after.isalnum() or after in "_-")


def _find(text: str, needles: list[str]) -> bool:
    """Whether any needle occurs in ``text`` as a whole word (needles and text in the same case)."""
    for needle in needles:
        start = text.find(needle)
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
        out.update({low, low + "s", low + "es"})
    return sorted(out, key=lambda f: (-len(f), f))


def _mentions(needles: list[str], concept: bool, sentences: list[_Sentence],
              lowered: list[str]) -> list[_Sentence]:
    out = []
    for sentence, low in zip(sentences, lowered):
        if _find(low if concept else sentence.text, needles):
            out.append(sentence)
    return out


def _definition(needles: list[str], concept: bool, mentions: list[_Sentence]) -> str | None:
    """The first mention shaped like "[The] X [(...)] [module] is/provides/... ", if any."""
    for sentence in mentions:
        text = sentence.text
        if text.endswith((":", ",")) or len(text.split()) < 4:
            continue
        rest = text[_ARTICLE.match(text).end():]
        probe = rest.lower() if concept else rest
        for needle in needles:
            if probe.startswith(needle) and _DEFINES.match(rest[len(needle):]):
                return text
    return None


def _one_sentence(text: str, keep: int) -> str:
    """``text`` cut to its first sentence as pysbd sees it, if that keeps ``keep`` characters.

    Docstrings joined from lines ("f(x) Return ...") can hold more than one sentence even
    after splitting; only texts with an inner sentence mark pay for the second pysbd pass.
    """
    if not re.search(r"[.!?]\S*\s", text):
        return text
    first = _segmenter().segment(text)[0].strip()
    return first if len(first) >= keep else text


def _finish_sentence(text: str, capitalise: bool = False, keep: int = 0) -> str:
    """``text`` as one sentence of at most ``DESCRIPTION_CHARS``, ended with a full stop;
    ``capitalise`` uppercases a concept's first letter (identifiers like ``kmalloc`` keep theirs)."""
    text = _one_sentence(_shorten(text, DESCRIPTION_CHARS - 1), keep)
    if capitalise and text[0].islower():
        text = text[0].upper() + text[1:]
    if not re.search(r"[.!?\u2026][\"')\u201d]?$", text):
        text = text.rstrip(" ,;:-") + "."
    return text


def _describe(name: str, concept: bool, needles: list[str], title: str, mentions: list[_Sentence],
              evidence: list[str]) -> str:
    definition = _definition(needles, concept, mentions)
    if definition:
        return _finish_sentence(definition, capitalise=concept, keep=len(name) + 12)
    # A title such as "What is lxfb?" must not end the description's only sentence.
    where = re.sub(r"[.!?]+(?=\s|$)", "", title.replace("[", "(").replace("]", ")").replace("|", "/"))
    where = " ".join(where.split()) or "the source document"
    # The evidence is one sentence already, so the result stays one sentence.
    fragment = _shorten(evidence[0].rstrip(" .!?;:"), 180).rstrip(" .!?;:")
    lead = f"{name} is discussed in {where}: "
    return _finish_sentence(lead + fragment, capitalise=concept, keep=len(lead) + 12)


def _evidence(mentions: list[_Sentence]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for limit_ok in (True, False):
        for sentence in mentions:
            text = sentence.text
            if len(text.split()) < 4 or text in seen or (limit_ok and len(text) > EVIDENCE_CHARS):
                continue
            out.append(_shorten(text, EVIDENCE_CHARS))
            seen.add(text)
            if len(out) == 3:
                return out
        if out:
            return out
    return out


def _aliases(name: str, forms: list[str]) -> list[str]:
    out: list[str] = []
    for form in forms:
        clean = validate_item_name(form)
        if clean and clean != name and clean not in out:
            out.append(clean)
    return out[:MAX_ALIASES]


def _overlaps(a: str, b: str) -> bool:
    """Whether one phrase is a whole-word part of the other ("json object" / "json object decoding")."""
    short, long = sorted((a, b), key=len)
    return _find(long, [short])


def _concept_name(phrase: str) -> str | None:
    words = phrase.split()
    if any(len(w) < 2 for w in words):
        return None
    if any(not re.fullmatch(r"[A-Za-z][A-Za-z0-9'-]*", w) for w in words):
        return None
    words = [w if (w.isupper() or _ACRONYM_PLURAL.match(w)) else w.lower() for w in words]
    return validate_item_name(" ".join(words))


# --- the extractor ------------------------------------------------------------------------------


class OfflineExtractor:
    """Deterministic extractor built on ``pysbd``/``segtok`` sentences and ``yake`` keyphrases.

    ``extract(title, text)`` analyses at most ``MAX_ANALYSED_CHARS`` (50,000) characters and
    returns at most ``MAX_ENTITIES`` (12) entities and ``MAX_CONCEPTS`` (12) concepts. About
    90-130 ms for a 30 KB document on a 2-core machine (yake is most of it), ~27 ms on average for
    a standard-library module. Raises ``ExtractionError`` when the text has no usable sentence.
    """

    name = "offline-v1"

    def extract(self, title: str, text: str) -> Extraction:
        """See the class docstring. ``title`` is used for ranking and in fallback descriptions."""
        blocks, code = _prose_blocks(text[:MAX_ANALYSED_CHARS])
        sentences = _sentences(blocks)
        usable = [s for s in sentences if sum(c.isalpha() for c in s.text) >= 3 and len(s.text.split()) >= 3]
        if not usable:
            raise ExtractionError("the document has no usable sentence")
        informative = [s for s in usable if _informative(s.text)] or usable[:1]
        summary = _shorten(informative[0].text, SUMMARY_CHARS)
        body = self._body(informative)
        items = self._items(title, sentences, code)
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
        return "\n\n".join(" ".join(p) for p in paragraphs if p)

    def _items(self, title: str, sentences: list[_Sentence], code: list[str]) -> list[ExtractedItem]:
        lower_words, cap_words = _word_counts(sentences)
        entities = _Entities(lower_words, cap_words)
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
            item = self._item(name, "entity", forms, title, sentences, lowered)
            if item:
                items.append(item)
                taken.update(f.casefold() for f in [name, *forms])
        prose = "\n\n".join(s.text for s in sentences)[:YAKE_CHARS]
        concepts = singles = 0
        chosen: list[str] = []
        prose_low = prose.lower()
        taken.update(entities.expansions)
        multiword = sorted(t for t in taken if " " in t)
        for phrase, _score in _keyword_extractor().extract_keywords(prose) if prose else []:
            if concepts == MAX_CONCEPTS:
                break
            name = _concept_name(phrase)
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
            item = self._item(name, "concept", forms, title, sentences, lowered)
            if item:
                items.append(item)
                concepts += 1
                singles += " " not in name
                chosen.append(fold)
                taken.update({fold, singular, fold + "s"})
        return items

    @staticmethod
    def _item(name: str, kind: str, forms: list[str], title: str, sentences: list[_Sentence],
              lowered: list[str]) -> ExtractedItem | None:
        if validate_item_name(name) != name:
            return None  # the one guard every extractor shares; forms can be renamed by merges
        concept = kind == "concept"
        needles = _needles([name, *forms], concept)
        mentions = _mentions(needles, concept, sentences, lowered)
        evidence = _evidence(mentions)
        if not evidence:
            return None
        seen_forms = [f for f in forms if any(_find(low, [f.lower()]) for low in lowered)] if concept else forms
        description = _describe(name, concept, needles, title, mentions, evidence)
        return ExtractedItem(
            name=name, kind=kind, aliases=_aliases(name, seen_forms), description=description,
            evidence=evidence,
        )
