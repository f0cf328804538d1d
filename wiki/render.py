"""Markdown for summary, entity/concept and index pages, built from stored facts.

Pages are rendered from data (an extraction, or the per-source facts a page keeps), so a page
can be rewritten from its remaining sources after one is retracted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from wiki.models import Extraction, Fact, Page, PageLite
from wiki.plural import counted

#: Quotes an entity or concept page shows (from as many documents, one each first).
QUOTES_SHOWN = 8
MAX_EVIDENCE_PER_SOURCE = 2

_LINKISH = re.compile(r"\[\[|\]\]")
# How strongly a source's description says what the page's subject is (``lead_rank``).
_DEFINES_WHAT = re.compile(
    r"^.{0,100}?(?:\b(?:is|are)\s+(?:a|an|the|one)\b|\b(?:refers to|stands for|consists of)\b)"
    r"|^[^,]{1,80},\s+(?:a|an|the)\s[^,]{1,80},|^.{1,40}?(?:是|为|とは|は.{1,80}(?:である|です)。)"
)
_DEFINES_WHAT_IT_DOES = re.compile(
    r"^.{0,100}?\b(?:provides?|implements?|represents?|contains?|defines?|describes?|allows?|enables?|"
    r"manages?|handles?|stores?|holds?|supports?|offers?|creates?|controls?|returns?)\b"
)
#: A description this close to 120 characters wins among equally strong ones: long enough to say
#: what the thing is, short enough to read as a lead.
LEAD_CHARS = 120

#: The headings of a summary page's lists of its entity and concept pages.
ITEM_SECTIONS = {"entity": "Entities", "concept": "Concepts"}
#: The headings of an entity or concept page's link lists (``LinkSection``).
MEMBER_OF, MEMBERS, RELATED, SEE_ALSO, MAY_REFER_TO = "Member of", "Members", "Related", "See also", "May refer to"
_LISTED_SECTIONS = (*ITEM_SECTIONS.values(), MEMBER_OF, MEMBERS, RELATED, SEE_ALSO, MAY_REFER_TO)
_ITEM_SECTION_RE = re.compile(f"^## (?:{'|'.join(_LISTED_SECTIONS)})$")


def neutral(text: str) -> str:
    """Text from a document with wiki-link brackets defused, so quoted text never makes a link."""
    return _LINKISH.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1], " ".join(text.split()))


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: str) -> str:
    """``text`` as Markdown that renders as that text: every ASCII punctuation character
    backslash-escaped (CommonMark allows it for all of them), so a name such as
    ``[x](https://example.com)`` or ``**x**`` is never a link or emphasis; wiki links defused too."""
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", neutral(text))


def link(slug: str, display: str) -> str:
    """A ``[[slug|display]]`` link; ``|`` and brackets in the display text are replaced."""
    clean = display.replace("|", "/").replace("[", "(").replace("]", ")").strip() or slug
    return f"[[{slug}|{clean}]]"


def ordered_facts(facts: Mapping[str, Fact]) -> list[Fact]:
    """Per-source facts in the order sources were added (``Fact.seq``; jsonb keeps no key order)."""
    return [facts[k] for k in sorted(facts, key=lambda k: (facts[k].seq, k))]


def lead_rank(description: str) -> int:
    """How well a source's one-sentence description says what its subject is: 2 for "X is a ...",
    "X refers to ...", "X, the ..., ...", "X是…", "XとはY"; 1 for "X provides/implements/returns
    ..."; 0 for anything else."""
    if _DEFINES_WHAT.search(description):
        return 2
    return 1 if _DEFINES_WHAT_IT_DOES.search(description) else 0


def _lead_source(ordered: list[Fact], description: str) -> tuple[str, str] | None:
    """(summary slug, document title) of the contribution ``description`` (a page's lead) came
    from, or None."""
    return next(((f.summary_slug, f.doc_title) for f in ordered if f.description == description), None)


def first_lead(facts: Mapping[str, Fact]) -> str:
    """The page's lead among its contributions: the first description in their order
    (``ordered_facts``: the best rows first, ``wiki.coverage.MentionRow.order``, so the strongest
    definition of the document that says most of the subject), else the first quote (a hub name
    no sentence describes, ``wiki.coverage.NAME_HUB_DOCS``). "" when there is neither."""
    ordered = ordered_facts(facts)
    described = next((f.description for f in ordered if f.description), "")
    # a name no document says anything of as its subject: the most central sentence naming it
    return described or next((f.evidence[0] for f in ordered if f.evidence), "")


#: Contributions a model-written lead is written from: the page's first ones (``ordered_facts``,
#: i.e. by their documents' summary slugs), so a page cited by 1,000 documents costs what one cited
#: by 4 does, and a new source changes the lead's input only when it sorts among the first.
LEAD_SOURCES = 4
#: Characters of a contribution's first quote shown beside its description.
LEAD_QUOTE_CHARS = 160


def lead_inputs(facts: Mapping[str, Fact]) -> list[str]:
    """What a model lead of the page is written from: for each of its first ``LEAD_SOURCES``
    contributions that has a description, "description" or "description (quote)", one line each,
    at most about 400 characters each (descriptions are bounded by the extractor's schema)."""
    lines: list[str] = []
    for fact in ordered_facts(facts):
        description = " ".join(fact.description.split())
        if not description:
            continue
        quote = " ".join((fact.evidence or [""])[0].split())[:LEAD_QUOTE_CHARS]
        line = f"{description} (quoted: {quote})" if quote else description
        if line not in lines:
            lines.append(line)
        if len(lines) == LEAD_SOURCES:
            break
    return lines


def lead_key(title: str, inputs: Sequence[str]) -> str:
    """16 hex digits naming a lead's input (the page's title and ``lead_inputs``): a stored lead is
    shown only while its page's key is unchanged. "" when fewer than two contributions describe the
    page: one source's own description is its lead, there is nothing to synthesise."""
    if len(inputs) < 2:
        return ""
    return hashlib.sha256("\n".join([title, *inputs]).encode()).hexdigest()[:16]


class LinkSection(NamedTuple):
    """A list of links an entity or concept page ends with: its ``heading``, the (slug, display)
    ``links`` and how many ``more`` there are than it shows."""

    heading: str
    links: Sequence[tuple[str, str]]
    more: int = 0


def render_item_page(
    title: str, facts: Mapping[str, Fact], aliases: Sequence[str], lead: str = "", sections: Sequence[LinkSection] = ()
) -> str:
    """An entity or concept page: what it is, what the sources say (cited), and its link lists.

    ``facts`` maps knowledge id -> ``Fact``, in the order of their ``seq`` (the best rows first).
    The lead is ``lead`` (a model's, written from ``lead_inputs``) or else ``first_lead``; then up
    to ``QUOTES_SHOWN`` quotes, one per document first (a second one of each only when fewer
    documents have one), each as the extractor found it with its document cited; then ``sections``
    (members, what it is a member of, related pages) as lists whose links cross-linking keeps
    (``listed_link_starts``). Which documents mention the page is not part of it: that list grows
    with the KB, so readers show it from the mention index.
    """
    ordered = ordered_facts(facts)
    description = lead or first_lead(facts)
    lines = [neutral(description) or f"**{neutral(title)}** is a topic of this knowledge base.", ""]
    if aliases:
        lines += ["**Also known as:** " + ", ".join(neutral(a) for a in aliases), ""]
    quotes: list[str] = []
    for depth in range(MAX_EVIDENCE_PER_SOURCE):
        for fact in ordered:
            if depth < len(fact.evidence) and len(quotes) < QUOTES_SHOWN:
                quotes.append(f"- {neutral(fact.evidence[depth])} ({link(fact.summary_slug, fact.doc_title)})")
    if quotes:
        lines += ["## What the sources say", "", *quotes, ""]
    elif not lead and (source := _lead_source(ordered, description)):
        # no quote to cite the page by: the lead cites the document it was made from
        lines[0] += f" ({link(*source)})"
    for section in sections:
        if section.links:
            lines += [f"## {section.heading}", ""]
            lines += [f"- {link(slug, display)}" for slug, display in section.links]
            if section.more:
                lines.append(f"- and {section.more} more")
            lines.append("")
    return "\n".join(lines).strip() + "\n"


_LIST_LINK = re.compile(r"^- \[\[([^\]|]+)\|([^\]]*)\]\]$")
_MORE = re.compile(r"^- and (\d+) more$")


def link_sections(content: str) -> list[LinkSection]:
    """The link lists an entity or concept page's ``content`` ends with (``render_item_page``'s
    ``sections``), read back, so a page can be rendered again from its facts without them being
    planned again (lint's repair of a page citing documents that are gone)."""
    sections: list[LinkSection] = []
    heading = None
    links: list[tuple[str, str]] = []
    more = 0
    for line in [*content.split("\n"), "## end"]:
        if line.startswith("## "):
            if heading is not None:
                sections.append(LinkSection(heading, links, more))
            title = line[3:].strip()
            heading = title if title in (MEMBER_OF, MEMBERS, RELATED, SEE_ALSO) else None
            links, more = [], 0
        elif heading is not None and (m := _LIST_LINK.match(line)):
            links.append((m.group(1), m.group(2)))
        elif heading is not None and (m := _MORE.match(line)):
            more = int(m.group(1))
    return sections


def render_disambiguation_page(bare: str, entries: Sequence[tuple[str, str, str]]) -> str:
    """The page of a bare name several code pages go by ("Queue"): one line saying so and a list
    of them, (slug, title, one-line summary) each, in the given order."""
    lines = [
        f"**{neutral(bare)}** is the name of {len(entries)} pages of this knowledge base.",
        "",
        f"## {MAY_REFER_TO}",
        "",
    ]
    for slug, title, summary in entries:
        tail = f": {neutral(summary)}" if summary else ""
        lines.append(f"- {link(slug, title)}{tail}")
    return "\n".join(lines).strip() + "\n"


def with_lead(content: str, lead: str) -> str:
    """An entity or concept page's ``content`` opening with ``lead`` instead of its own first line
    (the lead ``render_item_page`` wrote): how a model-written lead replaces the chosen one."""
    _, _, rest = content.partition("\n")
    return neutral(lead) + "\n" + rest


def render_summary_page(
    extraction: Extraction, source_uri: str, item_links: Sequence[tuple[str, str, str, str]]
) -> str:
    """A document's summary page: its body, its source, and links to its entity and concept pages.

    ``item_links`` are (kind, slug, display, description) tuples in the extraction's order.
    """
    lines = [neutral_paragraphs(extraction.body), ""]
    if source_uri:
        lines += [f"**Source:** `{source_uri.replace('`', '')}`", ""]
    for kind, heading in ITEM_SECTIONS.items():
        entries = [it for it in item_links if it[0] == kind]
        if entries:
            lines += [f"## {heading}", ""]
            for _, slug, display, description in entries:
                tail = f": {neutral(description)}" if description else ""
                lines.append(f"- {link(slug, display)}{tail}")
            lines.append("")
    return "\n".join(lines).strip() + "\n"


def neutral_paragraphs(body: str) -> str:
    """``neutral`` applied per paragraph, keeping paragraph breaks."""
    return "\n\n".join(neutral(p) for p in body.split("\n\n") if p.strip())


def render_index_page(
    kb_name: str,
    counts: dict[str, int],
    documents: Sequence[Page],
    most_cited: Mapping[str, Sequence[tuple[PageLite, int]]] | None = None,
    intro: str = "",
) -> str:
    """The index page: an ``intro`` paragraph when a model wrote one, per-type counts, the entity
    and concept pages cited by the most documents (``most_cited``: page type -> (page, number of
    documents), most first) and the first summaries A-Z (``documents``), counting the others;
    every list is bounded by the caller."""
    total = sum(v for k, v in counts.items() if k != "index")
    lines = [f"Wiki of **{markdown_text(kb_name)}**: {counted(total, 'page')}.", ""]
    if intro:
        lines += [neutral(intro), ""]
    lines += ["## Pages by type", ""]
    # every type the total counts, so the list adds up to it (disambiguation pages included)
    for page_type in ("summary", "entity", "concept", "disambiguation"):
        if page_type != "disambiguation" or counts.get(page_type):
            lines.append(f"- {page_type}: {counts.get(page_type, 0)}")
    for page_type, heading in ITEM_SECTIONS.items():
        cited = (most_cited or {}).get(page_type, [])
        if cited:
            lines += ["", f"## Most-cited {heading.lower()}", ""]
            lines += [f"- {link(page.slug, page.title)} (quotes {counted(n, 'document')})" for page, n in cited]
    # A-Z, not most recent first: the order pages were written in is the order documents arrived
    # in and the batches they were reduced in, and the same documents make the same index
    total = max(counts.get("summary", 0), len(documents))
    lines += ["", f"## Documents ({total})", ""]
    for page in documents:
        tail = f": {neutral(page.summary)[:200]}" if page.summary else ""
        lines.append(f"- {link(page.slug, page.title)}{tail}")
    if total > len(documents):
        lines.append(f"- and {total - len(documents)} more")
    return "\n".join(lines).strip() + "\n"


def listed_link_starts(content: str) -> set[int]:
    """Offsets of the links the renderers write themselves: the link that opens each list item
    under a summary's "## Entities" or "## Concepts" heading and under an entity or concept page's
    link lists (``LinkSection``). Every other link to an entity or concept page in a rendered page
    was added by cross-linking."""
    starts: set[int] = set()
    in_list = False
    pos = 0
    for line in content.splitlines(keepends=True):
        text = line.rstrip("\n")
        if text.startswith("#"):
            in_list = _ITEM_SECTION_RE.match(text) is not None
        elif in_list and text.startswith("- [["):
            starts.add(pos + 2)
        pos += len(line)
    return starts
