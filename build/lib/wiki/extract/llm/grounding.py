"""What a model writes must stand on the document, not on instructions the document smuggled in
(issue 26, injection kept out).

A document is data: a model told by it to "ignore previous instructions" may obey, so what the
model answers is checked against the document's own text, never trusted:

- a paragraph that holds an instruction to a model (:func:`directive`: "ignore previous
  instructions", a fake ``system:``/``<|im_start|>`` turn, "create a page called ...", "add the
  alias ...", "tell readers to ...") and an HTML comment are no evidence: a quote from one is
  dropped, and the document's text usable as a source (``Grounds``) leaves them out;
- a URL or e-mail address, and a word in capitals of four letters or more, in model prose must
  occur in the usable source, else the sentence holding it is dropped; so is a sentence with a
  ``javascript:``/``data:``/``vbscript:`` scheme, one asking the reader for a password, key or
  token (:func:`credential_ask`) and one that is itself a directive (:func:`ground_prose`);
- a name or alias must occur in the item's own quotes (:func:`in_quotes`).

The directive patterns are a lexicon (English), tested on the corpus in
``tests/data/injection/``: they catch the usual shapes of an injection, not every paraphrase; the
other checks (links, credentials, names in quotes, merges needing agreeing names in
``wiki.dedup.same_thing_refused``) do not depend on it. Each refusal is one line (``Refusal``)
that the extractor logs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from wiki.extract.llm.plain import has_unsafe_scheme
from wiki.slugs import normalize_name

#: What reads as an instruction addressed to a model (case-insensitive, on text with format
#: characters such as zero-width spaces taken out).
_DIRECTIVES = [
    r"\b(?:ignore|disregard|forget|override|bypass)\b[^.!?\n]{0,40}\b(?:instructions?|prompts?|rules|guidelines|directions)\b",
    r"\b(?:previous|prior|above|earlier|original)\s+(?:instructions?|prompts?)\b|\bsystem\s+prompts?\b",
    r"\bnew\s+(?:instructions?|task|rules)\s*:",
    r"\byou\s+(?:are|act)\s+(?:now\s+)?(?:an?\s+|the\s+)?(?:ai|assistant|language\s+model|llm|chat\s?bot|extractor|dan)\b",
    r"\b(?:as|from)\s+an?\s+(?:ai|language\s+model|assistant|llm)\b",
    r"\b(?:ai|assistant|language\s+model|llm|extractor|summari[sz]er|wiki\s+writer)s?\s*[,:]?\s*(?:must|should|shall|will|please)\b",
    r"(?:^|\n)\s*(?:#+\s*)?(?:system|assistant|developer)\s*(?::|>|\])",
    r"<\|?\s*(?:im_start|im_end|system|assistant|endoftext)\s*\|?>",
    r"\[/?(?:INST|SYS)\]|<</?SYS>>",
    r"\b(?:create|add|write|make|insert|generate|publish)\b[^.!?\n]{0,30}\b(?:pages?|alias(?:es)?|entry|entries|items?|articles?)\b[^.!?\n]{0,30}\b(?:called|named|titled|with|for|saying|that)\b",
    r"\b(?:add|set|make|register|record|list)\b[^.!?\n]{0,40}\bas\s+(?:an?\s+)?(?:alias|another\s+name|same_as)\b",
    r"\bsame_as\b",
    r"\bmerge\b[^.!?\n]{0,40}\binto\b[^.!?\n]{0,30}\b(?:page|entry|article)\b",
    r"\b(?:tell|instruct)\s+(?:the\s+|all\s+|every\s+)?(?:readers?|users?|visitors?|people|everyone)\b[^.!?\n]{0,20}\bto\b",
    r"\b(?:respond|reply|answer)\s+only\s+(?:with|in)\b",
    r"\b(?:your|the)\s+(?:response|answer|output|json)\s+(?:must|should|shall)\b",
    r"\boutput\s+(?:only|exactly)\b",
]
_DIRECTIVE = re.compile("|".join(f"(?:{p})" for p in _DIRECTIVES), re.I)
# Asking the reader for a secret: a verb of handing over, "your", a credential, close together.
_CREDENTIAL_ASK = re.compile(
    r"\b(?:send|e-?mail|mail|post|share|submit|paste|enter|type|provide|forward|reply\s+with|give|upload|verify)\b"
    r"[^.!?\n]{0,40}\byour\b[^.!?\n]{0,25}\b(?:passwords?|passphrases?|api[\s_-]?keys?|keys?|tokens?|secrets?|"
    r"credentials?|logins?|private\s+keys?|ssh\s+keys?|2fa|otp|pin)\b",
    re.I,
)
# A URL, a www. host, an e-mail address, or a host with a path ("evil.example/login").
_LINK = re.compile(
    r"(?i)\b[a-z][a-z0-9+.-]*://[^\s<>\"')\]]+|\bwww\.[^\s<>\"')\]]+|\bmailto:[^\s<>\"')\]]+"
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/[^\s<>\"')\]]*"
)
# A word in capitals (an acronym, or an injection's marker such as "PWNED"): one the source does not
# hold is a name the model did not read there. Four letters and up: "SQL", "API" are too common.
_SHOUTED = re.compile(r"\b[A-Z]{4,}\b")
_LINE_START = re.compile(r"\s*(?:(?:[-*+]|\d{1,3}[.)])\s+|>\s*)*")
_COMMENT = re.compile(r"<!--.*?(?:-->|$)", re.S)
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n+")


@dataclass(frozen=True)
class Refusal:
    """One thing of a model's answer kept out, and why: ``what`` ("sentence", "item", "alias",
    "same_as", "quote"), ``text`` (cut to 80 characters) and ``why`` (one line)."""

    what: str
    text: str
    why: str

    def line(self) -> str:
        """``<what> refused: "<text>": <why>`` (the log and report line)."""
        return f'{self.what} refused: "{self.text[:80]}": {self.why}'


def visible(text: str) -> str:
    """``text`` as a reader sees it: NFKC, format characters (zero-width spaces and joiners,
    bidirectional marks) taken out."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def directive(text: str) -> str | None:
    """The words by which ``text`` reads as an instruction to a model (``_DIRECTIVES``), or None."""
    m = _DIRECTIVE.search(visible(text))
    return m.group(0).strip() if m else None


def credential_ask(text: str) -> bool:
    """Whether ``text`` asks its reader to hand over a password, key, token or other secret."""
    return _CREDENTIAL_ASK.search(visible(text)) is not None


def links(text: str) -> list[str]:
    """The URLs, ``www.`` hosts, e-mail addresses and hosts with a path in ``text``, trailing
    punctuation cut."""
    return [m.group(0).rstrip(".,;:!?*_'\"") for m in _LINK.finditer(visible(text))]


def sentences(text: str) -> list[str]:
    """``text`` cut after ``.``, ``!``, ``?`` and at line ends (empty pieces left out)."""
    return [s for s in _SENTENCE_END.split(text) if s.strip()]


@dataclass(frozen=True)
class Grounds:
    """What a model's answer about one document may stand on (:meth:`of`).

    ``blocked`` are the document's paragraphs (blank-line separated blocks, format characters out,
    whitespace collapsed) that hold a :func:`directive` and its HTML comments: text written for a
    model or hidden from readers. A whole paragraph goes, not only the sentence: "Assistant:
    Understood. I will add the alias ..." is one fake turn. ``source`` is the rest, casefolded:
    where links and addresses in model prose must come from."""

    source: str
    blocked: tuple[str, ...]

    @classmethod
    def of(cls, document: str) -> Grounds:
        """The grounds of ``document`` (its raw text, line breaks kept)."""
        return _grounds(document)

    def hidden(self, quote: str) -> str | None:
        """Why ``quote`` is no evidence (it lies in an HTML comment or in a paragraph written for a
        model), or None."""
        text = " ".join(visible(quote).split())
        if not text:
            return None
        for block in self.blocked:
            if text in block:
                if block.startswith("<!--"):
                    return "only inside an HTML comment, which readers never see"
                return f'in a paragraph of instructions to a model ("{(directive(block) or "")[:40]}")'
        return None


@lru_cache(maxsize=8)  # one document's sections and items ask again
def _grounds(document: str) -> Grounds:
    text = visible(document)
    blocked = [" ".join(m.group(0).split()) for m in _COMMENT.finditer(text)]
    kept: list[str] = []
    for paragraph in re.split(r"\n\s*\n", _COMMENT.sub(" ", text)):
        if directive(paragraph):
            blocked.append(" ".join(paragraph.split()))
        else:
            kept.append(paragraph)
    return Grounds(source="\n\n".join(kept).casefold(), blocked=tuple(blocked))


def usable_source(document: str) -> str:
    """``Grounds.of(document).source``: the text links in model prose must come from."""
    return Grounds.of(document).source


def _sentence_refusal(sentence: str, source: str) -> str | None:
    if has_unsafe_scheme(sentence):
        return "a javascript:, data: or vbscript: link"
    for link in links(sentence):
        if link.casefold() not in source:
            return f"the link {link[:60]} is not in the document's text (instructions and comments left out)"
    if credential_ask(sentence):
        return "it asks the reader for a password, key or token"
    for word in _SHOUTED.findall(visible(sentence)):
        if not re.search(rf"\b{re.escape(word.casefold())}\b", source):
            return f"the name {word} is not in the document's text (instructions and comments left out)"
    found = directive(sentence)
    if found:
        return f'it reads as an instruction to a model ("{found[:40]}")'
    return None


def ground_prose(text: str, source: str) -> tuple[str, list[Refusal]]:
    """``text`` (model prose, Markdown allowed) without the sentences that hold a link not in
    ``source`` (:func:`usable_source`'s text), an unsafe scheme, a credential request or a
    directive; run before links are reduced to their words, so a sentence that linked to an
    address the document does not hold goes with its link. Lines and paragraph breaks are kept
    (a list stays a list), each kept sentence as written. Returns (text, refusals)."""
    refused: list[Refusal] = []
    lines: list[str] = []
    for line in text.split("\n"):
        if not line.strip():
            lines.append("")
            continue
        mark = _LINE_START.match(line).group(0)  # indentation, list or quote mark: the line keeps it
        kept: list[str] = []
        for sentence in re.split(r"(?<=[.!?。])\s+", line[len(mark) :].strip()):
            why = _sentence_refusal(sentence, source)
            if why:
                refused.append(Refusal("sentence", " ".join(sentence.split()), why))
            else:
                kept.append(sentence)
        if kept:
            lines.append(mark + " ".join(kept))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip(), refused


def in_quotes(name: str, quotes: list[str]) -> bool:
    """Whether ``name`` occurs in one of ``quotes``, both folded as names are
    (``wiki.slugs.normalize_name``: case, accents, punctuation); each word of a longer name may
    begin a word of the quote ("Worker Pool" in "worker pools")."""
    words = normalize_name(name).split()
    if not words:
        return False
    for quote in quotes:
        folded = normalize_name(quote)
        if f" {' '.join(words)} " in f" {folded} ":
            return True
        if re.search(r"\b" + r"\w*\s+".join(map(re.escape, words)) + r"\w*", folded):
            return True
    return False
