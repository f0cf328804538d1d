"""The index page's introduction, written by the model from the KB's most recent summaries.

Bounded by construction: the prompt holds at most ``RECENT_SUMMARIES`` (200) summaries of at most
``SUMMARY_CHARS`` characters each (about 12k tokens), whatever the KB's size, and a KB's intro is
written again only when fewer than ``KEEP_OVERLAP`` of the summaries it was written from are among
the recent ones (so about once per 50 new documents, not once per index rebuild). The answer is
plain prose: wiki-link and Markdown-link syntax is defused, whitespace collapsed, and it is cut at
a sentence end within ``MAX_INTRO_CHARS``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import structlog

from wiki.extract.llm.client import ChatClient
from wiki.extract.llm.grounding import Refusal, ground_prose, usable_source
from wiki.extract.llm.plain import drop_tags, escape_angles
from wiki.models import Page
from wiki.render import neutral

log = structlog.get_logger(__name__)

#: Characters of each summary shown to the model.
SUMMARY_CHARS = 240
#: Longest introduction kept, in characters (a paragraph).
MAX_INTRO_CHARS = 900
#: The share of the stored intro's summaries still among the recent ones under which it is rewritten.
KEEP_OVERLAP = 0.75

_PROMPT = (
    "You write the introduction of a wiki made from a knowledge base named {name!r}. Below are the titles"
    " and summaries of its {n} most recent documents. In 2 to 4 plain sentences, say what the knowledge"
    " base is about and what a reader finds in it. Use only what the summaries say; no lists, no links,"
    " no headings, no preamble.\n\n{listing}"
)


def stale(written_from: Sequence[str] | None, recent: Sequence[str]) -> bool:
    """Whether an intro written from the summary slugs ``written_from`` (None: none yet) should be
    written again for the ``recent`` slugs: too few of them are still recent (``KEEP_OVERLAP``)."""
    if not recent:
        return False
    if not written_from:
        return True
    kept = len(set(written_from) & set(recent))
    return kept < KEEP_OVERLAP * len(recent)


def intro_messages(kb_name: str, summaries: Sequence[Page]) -> list[dict[str, str]]:
    """The one-message prompt: each summary as "- title: its first ``SUMMARY_CHARS`` characters"."""
    listing = "\n".join(f"- {p.title}: {' '.join((p.summary or p.content).split())[:SUMMARY_CHARS]}" for p in summaries)
    return [{"role": "user", "content": _PROMPT.format(name=kb_name, n=len(summaries), listing=listing)}]


def clean_intro(text: str, source: str | None = None) -> str:
    """The model's answer as one paragraph of plain prose (:func:`plain_paragraph`, grounded on
    ``source``, the prompt's summaries, when given), at most ``MAX_INTRO_CHARS``; "" when nothing
    is left."""
    refused: list[Refusal] = []
    intro = plain_paragraph(text, MAX_INTRO_CHARS, source=source, refused=refused)
    for refusal in refused:
        log.info("llm.refused", line=refusal.line(), call="index intro")
    return intro


_WIKI_LINK = re.compile(r"\[\[([^\]|]*)(?:\|([^\]]*))?\]\]")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_HEADING_LINE = re.compile(r"^[ \t]*#{1,6}[ \t].*$", re.M)
_LINE_MARK = re.compile(r"^[ \t]*(?:[-*+][ \t]+|\d{1,3}[.)][ \t]+|>[ \t]*)", re.M)
# heading marks inside a line ("LVM2: ## How snapshot is used"), copied from a source: "C#" keeps its mark
_INLINE_HEADING = re.compile(r"(?<!\S)#{1,6}[ \t]+")


def plain_paragraph(
    text: str,
    max_chars: int,
    handles: Mapping[str, str] | None = None,
    *,
    source: str | None = None,
    refused: list[Refusal] | None = None,
) -> str:
    """A model's prose answer as one paragraph of plain text: a ``<think>`` block and fences dropped;
    a wiki link kept as its display text (``[[p2]]`` as the title ``handles`` gives handle ``p2``,
    else as its target), a Markdown link as its text; heading lines, heading marks inside a line,
    and list and quote marks at line starts, dropped; HTML tags dropped and ``<``/``>`` escaped
    (``plain.drop_tags``, ``plain.escape_angles``); any bracket left defused (``wiki.render.neutral``); whitespace
    collapsed; with ``source`` (the text the answer was written from), the sentences
    ``grounding.ground_prose`` refuses dropped (appended to ``refused``); cut at the last sentence
    end within ``max_chars`` (else at ``max_chars``). "" when nothing is left."""
    handles = handles or {}
    text = drop_tags(re.sub(r"^\s*<think>.*?</think>", "", text, flags=re.S).replace("```", " "))
    if source is not None:  # before links become their words: a sentence goes with its link
        text, why = ground_prose(text, usable_source(source))
        if refused is not None:
            refused += why
    text = _WIKI_LINK.sub(lambda m: m.group(2) or handles.get(m.group(1).strip().lower(), m.group(1)), text)
    text = _LINE_MARK.sub("", _HEADING_LINE.sub("", _MD_LINK.sub(r"\1", text)))
    text = neutral(escape_angles(_INLINE_HEADING.sub("", text)))
    if len(text) > max_chars:
        cut = max(text.rfind(end, 0, max_chars) for end in (". ", "! ", "? ", "。"))
        text = text[: cut + 1] if cut > 0 else text[:max_chars]
    return text.strip()


def write_intro(client: ChatClient, kb_name: str, summaries: Sequence[Page], deadline: float | None = None):
    """One plain-text completion; returns (intro, answer). Raises what ``ChatClient.complete`` raises
    (``ModeRejected``, ``LLMConfigError``, ``LLMUnavailable``)."""
    messages = intro_messages(kb_name, summaries)
    answer = client.complete(messages, "fenced", {}, deadline=deadline)
    intro = clean_intro(answer.content, messages[0]["content"]) if answer.finish_reason in ("stop", None) else ""
    return intro, answer
