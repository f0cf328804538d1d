"""Merge rules of a reduce batch, with no I/O: what one slug's plan makes of its live page, a
merged page's type and name, and how many facts and aliases a page keeps.

``stages.reduce`` plans a batch (which items go to which slug, a few cached lookups) and writes it;
everything here depends on its arguments only, so a page reads the same whatever order its
sources arrived (or left) in, and the rules are tested without a database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from wiki.models import ITEM_TYPES, MAX_SUMMARY_CHARS, Document, Extraction, Page, PageLite, PageType, SourceRef
from wiki.render import lead_inputs, lead_key, render_item_page, render_summary_page
from wiki.slugs import normalize_name, slugify

MAX_FACT_SOURCES = 20  # per-source facts kept on a page; source refs are all kept
MAX_ALIASES = 20  # aliases kept per source fact and per page


@dataclass
class SlugPlan:
    """Everything a batch changes on one slug: contributions to add and sources to drop."""

    title: str
    page_type: str
    add: dict[str, dict] = field(default_factory=dict)  # knowledge id -> fact
    refs: dict[str, str] = field(default_factory=dict)  # knowledge id -> document title
    drop: set[str] = field(default_factory=set)  # knowledge ids retracted here
    summary_of: tuple[Document, Extraction] | None = None  # summary pages only


class BatchPages:
    """The entity/concept pages a reduce batch has resolved items to so far, by slug and by name
    key: what a later batch would find in PostgreSQL, for items later in this one."""

    def __init__(self) -> None:
        self.pages: dict[str, PageLite] = {}
        self.by_key: dict[str, str] = {}  # name key -> slug

    def add(self, key: str, page: PageLite) -> None:
        """Record that items of name key ``key`` went to ``page`` (an existing or a new page)."""
        self.pages.setdefault(page.slug, page)
        self.by_key.setdefault(key, page.slug)


def _by_title(ref: tuple[str, str]) -> tuple[str, str]:
    """Sort key of a (knowledge id, title) source ref: its title, then its id."""
    return ref[1], ref[0]


def next_page(
    tenant_id: int, kb_id: str, slug: str, sp: SlugPlan, page: Page | None
) -> tuple[str, Page | None, str | None]:
    """What one slug's plan makes of its live page ``page`` (None when there is none).

    Returns (outcome, page, target): ``written`` with the new page, ``unchanged`` with the current
    page (None when there is none and nothing to write) or ``deleted`` with None (no source left);
    target is the slug the page should move to, or None. An entity/concept page is named by its
    sources, not by the first one: its title is the ``canonical_name`` of the names its sources'
    facts give, its aliases their other names and aliases, so a page reads the same whatever
    order its sources arrived (or left) in.
    """
    refs = {r.knowledge_id: r.title for r in (page.source_refs if page else [])}
    facts = dict(page.facts) if page else {}
    for kid in sp.drop:
        refs.pop(kid, None)
        facts.pop(kid, None)
    refs.update(sp.refs)
    facts.update(sp.add)
    # Facts are kept and numbered in an order of the documents themselves (their summary slugs),
    # not of their arrival, so a page reads the same whatever order its sources came in.
    ordered = sorted(facts, key=lambda kid: (facts[kid].get("summary_slug", ""), kid))[:MAX_FACT_SOURCES]
    facts = {kid: {**facts[kid], "seq": i} for i, kid in enumerate(ordered, 1)}
    if not refs:
        return ("deleted" if page else "unchanged"), None, None
    page_type = page.page_type if page else sp.page_type
    if page_type in ITEM_TYPES:
        page_type = item_type([f.get("kind") or page_type for f in facts.values()])
    target = None
    if sp.summary_of is not None or page_type == PageType.summary:
        title = sp.title or (page.title if page else slug)
        aliases = []
    else:
        names = [f["name"] for f in facts.values() if f.get("name")]
        title = canonical_name(names) if names else (page.title if page else sp.title or slug)
        # every spelling the sources gave is an alias, case variants too ("Photons", "PHOTONS" of
        # "photons"): a set of strings, so the same in every order
        named = {a for f in facts.values() for a in [f.get("name", ""), *f.get("aliases", [])] if a and a != title}
        aliases = sorted(named, key=lambda a: (normalize_name(a), a))[:MAX_ALIASES]
        if names and slugify(title) != slug:
            target = slugify(title)
    lead = key = ""
    if sp.summary_of is not None:
        doc, extraction = sp.summary_of
        content = render_summary_page(extraction, doc.source_uri, facts[doc.id]["links"])
        summary = extraction.summary
    elif page_type == PageType.summary:  # a summary losing a second source: its content stays its document's
        content, summary = page.content, page.summary
    else:
        content, lead, key = item_content(title, facts, aliases, len(refs), page)
        summary = item_summary(facts, lead)
    new = Page(
        tenant_id=tenant_id,
        knowledge_base_id=kb_id,
        slug=slug,
        title=title,
        page_type=page_type,
        content=content,
        summary=summary,
        aliases=aliases,
        # by title, so the vault's "sources" list is the same whatever the documents' ids
        source_refs=[SourceRef(knowledge_id=k, title=t) for k, t in sorted(refs.items(), key=_by_title)],
        facts=facts,
        lead=lead,
        lead_key=key,
    )
    if (
        page is not None
        and page.content == new.content
        and page.source_refs == new.source_refs
        and page.aliases == new.aliases
        and page.title == new.title
        and page.page_type == new.page_type
    ):
        return "unchanged", page, target
    return "written", new, target


def item_content(
    title: str, facts: dict[str, dict], aliases: list[str], n_refs: int, stored: Page | None
) -> tuple[str, str, str]:
    """An entity/concept page's content from its contributions, and the (lead, lead key) it keeps.

    The ``stored`` page's model-written lead is kept while the page's ``lead_key`` is the one it
    was written for (same title, same first contributions); otherwise the page opens with
    ``best_lead`` and keeps no lead ("", "") until ``stages.leads`` writes one (``lead_due``)."""
    key = lead_key(title, lead_inputs(facts))
    lead = stored.lead if stored is not None and key and stored.lead_key == key else ""
    return render_item_page(title, facts, aliases, n_refs, lead=lead), lead, key if lead else ""


def lead_due(page: Page) -> tuple[list[str], str] | None:
    """What a model should write ``page``'s lead from, as (``lead_inputs``, their ``lead_key``), when
    it is an entity/concept page that at least two contributions describe, without a lead written
    for them; else None."""
    if page.page_type not in ITEM_TYPES:
        return None
    inputs = lead_inputs(page.facts)
    key = lead_key(page.title, inputs)
    return (inputs, key) if key and page.lead_key != key else None


def item_summary(facts: dict[str, dict], lead: str) -> str:
    """An entity/concept page's one-line summary: its model-written lead, else its first source's
    description (``MAX_SUMMARY_CHARS`` at most)."""
    first = next((f for _, f in sorted(facts.items(), key=lambda kv: kv[1].get("seq", 0))), {})
    return (lead or first.get("description", ""))[:MAX_SUMMARY_CHARS]


def item_type(kinds: Iterable[str]) -> str:
    """The type of an entity/concept page from the kinds its sources' items gave it: the most
    frequent, "entity" on a tie. Order-free, so a page's type does not depend on which of its
    documents created it."""
    kinds = list(kinds)
    return PageType.entity if kinds.count("entity") >= kinds.count("concept") else PageType.concept


def canonical_name(names: Iterable[str]) -> str:
    """The name a page of these (merged) names goes by: the one with the smallest slug, then the
    smallest string. Order-free, so a KB that saw its documents in another order, or lost some,
    names the page like a fresh ingest of the documents it has; singular forms win over plurals
    ("connection" before "connections") because a prefix sorts first."""
    return min(names, key=lambda n: (slugify(n), n))


def new_page_slugs(name: str, kind: str) -> Iterator[str]:
    """The slugs a new entity/concept page named ``name`` tries, in order, until one is free: its
    name's slug, then that slug suffixed with its kind ("c", "c-entity", "c-entity-2", ...)."""
    base = slugify(name)
    yield base
    n = 1
    while True:
        yield f"{base}-{kind}" + (f"-{n}" if n > 1 else "")
        n += 1
