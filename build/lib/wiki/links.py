"""Wiki links: parse ``[[slug|display]]``, add links to mentions, rewrite and repair dead links.

All functions are pure and work on Markdown text. What is a link, and which "protected" regions
are never changed nor read as prose (front matter, fenced and inline code, existing links,
Markdown links and images, reference definitions, autolinks, URLs, e-mail addresses, HTML tags,
heading lines and table rows), is ``wiki.markdown``'s to say.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from wiki.markdown import prose_segments, wiki_link_matches
from wiki.models import PageLite
from wiki.slugs import CJK_CLASS, has_cjk, normalize_name, normalize_slug
from wiki.stopwords import english_stopwords

#: Minimum bigram Jaccard similarity of normalized slugs for a fuzzy dead-link match. From the
#: issue that introduced dead-link repair: 0.8 accepts one-letter typos and romanization
#: variants of long slugs ("zhongguo-yinghang" -> "zhongguo-yinhang" scores 0.86) and rejects
#: different names that share a word ("acme-cloud" vs "acme-corp" scores 0.45).
FUZZY_JACCARD_THRESHOLD = 0.8

#: Titles shorter than this are never linked unless they contain CJK ("C", "Go" are too
#: ambiguous in prose).
MIN_TITLE_CHARS = 3

#: The folders an exported vault keeps pages in, one per page type (the index page sits at its
#: root). Obsidian writes a link to a page in one as ``[[entity/x]]``; a slug never holds "/", so
#: the folder is read off and the link is to the page ``x``.
PAGE_FOLDERS = ("summary", "entity", "concept", "disambiguation")
_FOLDER_PREFIX_RE = re.compile(f"^(?:{'|'.join(PAGE_FOLDERS)})/(?=[^/])")

# A "word character" for boundary checks: a letter, digit or underscore that is not CJK.
# CJK text has no spaces between words, so a Latin title right after a Han character still
# starts a word ("使用Python" mentions Python).
_WORD_CLASS = f"[^\\W{CJK_CLASS}]"
_WORD_RE = re.compile(_WORD_CLASS)
_WORD_START = re.compile(f"(?<!{_WORD_CLASS}){_WORD_CLASS}")
_PHRASE_FORBIDDEN = re.compile(r"[\[\]|\n]")
_BAD_SLUG = re.compile(r"[\[\]|#\n]")


@dataclass(frozen=True)
class Link:
    """One ``[[slug]]``, ``[[slug|display]]`` or ``[[slug#heading|display]]`` in a text.

    ``slug`` is stripped and never empty; ``display`` is stripped, ``None`` when absent or
    blank; ``start``/``end`` are the character offsets of the whole ``[[...]]`` (end exclusive).
    """

    slug: str
    display: str | None
    start: int
    end: int
    heading: str | None = None


@dataclass(frozen=True)
class LinkTarget:
    """A page that ``linkify`` may link to: its slug, title and aliases."""

    slug: str
    title: str
    aliases: tuple[str, ...] = ()


# --- parsing -----------------------------------------------------------------------------


def parse_links(text: str) -> list[Link]:
    """All wiki links of ``text`` in order, skipping those inside inline or fenced code.

    ``[[#heading]]`` (a link within the same page) and ``[[ ]]`` have no slug and are skipped.
    A folder prefix of :data:`PAGE_FOLDERS` is not part of the slug: ``[[entity/x]]`` links to ``x``.
    """
    links: list[Link] = []
    for m in wiki_link_matches(text):
        # Inside Markdown tables the pipe is escaped: [[slug\\|display]].
        slug = _FOLDER_PREFIX_RE.sub("", m.group(1).strip().removesuffix("\\").strip(), count=1)
        if not slug:
            continue
        display = (m.group(3) or "").strip() or None
        heading = (m.group(2) or "").strip() or None
        links.append(Link(slug, display, m.start(), m.end(), heading))
    return links


def out_link_slugs(text: str) -> set[str]:
    """The distinct slugs ``text`` links to."""
    return {link.slug for link in parse_links(text)}


# --- linkify -----------------------------------------------------------------------------


def _phrase_key(phrase: str) -> str:
    return " ".join(phrase.lower().split())


def _usable_phrase(phrase: str) -> bool:
    if _PHRASE_FORBIDDEN.search(phrase):
        return False
    return len(phrase) >= MIN_TITLE_CHARS or has_cjk(phrase)


@functools.cache
def _needs_boundary(ch: str) -> bool:
    """Whether ``ch`` is a word character for boundary checks (cached: asked per character)."""
    return _WORD_RE.fullmatch(ch) is not None


def _phrase_trie(phrases: Sequence[str]) -> dict:
    """A character trie of ``phrases`` (lowercased keys); a node's ``""`` entry holds the phrase
    ending there."""
    trie: dict = {}
    for phrase in phrases:
        node = trie
        for ch in phrase:
            node = node.setdefault(ch, {})
        node[""] = phrase
    return trie


def _longest_at(trie: dict, text: str, start: int, end: int) -> tuple[int, str] | None:
    """(end offset, phrase) of the longest phrase of ``trie`` that ``text`` holds at ``start``
    (within ``end``), or None.

    A phrase edge that is a Latin word character needs a word boundary in the text ("Go" is not
    in "Google"; the character before ``start`` counts even outside the segment, a segment's
    end is a boundary); CJK and punctuation edges do not. A space in a phrase matches any run
    of whitespace (a title may wrap across lines). When the longest phrase fails its end
    boundary, a shorter one may still match.
    """
    first = text[start]
    node = trie.get(first)
    if node is None or (start > 0 and _needs_boundary(first) and _needs_boundary(text[start - 1])):
        return None
    best = None
    i = start + 1
    while True:
        phrase = node.get("")
        if phrase is not None and (i >= end or not _needs_boundary(phrase[-1]) or not _needs_boundary(text[i])):
            best = (i, phrase)
        if i >= end:
            return best
        ch = text[i]
        if ch.isspace():
            node = node.get(" ")
            while i < end and text[i].isspace():
                i += 1
        else:
            node = node.get(ch)
            i += 1
        if node is None:
            return best


def _best_matches(trie: dict, text: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    """Non-overlapping mentions (start, end, phrase) in text[start:end], leftmost first; of
    overlapping mentions the longest wins.

    A walk of the phrase trie at each position whose character starts a phrase: no pattern is
    compiled per call (compiling the boundary checks' Unicode classes into a per-page regex was
    a quarter of a worker's CPU during linux-doc ingestion).
    """
    found: dict[int, tuple[int, str] | None] = {}

    def at(i: int) -> tuple[int, str] | None:
        if i not in found:
            found[i] = _longest_at(trie, text, i, end)
        return found[i]

    # Where a phrase can start: a word start for a phrase starting with a word character, any
    # occurrence of its first character otherwise (CJK, punctuation).
    starts = {m.start() for m in _WORD_START.finditer(text, start, end) if text[m.start()] in trie}
    for ch in trie:
        if not _needs_boundary(ch):
            i = text.find(ch, start, end)
            while i >= 0:
                starts.add(i)
                i = text.find(ch, i + 1, end)
    order = sorted(starts)
    k = 0
    while k < len(order):
        best = at(order[k])
        if best is None:
            k += 1
            continue
        best_start, (best_end, phrase) = order[k], best
        k += 1
        while k < len(order) and order[k] < best_end:
            other = at(order[k])
            if other is not None and other[0] - order[k] > best_end - best_start:
                best_start, (best_end, phrase) = order[k], other
            k += 1
        yield best_start, best_end, phrase


_BRACKETS = ("[", "]")


def linkify(text: str, targets: Sequence[LinkTarget], self_slug: str | None = None) -> tuple[str, set[str]]:
    """Link the first safe mention of each target's title or alias; return (text, slugs linked).

    A mention becomes ``[[slug|<mention as written>]]``. Rules: matching is case-insensitive;
    Latin titles need word boundaries ("Go" is not found in "Google"), CJK titles do not;
    titles and aliases shorter than 3 characters are ignored unless they contain CJK; when
    mentions overlap the longest wins; nothing in a protected region (see the module docstring)
    is linked; a target already linked anywhere in ``text`` (same slug up to
    ``normalize_slug``) and ``self_slug`` are never linked. When two targets share a title the
    first in ``targets`` gets it. Applying linkify to its own output changes nothing.

    Cost: one trie of the targets' phrases and one pass over the prose, compiling nothing.
    """
    by_phrase: dict[str, str] = {}
    for target in targets:
        if not target.slug or target.slug != target.slug.strip() or _BAD_SLUG.search(target.slug):
            continue
        for phrase in (target.title, *target.aliases):
            phrase = phrase.strip()
            if phrase and _usable_phrase(phrase):
                by_phrase.setdefault(_phrase_key(phrase), target.slug)
    if not by_phrase:
        return text, set()

    linked = {normalize_slug(s) for s in out_link_slugs(text)}
    if self_slug:
        linked.add(normalize_slug(self_slug))
    # Matching runs on lowercased text; str.lower keeps every offset unless a character lowers
    # to two ("İ"), which is then left as it is.
    haystack = text.lower()
    if len(haystack) != len(text):
        haystack = "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
    # Only phrases the text contains can match (a phrase's spaces match any whitespace): a
    # page's aliases mostly do not occur.
    flat = " ".join(haystack.split())
    by_phrase = {k: slug for k, slug in by_phrase.items() if k in flat}
    if all(normalize_slug(slug) in linked for slug in by_phrase.values()):
        return text, set()
    trie = _phrase_trie(list(by_phrase))

    # Every target's phrase takes part in matching, even those that will not be linked, so a
    # longer mention ("Acme Cloud" on its own page) is never split to link a shorter one.
    edits: list[tuple[int, int, str, str]] = []
    for seg_start, seg_end in prose_segments(text):
        for start, end, phrase in _best_matches(trie, haystack, seg_start, seg_end):
            slug = by_phrase[phrase]
            if normalize_slug(slug) in linked:
                continue
            if text[start - 1 : start] in _BRACKETS or text[end : end + 1] in _BRACKETS:
                continue  # "List[int]": a link beside a bracket would fuse into "[[[" or "]]]"
            if _dotted(text, start - 1, -1) or _dotted(text, end, 1):
                continue  # "Handler" of "Handler.handleError": a piece of another code name
            linked.add(normalize_slug(slug))
            edits.append((start, end, slug, " ".join(text[start:end].split())))
    if not edits:
        return text, set()

    parts: list[str] = []
    pos = 0
    for start, end, slug, display in edits:
        parts.append(text[pos:start])
        parts.append(f"[[{slug}|{display}]]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts), {e[2] for e in edits}


def _dotted(text: str, dot: int, step: int) -> bool:
    """Whether ``text[dot]`` is a "." joining the mention to a name part on its other side
    (``step`` -1: before the mention, 1: after it), so the mention is a piece of a dotted code name
    ("Handler.handleError", "os.path.join"); a sentence's closing full stop is not."""
    if not 0 <= dot < len(text) or text[dot] != ".":
        return False
    beyond = dot + step
    return 0 <= beyond < len(text) and (text[beyond].isalnum() or text[beyond] == "_")


# --- candidate phrases -------------------------------------------------------------------

_TOKEN_RE = re.compile(
    f"(?P<cjk>[{CJK_CLASS}]+)|(?P<word>(?:(?![{CJK_CLASS}])[^\\W_])+(?:[.'’&/+#-](?:(?![{CJK_CLASS}])[^\\W_])+)*[+#]*)"
)
_WORD_PARTS_RE = re.compile(r"[.'’&/-]")
_MAX_CJK_SUB = 8


def candidate_phrases(text: str, max_words: int = 4, limit: int = 2000) -> list[str]:
    """Distinct lowercased phrases of the prose of ``text`` that may be page titles.

    Word n-grams of 1..``max_words`` words, where consecutive words are separated by whitespace
    only (a title never spans punctuation that linkify would not match either); words keep
    inner punctuation ("node.js", "c++", "e-commerce") and such words also contribute their
    parts ("acme" from "acme's"). Each maximal CJK run is a phrase, and so are its substrings of
    2..8 characters. Phrases made only of stop words or shorter than 3 characters (without CJK)
    are left out. Protected regions (code, links, URLs, headings) are skipped. Phrases come in
    text order and stop at ``limit``, so the first mentions — the ones linkify links — count.
    """
    out: dict[str, None] = {}
    stopwords = english_stopwords()

    def add(phrase: str) -> bool:
        if phrase not in out and (len(phrase) >= MIN_TITLE_CHARS or has_cjk(phrase)):
            out[phrase] = None
        return len(out) >= limit

    for seg_start, seg_end in prose_segments(text):
        # the phrases of 1..max_words-1 words ending at the previous word (shortest first), and
        # how many stop words end the run: an n-gram of no more than that many is only stop words
        tails: list[str] = []
        stops = 0
        prev_end = -1
        for m in _TOKEN_RE.finditer(text, seg_start, seg_end):
            if m.lastgroup == "cjk":
                tails, stops = [], 0
                run = m.group()
                if add(run):
                    return list(out)
                for size in range(2, min(_MAX_CJK_SUB, len(run)) + 1):
                    for i in range(len(run) - size + 1):
                        if add(run[i : i + size]):
                            return list(out)
                prev_end = m.end()
                continue
            word = m.group().lower()
            if prev_end < 0 or m.start() == prev_end or text[prev_end : m.start()].strip():
                tails, stops = [], 0
            prev_end = m.end()
            grams = [word, *(tail + " " + word for tail in tails)]
            stops = stops + 1 if word in stopwords else 0
            for n in range(len(grams), stops, -1):  # longest first
                if add(grams[n - 1]):
                    return list(out)
            tails = grams[: max_words - 1]
            if _WORD_PARTS_RE.search(word):
                for part in _WORD_PARTS_RE.split(word):
                    if part and part not in stopwords and add(part):
                        return list(out)
    return list(out)


# --- rewriting and repair ----------------------------------------------------------------


def _slug_words(slug: str) -> str:
    return " ".join(slug.replace("-", " ").replace("_", " ").split())


def rewrite_links(text: str, resolve: Callable[[str, str | None], str | None]) -> tuple[str, int]:
    """Point every link where ``resolve(slug, display)`` says; return (text, links changed).

    ``resolve`` returns the same slug (link kept as written), another slug (the link becomes
    ``[[new#heading|display]]``, where display is the old display or, without one, the old slug
    with hyphens and underscores read as spaces), or ``None`` (the link is replaced by that
    display text). ``resolve`` is called once per distinct (slug, display) pair. Links inside
    code are not links and are left alone.
    """
    cache: dict[tuple[str, str | None], str | None] = {}
    parts: list[str] = []
    pos = 0
    changed = 0
    for link in parse_links(text):
        key = (link.slug, link.display)
        if key not in cache:
            cache[key] = resolve(link.slug, link.display)
        new = cache[key]
        if new == link.slug:
            continue
        display = link.display or _slug_words(link.slug)
        if new is None:
            replacement = display
        else:
            anchor = f"#{link.heading}" if link.heading else ""
            replacement = f"[[{new}{anchor}|{display}]]"
        parts.append(text[pos : link.start])
        parts.append(replacement)
        pos = link.end
        changed += 1
    if not changed:
        return text, 0
    parts.append(text[pos:])
    return "".join(parts), changed


def unlink(text: str, drop: Callable[[Link], bool]) -> str:
    """``text`` with every link ``drop`` selects replaced by its display text (or, without one,
    its slug read as words), as ``rewrite_links`` writes a link resolved to nothing."""
    parts: list[str] = []
    pos = 0
    for link in parse_links(text):
        if drop(link):
            parts += [text[pos : link.start], link.display or _slug_words(link.slug)]
            pos = link.end
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


def _bigrams(value: str) -> set[str]:
    if len(value) < 2:
        return {value} if value else set()
    return {value[i : i + 2] for i in range(len(value) - 1)}


def _jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def fuzzy_resolve(slug: str, display: str | None, candidates: Sequence[PageLite]) -> str | None:
    """The slug of the live page a dead link ``[[slug|display]]`` should point to, or ``None``.

    ``candidates`` is the bounded set the caller fetched (for example trigram top-K); archived
    candidates never match. Stages, first hit wins:

    1. the display text (or, without one, the slug read as words) equals a candidate's title or
       an alias under ``normalize_name``;
    2. ``normalize_slug`` equality ("shang-hai-tower" -> "shanghai-tower");
    3. character-bigram Jaccard of the normalized slugs >= :data:`FUZZY_JACCARD_THRESHOLD`
       (0.8, the threshold the dead-link issue specifies), best score wins.

    Within a stage, ties go to the lexicographically smallest slug. CJK characters take part in
    every comparison.
    """
    live = sorted((c for c in candidates if c.status != "archived"), key=lambda c: c.slug)
    if not live:
        return None

    name = normalize_name(display if display else _slug_words(slug))
    if name:
        for cand in live:
            names = (cand.title, *cand.aliases)
            if any(normalize_name(n) == name for n in names):
                return cand.slug

    key = normalize_slug(slug)
    if not key:
        return None
    for cand in live:
        if normalize_slug(cand.slug) == key:
            return cand.slug

    grams = _bigrams(key)
    best: tuple[float, str] | None = None
    for cand in live:
        score = _jaccard(grams, _bigrams(normalize_slug(cand.slug)))
        if score >= FUZZY_JACCARD_THRESHOLD and (best is None or score > best[0]):
            best = (score, cand.slug)
    return best[1] if best else None
