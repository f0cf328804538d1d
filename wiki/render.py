"""Markdown for summary, entity/concept and index pages, built from stored facts.

Pages are rendered from data (an extraction, or the per-source facts a page keeps), so a page
can be rewritten from its remaining sources after one is retracted.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence

from wiki.models import Extraction, Page, PageLite

MAX_SOURCES_SHOWN = 20
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
_ITEM_SECTION_RE = re.compile(f"^## (?:{'|'.join(ITEM_SECTIONS.values())})$")


def neutral(text: str) -> str:
    """Text from a document with wiki-link brackets defused, so quoted text never makes a link."""
    return _LINKISH.sub(lambda m: m.group(0)[0] + "\u200b" + m.group(0)[1], " ".join(text.split()))


def link(slug: str, display: str) -> str:
    """A ``[[slug|display]]`` link; ``|`` and brackets in the display text are replaced."""
    clean = display.replace("|", "/").replace("[", "(").replace("]", ")").strip() or slug
    return f"[[{slug}|{clean}]]"


def ordered_facts(facts: dict[str, dict]) -> list[tuple[str, dict]]:
    """Per-source facts in the order sources were added (jsonb does not keep key order)."""
    return sorted(facts.items(), key=lambda kv: (kv[1].get("seq", 0), kv[0]))


def lead_rank(description: str) -> int:
    """How well a source's one-sentence description says what its subject is: 2 for "X is a ...",
    "X refers to ...", "X, the ..., ...", "X是…", "XとはY"; 1 for "X provides/implements/returns
    ..."; 0 for anything else."""
    if _DEFINES_WHAT.search(description):
        return 2
    return 1 if _DEFINES_WHAT_IT_DOES.search(description) else 0


def best_lead(descriptions: Sequence[str]) -> str:
    """The page's lead among its sources' descriptions: the strongest (``lead_rank``), then the one
    nearest ``LEAD_CHARS`` characters, then the smallest string. It depends on the set of
    descriptions only, never on the order the sources came in. "" when there is none."""
    present = [d for d in descriptions if d]
    if not present:
        return ""
    return min(present, key=lambda d: (-lead_rank(d), abs(len(d) - LEAD_CHARS), d))


#: Contributions a model-written lead is written from: the page's first ones (``ordered_facts``,
#: i.e. by their documents' summary slugs), so a page cited by 1,000 documents costs what one cited
#: by 4 does, and a new source changes the lead's input only when it sorts among the first.
LEAD_SOURCES = 4
#: Characters of a contribution's first quote shown beside its description.
LEAD_QUOTE_CHARS = 160


def lead_inputs(facts: dict[str, dict]) -> list[str]:
    """What a model lead of the page is written from: for each of its first ``LEAD_SOURCES``
    contributions that has a description, "description" or "description (quote)", one line each,
    at most about 400 characters each (descriptions are bounded by the extractor's schema)."""
    lines: list[str] = []
    for _, fact in ordered_facts(facts):
        description = " ".join(fact.get("description", "").split())
        if not description:
            continue
        quote = " ".join((fact.get("evidence") or [""])[0].split())[:LEAD_QUOTE_CHARS]
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


def render_item_page(title: str, facts: dict[str, dict], aliases: Sequence[str], n_sources: int, lead: str = "") -> str:
    """An entity or concept page: what it is, what each source says (cited), and its sources.

    ``facts`` maps knowledge id -> {doc_title, summary_slug, description, evidence[]}; at most
    ``MAX_SOURCES_SHOWN`` sources are listed, the rest counted. The lead is ``lead`` (a model's,
    written from ``lead_inputs``) or else ``best_lead`` of the sources' descriptions; evidence is
    quoted whole, as the extractor found it.
    """
    ordered = ordered_facts(facts)
    description = lead or best_lead([f.get("description", "") for _, f in ordered])
    lines = [neutral(description) or f"**{neutral(title)}** is a topic of this knowledge base.", ""]
    if aliases:
        lines += ["**Also known as:** " + ", ".join(neutral(a) for a in aliases), ""]
    lines += ["## What the sources say", ""]
    for _, fact in ordered[:MAX_SOURCES_SHOWN]:
        cite = link(fact["summary_slug"], fact["doc_title"])
        for sentence in fact.get("evidence", [])[:MAX_EVIDENCE_PER_SOURCE]:
            lines.append(f"- {neutral(sentence)} ({cite})")
    lines += ["", "## Sources", ""]
    lines += [f"- {link(f['summary_slug'], f['doc_title'])}" for _, f in ordered[:MAX_SOURCES_SHOWN]]
    if n_sources > MAX_SOURCES_SHOWN:
        lines.append(f"- and {n_sources - MAX_SOURCES_SHOWN} more sources")
    return "\n".join(lines).strip() + "\n"


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
    recent: Sequence[Page],
    most_cited: Mapping[str, Sequence[tuple[PageLite, int]]] | None = None,
    intro: str = "",
) -> str:
    """The index page: an ``intro`` paragraph when a model wrote one, per-type counts, the entity
    and concept pages cited by the most documents (``most_cited``: page type -> (page, number of
    documents), most first) and the most recent summaries; every list is bounded by the caller."""
    total = sum(v for k, v in counts.items() if k != "index")
    lines = [f"Wiki of **{neutral(kb_name)}**: {total} pages.", ""]
    if intro:
        lines += [neutral(intro), ""]
    lines += ["## Pages by type", ""]
    for page_type in ("summary", "entity", "concept"):
        lines.append(f"- {page_type}: {counts.get(page_type, 0)}")
    for page_type, heading in ITEM_SECTIONS.items():
        cited = (most_cited or {}).get(page_type, [])
        if cited:
            lines += ["", f"## Most-cited {heading.lower()}", ""]
            lines += [
                f"- {link(page.slug, page.title)} ({n} {'document' if n == 1 else 'documents'})" for page, n in cited
            ]
    lines += ["", f"## Recent documents ({len(recent)})", ""]
    for page in recent:
        tail = f": {neutral(page.summary)[:200]}" if page.summary else ""
        lines.append(f"- {link(page.slug, page.title)}{tail}")
    return "\n".join(lines).strip() + "\n"


def listed_link_starts(content: str) -> set[int]:
    """Offsets of the links :func:`render_summary_page` writes itself: the link that opens each list
    item under an "## Entities" or "## Concepts" heading. Every other link to an entity or concept
    page in a rendered page was added by cross-linking."""
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
