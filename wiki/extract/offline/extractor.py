"""``OfflineExtractor``: a document's summary, body and items. An item is kept when it earns a
page (``MIN_MENTIONS``), with its lead, aliases and whole sentences quoted as evidence; Chinese
and Japanese names come from ``wiki.extract.cjk``."""

from __future__ import annotations

import re
from collections import Counter

from wiki.extract import ExtractionError, cjk, lexicon, validate_item_name
from wiki.extract.offline.leads import _heading_definitions, _module_title, _reference_entry, _subject_lead
from wiki.extract.offline.limits import (
    BODY_CHARS,
    BODY_PARAGRAPH_SENTENCES,
    BODY_PARAGRAPHS,
    EVIDENCE_CHARS,
    MAX_ALIASES,
    MAX_ANALYSED_CHARS,
    MAX_CONCEPTS,
    MAX_ENTITIES,
    MAX_QUOTE_CHARS,
    SUMMARY_CHARS,
    YAKE_CHARS,
)
from wiki.extract.offline.names import (
    _bounded,
    _code_name,
    _concept_name,
    _Entities,
    _find,
    _generic_word,
    _occurrences,
    _word_counts,
)
from wiki.extract.offline.prose import (
    _UNRESOLVED,
    _informative,
    _keyword_extractor,
    _prose_blocks,
    _Sentence,
    _sentences,
    _shorten,
    _usable,
    _whole_sentence,
)
from wiki.extract.offline.ranks import _PLACEHOLDER_LEAD, _describe, _describes_parameter
from wiki.extract.offline.words import NOT_NAMES
from wiki.models import ExtractedItem, Extraction
from wiki.slugs import has_cjk

# --- items --------------------------------------------------------------------------------------


#: A page must earn its place (docs/decisions.md): an item is kept when its document defines it
#: (lead rank >= 2, "X is a ..."/"X provides ..."), or says something with it as the subject
#: (rank 1) in one of at least ``MIN_MENTIONS`` sentences. A name seen in one sentence and never
#: defined stays a phrase of its summary. A concept needs rank 2 (a lone word rank 3): a phrase
#: the text only uses ("the modification time is set to ...") says nothing a page could lead with.
MIN_MENTIONS = 2


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
            if name is None or name.lower() in NOT_NAMES:
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
