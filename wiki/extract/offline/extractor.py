"""``OfflineExtractor``: a document's summary, body and items. An item is kept when it earns a
page (``MIN_MENTIONS``), with its lead, aliases and whole sentences quoted as evidence; Chinese
and Japanese names come from ``wiki.extract.cjk``."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace

from wiki.dedup import name_key, singular
from wiki.extract import ExtractionError, cjk, lexicon, validate_item_name
from wiki.extract.offline.leads import (
    _heading_definitions,
    _module_lead,
    _module_title,
    _reference_entry,
    _subject_lead,
)
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
    _Candidate,
    _code_name,
    _concept_name,
    _emphasis,
    _Entities,
    _find,
    _generic_word,
    _jargon,
    _occurrences,
    _word_counts,
)
from wiki.extract.offline.prose import (
    _UNRESOLVED,
    _informative,
    _keyword_extractor,
    _prose_blocks,
    _quotable,
    _Sentence,
    _sentences,
    _shorten,
    _usable,
    _whole_sentence,
)
from wiki.extract.offline.ranks import _PLACEHOLDER_LEAD, _code_like, _describe, _describes_parameter, _is_subject
from wiki.extract.offline.words import NOT_NAMES
from wiki.models import MAX_ITEMS, MAX_MENTIONS, ExtractedItem, Extraction
from wiki.slugs import has_cjk

# --- items --------------------------------------------------------------------------------------


#: A page must earn its place (docs/decisions.md): an item is kept when its document defines it
#: (lead rank >= 2, "X is a ..."/"X provides ..."), or says something with it as the subject
#: (rank 1) in one of at least ``MIN_MENTIONS`` sentences. A name seen in one sentence and never
#: defined stays a phrase of its summary. A concept needs rank 2 (a lone word rank 3): a phrase
#: the text only uses ("the modification time is set to ...") says nothing a page could lead with.
MIN_MENTIONS = 2


def _needles(forms: list[str], concept: bool) -> list[str]:
    """Search strings for a name: case-folded with plural variants for concepts, exact for entities
    and, of a lower-case name that is no code, its capitalised form too ("Sysctl is a means of
    ..." opens a sentence about "sysctl")."""
    if not concept:
        capitalised = {f[0].upper() + f[1:] for f in forms if f.isalnum() and f.islower()}
        return sorted(set(forms) | capitalised, key=lambda f: (-len(f), f))
    out: set[str] = set()
    for form in forms:
        low = form.lower()
        if has_cjk(low):
            out.add(low)
            continue
        # a plural name ("workqueues") is found in the singular too: the key is the singular's
        words = low.split(" ")
        one = " ".join([*words[:-1], singular(words[-1])])
        out.update({low, low + "s", low + "es", one, one + "s", one + "es"})
    return sorted(out, key=lambda f: (-len(f), f))


def _mentions(needles: list[str], concept: bool, sentences: list[_Sentence], lowered: list[str]) -> list[_Sentence]:
    out = []
    for sentence, low in zip(sentences, lowered):
        if _find(low if concept else sentence.text, needles):
            out.append(sentence)
    return out


def _evidence(mentions: list[_Sentence], lead: str, about: Callable[[str], bool] | None = None) -> list[str]:
    """Up to 3 mentions quoted whole (never cut): the lead first when it is one of them, then
    sentences of at most ``EVIDENCE_CHARS``, then of at most ``MAX_QUOTE_CHARS``; with ``about``,
    only the sentences it holds to be about the name ("Get the mapping of coroutine local variables"
    names coroutines but says nothing of them: the demo's judges failed such quotes)."""
    out: list[str] = [lead] if any(s.text == lead for s in mentions) and _quotable(lead) else []
    for limit in (EVIDENCE_CHARS, MAX_QUOTE_CHARS):
        for sentence in mentions:
            text = sentence.text
            if len(out) == 3:
                return out
            if (len(text.split()) < 4 and not has_cjk(text)) or text in out or len(text) > limit:
                continue
            if _UNRESOLVED.match(text) or not _quotable(text):
                continue  # "This is similar to ...": quoted alone, nobody knows what "this" is
            if about is not None and not about(text):
                continue
            out.append(text)
    if not out:
        out = [
            s.text
            for s in mentions
            if len(s.text) <= EVIDENCE_CHARS and _quotable(s.text) and (about is None or about(s.text))
        ][:1]
    return out


#: A docstring line naming its own kind first: a heading, no entry ("Module difflib -- helpers ...").
_KIND_LABEL = re.compile(r"^(?:Module|Package|Class)\b")


def _docstring(text: str) -> bool:
    """Whether ``text``, the first line of a reference section, quotes whole though it has no
    verb: four words or more, a whole sentence, no label ("Selectors module.", "Module difflib --
    helpers ...") and nothing pointing back ("This is ...")."""
    return (
        len(text.split()) >= 4 and _whole_sentence(text) and not _KIND_LABEL.match(text) and not _UNRESOLVED.match(text)
    )


def _aliases(name: str, forms: list[str]) -> list[str]:
    """The other names of ``name`` among ``forms``. A plain dictionary word is not an alias of a
    code name ("generator" of ``email.generator``), but for the name's own last part ("Queue" of
    ``queue.Queue``): what a reader types to find it (``wiki.links.link_aliases`` keeps it from
    linking every "queue")."""
    out: list[str] = []
    code = any(c in name for c in "._")
    for form in forms:
        clean = validate_item_name(form)
        if not clean or clean == name or clean in out:
            continue
        if code and clean.isalpha() and lexicon.dictionary_word(clean) and not name.endswith("." + clean):
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


@dataclass
class _Judged:
    """What one document says of one name: its sentences, its best lead and quotes, and whether
    the document alone makes it a page (``earned``, ``MIN_MENTIONS``)."""

    name: str
    kind: str
    named: bool
    earned: bool
    sentences: int
    subject: int
    rank: int
    description: str
    evidence: list[str]
    aliases: list[str]
    parent: str = ""
    titled: bool = False

    def item(self) -> ExtractedItem:
        return ExtractedItem(
            name=self.name,
            kind=self.kind,
            aliases=self.aliases,
            description=self.description,
            evidence=self.evidence[:3],
            sentences=min(self.sentences, 32767),
            subject=min(self.subject, 32767),
            rank=self.rank if self.description else 0,
            named=self.named,
            titled=self.titled,
            parent=self.parent,
        )


def _qualified(name: str, module: str) -> str:
    """A code name of a module's reference with its module in front ("Queue.get" of ``queue`` is
    "queue.Queue.get"): the same bare name in two modules names two things."""
    if not module or name == module or name.startswith(module + "."):
        return name
    return f"{module}.{name}"


def _parent(name: str, module: str) -> str:
    """The class or module a qualified code name of a module's reference is a member of
    ("queue.Queue.get" -> "queue.Queue", "queue.Queue" -> "queue"), "" for none."""
    if not module or "." not in name:
        return ""
    return name.rpartition(".")[0]


#: Offline extractions one worker process runs at once. The extractor is pure Python, so under
#: the GIL a second thread extracting adds no throughput, only its working set: on linux-doc, 8
#: threads extracting at once peaked at 353 MiB against 178 MiB for one, and took 40.5 s against
#: 28.4 s for 600 documents (issue 24). The worker's other threads (reads, reduce, the database)
#: go on while one extracts.
EXTRACTION_SLOTS = 1
_slots = threading.BoundedSemaphore(EXTRACTION_SLOTS)


class OfflineExtractor:
    """Deterministic extractor built on ``pysbd``/``segtok`` sentences and ``yake`` keyphrases,
    the ``wiki.extract.lexicon`` word data, and ``wiki.extract.cjk`` for Chinese and Japanese.

    ``extract(title, text)`` analyses at most ``MAX_ANALYSED_CHARS`` (50,000) characters and
    returns at most ``MAX_ENTITIES`` (12) entities and ``MAX_CONCEPTS`` (12) concepts the document
    makes pages of on its own, each with a lead that says what it is and whole quoted sentences,
    and up to ``MAX_MENTIONS`` other names it names, with what it says of each (the mention index
    decides across the corpus which of them get a page: ``wiki.coverage``). In a module's
    reference (a document titled by a module name) code names keep their module ("queue.Queue")
    and the module itself is an item. About 90-130 ms for a 30 KB document on a 2-core machine
    (yake is most of it). Raises ``ExtractionError`` when the text has no usable sentence.
    """

    name = "offline-v24"

    def extract(self, title: str, text: str) -> Extraction:
        """See the class docstring. ``title`` is used for ranking. Waits for one of the
        process's ``EXTRACTION_SLOTS``."""
        with _slots:
            return self._extract(title, text)

    def _extract(self, title: str, text: str) -> Extraction:
        blocks, code, headings = _prose_blocks(text[:MAX_ANALYSED_CHARS])
        sentences = _sentences(blocks)
        usable = [s for s in sentences if _usable(s.text)]
        if not usable:
            raise ExtractionError("the document has no usable sentence")
        informative = [s for s in usable if _informative(s.text)] or usable[:1]
        summary = _shorten(informative[0].text, SUMMARY_CHARS)
        body = self._body(informative)
        judged = self._judged(title, sentences, code, headings)
        items, mentions = _choose(judged, bool(_module_title(title)))
        return Extraction(summary=summary, body=body, items=items, mentions=mentions)

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

    def _judged(
        self, title: str, sentences: list[_Sentence], code: list[str], headings: dict[int, str]
    ) -> list[_Judged]:
        """Every name the document names, judged (``_judge``), in the order items are chosen: its
        entities by rank, its Chinese and Japanese names, its concepts (yake's keyphrases)."""
        lower_words, cap_words = _word_counts(sentences)
        entities = _Entities(lower_words, cap_words, jargon=_english(lower_words))
        module = _module_title(title)
        defined = _heading_definitions(sentences, headings, module)
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
            entities.scan_jargon(sentence)
        lowered = [s.text.lower() for s in sentences]
        heads = (title, *headings.values())  # what the document and its sections are titled
        sections_of = _sections(headings, len(sentences) and sentences[-1].block + 1)
        judged: list[_Judged] = []
        taken: set[str] = set()
        if module in defined:
            # the module a reference documents, under its own name whatever other names fold to it
            # ("ssl" beside "SSL"): its docstring's first sentence leads it
            one = self._judge(
                module,
                "entity",
                [module],
                sentences,
                lowered,
                title,
                named=True,
                heads=heads,
                defined=defined[module],
                lead=_module_lead(module, defined[module].text),
                parent=_parent(module, module),
            )
            if one:
                judged.append(one)
                taken.add(module.casefold())
        everyone = entities.ranked(title, len(sentences))
        ranked = everyone[:MAX_CANDIDATES]
        # the names past the ones judged are still mentions of the document, by name only
        unjudged = [
            _Judged(name, "entity", True, False, cand.count, 0, 0, "", [], [])
            for name, cand in everyone[MAX_CANDIDATES:]
            if validate_item_name(name) == name and not _generic_word(name)
        ]
        # a name a section of the reference is headed by is judged whatever other spelling its
        # candidate goes by ("Queue" the class beside "queue" the module)
        spelled = {name for name, _ in ranked}
        ranked += [(name, _Candidate()) for name in defined if name not in spelled and name != module]
        for name, cand in ranked:
            if name == module or (name.casefold() in taken and name not in defined):
                continue
            # a section's name is its own: "queue" (the module) is no spelling of "Queue" (its class)
            forms = [name] if name in defined else sorted(cand.forms)
            lead = _subject_lead(name, defined[name].text, title, sections) if name in defined else None
            # outside a module's reference, a definition list's entry ("The chunk size in KB ...",
            # "Gets netdev features like ...") gives the lead its predicate but is no sentence to
            # quote: the page needs a whole sentence about the name. A module's docstrings ("Return
            # the ...", "Base class for ...") are quoted as its reference gives them.
            entry = name in defined and lead != defined[name].text and not module
            quote = not (entry and _reference_entry(defined[name].text))
            full = _qualified(name, module) if name in defined else name
            # a jargon word ("sysfs", "subpanels") is a term of the corpus with a name's weight: read
            # as a concept (any case, its plural, a general definition), counted as a name
            jargon = name.casefold() in entities.jargon and name not in defined
            one = self._judge(
                full,
                "concept" if jargon else "entity",
                forms if full == name else [name, *forms],
                sentences,
                lowered,
                title,
                named=True,  # proper names, acronyms, code and jargon ("sysfs"): names
                heads=heads,
                defined=defined.get(name),
                lead=lead,
                quote_defined=quote,
                parent=_parent(full, module),
                section=sections_of.get(name) if module and name in defined else None,
            )
            if one:
                judged.append(one)
                if one.earned:  # a name the document only uses ("allocator", "Labs") leaves "slab
                    taken.update(f.casefold() for f in [name, *forms])  # allocator", "Harbor Labs" to be found
        if module:
            judged += _structural_parents(judged, module)
        self._cjk_names(judged, taken, sentences, lowered, title, heads)
        prose = "\n\n".join(s.text for s in sentences if not has_cjk(s.text))[:YAKE_CHARS]
        singles = 0
        chosen: list[str] = []
        prose_low = prose.lower()
        taken.update(entities.expansions)
        multiword = sorted(t for t in taken if " " in t)
        judged_names = {one.name.casefold() for one in judged}
        for phrase, _score in _keyword_extractor().extract_keywords(prose) if prose else []:
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
            if {fold, singular, fold + "s"} & (taken | judged_names):
                continue
            forms = [name] + ([name[:-1]] if name.endswith("s") else [name + "s"])
            proper = _proper_form(name, [s.text for s in sentences])
            if proper is not None:
                # "Harbor Labs", "Kestrel" written capitalised wherever they appear: a proper name,
                # so an entity under its own spelling (yake hands phrases over in lower case)
                one = self._judge(proper, "entity", [proper], sentences, lowered, title, named=True, heads=heads)
            else:
                one = self._judge(name, "concept", forms, sentences, lowered, title, named=False, heads=heads)
            if one and (one.named or one.rank or one.sentences >= MIN_MENTIONS):
                # a term the document neither says anything of nor uses twice ("follow POSIX
                # conventions", a keyphrase of one sentence) is no mention of a thing
                judged.append(one)
                judged_names.update({fold, singular, fold + "s"})
                if one.earned:
                    taken.update({fold, singular, fold + "s"})
                if one.kind == "concept" and one.earned:
                    singles += " " not in name
                    chosen.append(fold)
        named_keys = {name_key(one.name) for one in [*judged, *unjudged]}
        tokens = [
            _Judged(name, "entity", True, False, count, 0, 0, "", [], [])
            for name, count in _name_tokens(sentences)
            if name_key(name) not in named_keys
        ]
        return judged + unjudged + tokens

    def _cjk_names(
        self,
        judged: list[_Judged],
        taken: set[str],
        sentences: list[_Sentence],
        lowered: list[str],
        title: str,
        heads: tuple[str, ...],
    ) -> None:
        """Judge the Chinese/Japanese names of the CJK sentences (``cjk.names``) and the document's
        own name when its title is one, into ``judged``."""
        texts = [s.text for s in sentences if has_cjk(s.text)]
        if not texts:
            return
        japanese = any(cjk.has_kana(t) for t in texts)
        found = cjk.names(texts, japanese)
        # a work named in 《》 ("《静夜思》") is a name whole, whatever its words are
        quoted = sorted({m for t in texts for m in _BOOK_TITLE.findall(t)} - {n for n, *_ in found})
        found = [*((name, "entity", 1, 0) for name in quoted), *found]
        own = title.strip()
        if has_cjk(own) and 2 <= len(own) <= cjk.MAX_CJK_NAME_CHARS and all(n != own for n, *_ in found):
            found.insert(0, (own, "entity", 1, 0))  # the document's title names its subject
        for name, kind, words, _first in found:
            if name.casefold() in taken or any(name in other for other in taken if has_cjk(other)):
                continue  # a piece of a longer name already kept
            if words == 1 and name != own and lexicon.cjk_zipf(name, japanese) >= lexicon.CJK_COMMON_ZIPF:
                continue  # "返回值" (return value), "目標" (goal), "ユーザ" (user): too common to be one thing
            one = self._judge(name, kind, [name], sentences, lowered, title, named=kind == "entity", heads=heads)
            if one is None:
                continue
            if kind == "concept" and words == 1 and one.rank < 3:
                one.earned = False  # a lone word ("函数", "function") is a page only where it is defined
            judged.append(one)
            taken.add(name.casefold())

    @staticmethod
    def _judge(
        name: str,
        kind: str,
        forms: list[str],
        sentences: list[_Sentence],
        lowered: list[str],
        title: str,
        named: bool,
        heads: tuple[str, ...] = (),
        defined: _Sentence | None = None,
        lead: str | None = None,
        quote_defined: bool = True,
        parent: str = "",
        section: tuple[int, int] | None = None,
    ) -> _Judged | None:
        """What the document says of ``name``, or None when the name fails the guard or names no
        thing (a parameter, a generic word). ``earned`` when the document alone makes it a page
        (``MIN_MENTIONS``); ``defined``: the sentence opening the section the name heads;
        ``lead``: the description made of it (``_subject_lead``), else ``defined`` as written;
        ``quote_defined``: whether ``defined`` may be quoted as evidence."""
        if validate_item_name(name) != name and not (defined is not None and _module_title(title) == name):
            # the one guard every extractor shares (forms can be renamed by merges), but for the
            # module a reference documents, whatever its name ("re" is an English stopword)
            return None
        concept = kind == "concept"
        if not concept and _generic_word(name):
            return None
        needles = _needles([name, *forms], concept)
        mentions = _mentions(needles, concept, sentences, lowered)
        if defined is not None:
            description, rank = lead or defined.text, 3
            if section is not None:  # a reference's section: its own sentences say what its name is
                mentions = [m for m in mentions if section[0] <= m.block < section[1]]
            # a docstring's first line ("Stuff source in the filename cache") is quoted as the
            # sentence it is, its full stop added as the lead's is below
            quoted = replace(defined, text=defined.text + ".") if defined.text[-1:].isalnum() else defined
            mentions = [*([quoted] if quote_defined else []), *(m for m in mentions if m is not defined)]
        else:
            description, rank = _describe(concept, needles, mentions)
        if not mentions:
            return None
        if concept and not has_cjk(name) and description and _describes_parameter(description):
            return None
        if not concept and name.isalpha() and name.isupper() and _PLACEHOLDER_LEAD.match(description):
            # "FUNC gives the function which shall be called": Tk's docstrings name a parameter in
            # capitals; a parameter is no thing of its own
            return None
        if named and not concept and not has_cjk(name) and name != name.upper() and not _code_like(name):
            # "User Space", "Kernel" in a heading, "user space", "kernel" in the text: a phrase
            # title-cased where it opens something, not a proper name
            named = not any(form == form.lower() for form, _ in _spellings(name, [s.text for s in sentences]))
        subject = sum(_is_subject(needles, concept, s.text) for s in mentions)
        titled = any(_find(head.lower() if concept else head, needles) for head in heads)
        earned = rank >= 2 or (rank >= 1 and len(mentions) >= MIN_MENTIONS)
        if named and rank >= 1 and _is_title(name, title):
            earned = True  # the document's own subject ("Oskar Venn", "上海中心大厦") said something of
        if concept and len(mentions) < MIN_MENTIONS and all(lexicon.too_common(w) for w in name.split()):
            # "starting points" defined once: common words whose meaning the one docstring
            # around them gives; a term the document builds on it uses again
            earned = False
        if concept and not has_cjk(name) and rank < 3:
            # a concept is a page where its document defines the general term ("X is a ...",
            # ``_general_definition_rank``); what X does or a caveat about it is no definition
            earned = False
        # a reference's section is about its name throughout; elsewhere a quote has it for its subject
        about = None if defined is not None else (lambda text: _is_subject(needles, concept, text, compound=True))
        if rank:
            evidence = _evidence(mentions, description, about)
        else:
            evidence = _mention_quote(mentions, needles, named, concept)
        if (
            defined is not None
            and quote_defined
            and _module_title(title)
            and mentions[0].text not in evidence
            and _docstring(mentions[0].text)
        ):
            # a docstring's noun phrase ("A lexical analyzer class for ...") is the whole entry
            # its section gives: quoted as written, it is the evidence of the lead made of it
            evidence = [mentions[0].text, *evidence][:3]
        if not evidence and not (defined is not None and _module_title(title)):
            earned = False  # a section of a module's reference may lead its page without a quote
        if description and description[-1:].isalnum():
            description += "."  # a docstring's first line ("Dictionary that remembers insertion order")
        if concept:
            seen = [f for f in forms if any(_find(low, [f.lower()]) for low in lowered)]
            seen += _surface_forms(name, [s.text for s in mentions])
        else:
            seen = forms
        return _Judged(
            name=name,
            kind=kind,
            named=named,
            earned=earned,
            sentences=len(mentions),
            subject=subject,
            rank=rank if description else 0,
            description=description if rank else "",
            evidence=evidence,
            aliases=_aliases(name, seen),
            parent=parent,
            titled=titled,
        )


#: A name in Chinese title marks: a book, a poem, a law, a film.
_BOOK_TITLE = re.compile(r"《([^《》]{1,30})》")
#: Mentions that keep their lead and quote (``_choose``); the rest of ``MAX_MENTIONS`` name the
#: name only.
QUOTED_MENTIONS = 80
#: Names the extractor judges at most (its entity candidates by rank): a long reference names
#: hundreds of identifiers; the rest are not looked at.
MAX_CANDIDATES = 150


#: Share of a document's lower-case words an English lexicon knows from which it is English: a
#: translation's words ("queste", "funzioni") are no jargon of the corpus.
ENGLISH_SHARE = 0.6
#: The most frequent lower-case words of a document ``_english`` looks at: enough to tell a language.
ENGLISH_SAMPLE = 300


def _english(lower_words: Counter[str]) -> bool:
    """Whether a document's most frequent lower-case words (3 letters or more, ``ENGLISH_SAMPLE``)
    are mostly English (``ENGLISH_SHARE``), so that its unknown lower-case words may be jargon
    (``names._jargon``)."""
    words = [(w, n) for w, n in lower_words.most_common(ENGLISH_SAMPLE) if len(w) >= 3 and w.isalpha()]
    total = sum(n for _, n in words)
    return bool(total) and sum(n for w, n in words if lexicon.dictionary_word(w)) >= ENGLISH_SHARE * total


#: A token of running prose that may be a name: a word of Latin letters, maybe dotted or
#: "::"-joined, not after a path's "/", not inside an address or a hyphenated word ("Linux/s390"
#: and "以下是Linux版本" name Linux).
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9_./@:-])([A-Za-z][A-Za-z0-9_]*(?:(?:\.|::)[A-Za-z_][A-Za-z0-9_]*)*)(?![A-Za-z0-9_@-]|\.\w)"
)


def _name_tokens(sentences: list[_Sentence]) -> list[tuple[str, int]]:
    """(name, sentences naming it) of every one-word name of the prose, most frequent spelling
    first: code ("io_uring", "Queue.get", "x86"), acronyms ("USB", "SoC"), capitalised words no
    dictionary knows ("Linux", "Btrfs") and lower-case jargon (``names._jargon``). A page of such a
    name lists every document whose prose names it, not only those whose names were judged
    (``wiki.coverage``: "Mentioned in"), at a few bytes a name."""
    spelled: dict[str, Counter[str]] = {}
    for sentence in sentences:
        for m in _TOKEN.finditer(sentence.text):
            word = m.group(1)
            low = word.casefold()
            if low in NOT_NAMES or len(word) < 2:
                continue
            spelled.setdefault(low, Counter())[word] += 1
    out: list[tuple[str, int]] = []
    for low, forms in spelled.items():
        word = min(forms, key=lambda f: (-forms[f], f))
        code = "_" in word or "." in word or "::" in word or any(c.isdigit() for c in word)
        caps = sum(c.isupper() for c in word)
        if (
            code
            or (caps >= 2 and not _emphasis(word))
            or (caps == 1 and word[0].isupper() and not lexicon.dictionary_word(low) and len(word) >= 3)
            or (caps == 0 and _jargon(word))
        ) and validate_item_name(word) == word:
            out.append((word, sum(forms.values())))
    return sorted(out, key=lambda t: (-t[1], t[0]))


def _structural_parents(judged: list[_Judged], module: str) -> list[_Judged]:
    """Items for the classes, the module and the packages of a reference whose members are items
    but which no docstring leads ("## ThreadPoolExecutor" with only its methods documented, a
    module without a docstring, "asyncio" of "asyncio.queues"): the kind the reference's layout
    gives them ("`pathlib` is a module.", "`x.Pool` is a class of `x`.", "`asyncio` is a
    package."), a fact of the document, so their pages list their members."""
    have = {one.name for one in judged if one.earned}
    wanted = sorted({one.parent for one in judged if one.earned and one.parent} - have)
    if have and module not in have:
        wanted.append(module)
    out: list[_Judged] = []
    while wanted:
        name = wanted.pop(0)
        if name in have:
            continue
        have.add(name)
        if name == module:
            kind = "a module"
        elif module.startswith(name + "."):
            kind = "a package"  # "asyncio" of "asyncio.queues": a dotted module's packages
        else:
            kind = f"a class of `{name.rpartition('.')[0]}`"
        parent = name.rpartition(".")[0]
        bare = name.rpartition(".")[2]
        out.append(
            _Judged(
                name=name,
                kind="entity",
                named=True,
                earned=True,
                sentences=0,
                subject=0,
                rank=1,
                description=f"`{name}` is {kind}.",
                evidence=[],
                aliases=[bare] if bare != name else [],
                parent=parent,
            )
        )
        if parent and parent not in have:
            wanted.append(parent)
    return out


def _sections(headings: dict[int, str], blocks: int) -> dict[str, tuple[int, int]]:
    """{heading: (its first block, the next heading's block)}: the blocks of each section (the
    first heading of a name wins)."""
    starts = sorted(headings)
    out: dict[str, tuple[int, int]] = {}
    for i, block in enumerate(starts):
        out.setdefault(headings[block].strip(), (block, starts[i + 1] if i + 1 < len(starts) else blocks))
    return out


def _is_title(name: str, title: str) -> bool:
    """Whether ``name`` is what the document is titled ("Oskar Venn", "上海中心大厦"): its subject."""
    return name.casefold() == " ".join(title.split()).casefold()


def _mention_quote(mentions: list[_Sentence], needles: list[str], named: bool, concept: bool = False) -> list[str]:
    """The one sentence a mere mention of a name (no sentence says what it is) offers to quote, for
    a name only (a term no sentence defines is quoted by no page): of the whole sentences of at most
    ``EVIDENCE_CHARS`` among its first ``QUOTE_WINDOW`` mentions that open with it or have it for
    their subject, else that use it whole as an object (``_object_mention``: "The maximal size of a
    chunk that can be allocated with kmalloc is limited."), the most central one, the name opening
    it first ("vmalloc space must be ..."), then the one naming it nearest its start, then the
    shortest. A hub page no sentence describes is led by it (``wiki.coverage.NAME_HUB_DOCS``)."""
    if not named:
        return []
    best: tuple | None = None
    for sentence in mentions[:QUOTE_WINDOW]:
        text = sentence.text
        if len(text) > EVIDENCE_CHARS or not _quotable(text) or _UNRESOLVED.match(text):
            continue
        if not has_cjk(text) and len(text.split()) < 4:
            continue
        probe = text.lower() if concept else text
        at = min((p for n in needles if (p := probe.find(n)) >= 0), default=len(text))
        subject = at <= 4 or _is_subject(needles, concept, text, compound=True)
        if not subject and not _object_mention(probe, needles):
            continue  # "If UTF8 is enabled, charset MUST be None": names it, says nothing of it
        key = (not subject, at > 4, at / max(1, len(text)), len(text), sentence.start)
        if best is None or key < best[0]:
            best = (key, text)
    return [best[1]] if best else []


#: Words after which a name is the object of a verb or a preposition ("use kmalloc for ...",
#: "allocated with kmalloc is ...") and words that may follow it there, where it heads its phrase
#: (not "coroutine local variables", a modifier).
_OBJECT_BEFORE = frozenset(
    {"use", "uses", "using", "with", "via", "by", "from", "through", "call", "calls", "like", "called", "named"}
)
_OBJECT_AFTER = frozenset({"for", "in", "on", "to", "with", "and", "or", "is", "are", "was", "were", "can", "will"})
_NEXT_WORD = re.compile(r"\s*([\w]+|[.,;:)])")


def _object_mention(probe: str, needles: list[str]) -> bool:
    """Whether ``probe`` (a sentence, lower-cased for a term) names one of ``needles`` whole as the
    object of a verb or a preposition (``_OBJECT_BEFORE``), followed by the end of a clause or a
    word that ends its phrase (``_OBJECT_AFTER``)."""
    for needle in needles:
        # str.find, not a pattern per needle: those thrashed re's cache (half the extractor's compiles)
        start = probe.find(needle) if needle else -1
        while start != -1:
            end = start + len(needle)
            before = probe[:start].split()[-1:]
            nxt = _NEXT_WORD.match(probe[end:].removeprefix("()"))
            if (
                before
                and before[0].lower() in _OBJECT_BEFORE
                and _bounded(probe, start, end)
                and nxt is not None
                and (not nxt.group(1)[0].isalnum() or nxt.group(1).lower() in _OBJECT_AFTER)
            ):
                return True
            start = probe.find(needle, end)
    return False


#: Mentions of a name looked at for its most central sentence (``_mention_quote``).
QUOTE_WINDOW = 12


def _choose(judged: list[_Judged], reference: bool) -> tuple[list[ExtractedItem], list[ExtractedItem]]:
    """(items, mentions): the first ``MAX_ENTITIES`` earned entities and ``MAX_CONCEPTS`` earned
    concepts in the judged order become items; the other names, those that say most first (rank,
    then sentences naming them), up to ``MAX_MENTIONS``, mentions. A module's reference keeps its
    members as items up to ``MAX_ITEMS``, the module, its classes and functions first."""
    items: list[ExtractedItem] = []
    rest: list[_Judged] = []
    counts = {"entity": 0, "concept": 0}
    caps = {"entity": MAX_ITEMS if reference else MAX_ENTITIES, "concept": MAX_CONCEPTS}
    if reference:  # the module, its classes and functions before their methods
        judged = sorted(judged, key=lambda one: one.name.count("."))
    for one in judged:
        if one.earned and counts[one.kind] < caps[one.kind] and len(items) < MAX_ITEMS:
            items.append(one.item())
            counts[one.kind] += 1
        else:
            rest.append(one)
    rest.sort(key=lambda j: (-j.rank, -j.subject, -j.sentences, not j.named, j.name))
    mentions = [one.item() for one in rest[:MAX_MENTIONS]]
    # the first ``QUOTED_MENTIONS`` keep what their sentences say; the others name the name only, so
    # a long reference's every name is in the mention index at a few bytes a name
    for mention in mentions[QUOTED_MENTIONS:]:
        mention.description, mention.evidence, mention.rank = "", [], 0
    return items, mentions
