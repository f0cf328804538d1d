"""Page rules of a reduce batch, with no I/O: a page's name, type and aliases from the names its
documents give, the slugs a new page tries, and which lead an entity or concept page shows.

``stages.item_pages`` plans the pages of the name keys a batch touched from the mention index
(``wiki.coverage``); everything here depends on its arguments only, so a page reads the same
whatever order its sources arrived (or left) in, and the rules are tested without a database.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from wiki.models import ITEM_TYPES, MAX_SUMMARY_CHARS, Fact, Page, PageType
from wiki.render import lead_inputs, lead_key, ordered_facts, with_lead
from wiki.slugs import normalize_name, slugify

MAX_ALIASES = 20  # aliases kept per page


def canonical_name(names: Iterable[str]) -> str:
    """The name a page of these (merged) names goes by: the one with the smallest slug, then the
    smallest string. Order-free, so a KB that saw its documents in another order, or lost some,
    names the page like a fresh ingest of the documents it has; singular forms win over plurals
    ("connection" before "connections") because a prefix sorts first."""
    return min(names, key=lambda n: (slugify(n), n))


def title_and_aliases(names: Mapping[tuple[str, bool], int]) -> tuple[str, list[str]]:
    """(title, aliases) of a page from {(name, is an alias): documents giving it}: the title is
    the name the most documents give it ("sysfs", not the "SYSFS" of one heading), ties to the
    ``canonical_name`` (aliases only when no document gives a name), the aliases every other
    spelling, case variants too ("Photons", "PHOTONS" of "photons"), sorted by ``normalize_name``
    then string, at most ``MAX_ALIASES``. Counts and strings only: the same in every order."""
    given = {name: docs for (name, alias), docs in names.items() if docs > 0 and not alias}
    every = {name for (name, _), docs in names.items() if docs > 0}
    if given:
        most = max(given.values())
        title = canonical_name(name for name, docs in given.items() if docs == most)
    else:
        title = canonical_name(every)
    aliases = sorted(every - {title}, key=lambda a: (normalize_name(a), a))[:MAX_ALIASES]
    return title, aliases


def item_type(entity: int, docs: int, lead_kind: str = "") -> str:
    """The type of an entity/concept page: the kind of the row its lead comes from (``lead_kind``,
    ``wiki.coverage.best``'s first: the module a reference documents is an entity even where most
    documents name it as a word), else how many of its ``docs`` documents took it for an entity,
    the most frequent kind, "entity" on a tie. Order-free: both are functions of the page's rows."""
    if lead_kind in (PageType.entity, PageType.concept):
        return PageType(lead_kind)
    return PageType.entity if 2 * entity >= docs else PageType.concept


def new_page_slugs(name: str, kind: str) -> Iterator[str]:
    """The slugs a new entity/concept page named ``name`` tries, in order, until one is free: its
    name's slug, then that slug suffixed with its kind ("c", "c-entity", "c-entity-2", ...)."""
    base = slugify(name)
    yield base
    n = 1
    while True:
        yield f"{base}-{kind}" + (f"-{n}" if n > 1 else "")
        n += 1


def keep_lead(page: Page, stored: Page | None) -> Page:
    """``page`` (rendered with its chosen lead) with the ``stored`` page's model-written lead when
    that was written for ``page``'s title and first contributions (``lead_key``), else as it is."""
    if stored is None or not stored.lead or page.page_type not in ITEM_TYPES:
        return page
    key = lead_key(page.title, lead_inputs(page.facts))
    if not key or stored.lead_key != key:
        return page
    return page.model_copy(
        update={
            "content": with_lead(page.content, stored.lead),
            "lead": stored.lead,
            "lead_key": key,
            "summary": item_summary(page.facts, stored.lead),
        }
    )


def lead_due(page: Page) -> tuple[list[str], str] | None:
    """What a model should write ``page``'s lead from, as (``lead_inputs``, their ``lead_key``), when
    it is an entity/concept page that at least two contributions describe, without a lead written
    for them; else None."""
    if page.page_type not in ITEM_TYPES:
        return None
    inputs = lead_inputs(page.facts)
    key = lead_key(page.title, inputs)
    return (inputs, key) if key and page.lead_key != key else None


def item_summary(facts: Mapping[str, Fact], lead: str) -> str:
    """An entity/concept page's one-line summary: its model-written lead, else its first
    contribution's description (``MAX_SUMMARY_CHARS`` at most)."""
    first = next((f.description for f in ordered_facts(facts) if f.description), "")
    return (lead or first)[:MAX_SUMMARY_CHARS]
