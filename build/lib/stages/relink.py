"""Batched lookups for relinking pages: which link targets are dead and where they should point
(which pages the phrases of each page mention is ``wiki.mentions.mentions_by_page``).

Cross-link (a batch's touched pages) and lint (a window of the walk, or one page under ``--fix``)
ask the same questions about many pages at once; these answer them in a few statements whatever
the number of pages, so a caller never pays one round trip per page or per link.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from psycopg import Connection

from repos.pages import WikiPageRepository
from wiki.links import fuzzy_resolve, parse_links
from wiki.models import PageLite
from wiki.slugs import normalize_name, normalize_slug

SIMILAR_K = 5

Resolver = Callable[[str, str | None], str | None]


def dead_link_resolver(
    pages: WikiPageRepository, kb_id: str, contents: Iterable[str], conn: Connection | None = None
) -> tuple[Resolver, set[str]]:
    """A ``rewrite_links`` resolver for every link of ``contents``, and the set of dead targets.

    Live targets resolve to themselves; a dead one through ``fuzzy_resolve`` (the documented
    order: display text equal to a title or alias, then equal slugs without hyphens, underscores
    and case, then bigram Jaccard >= 0.8, else None: plain text) over every candidate any stage
    could pick: the pages whose title or alias is the display text (exact keys), the top-K
    trigram-similar titles of the display text (else the slug read as words), and the top-K
    pages whose slug equals or is trigram-similar to the dead slug's ``normalize_slug``. Looking
    candidates up by the slug too is what lets ``[[bei-jing-daxing|北京大兴]]`` reach the live
    ``beijing-daxing`` when no title is the display text. Four statements for all the texts.
    """
    links = [link for content in contents for link in parse_links(content)]
    live = pages.existing_slugs(kb_id, {link.slug for link in links}, conn=conn)
    dead_links = [link for link in links if link.slug not in live]
    dead = {link.slug for link in dead_links}
    if not dead:
        return (lambda target, _display: target), dead

    def query(target: str, display: str | None) -> str:
        return display or target.replace("-", " ")

    names = {query(link.slug, link.display) for link in dead_links}
    similar = pages.similar_titles_many(kb_id, names, k=SIMILAR_K)
    exact: dict[str, list[PageLite]] = defaultdict(list)
    for key, page in pages.title_matches(kb_id, {k for n in names for k in (n.lower(), normalize_name(n))}):
        exact[key].append(page)
    by_slug = pages.similar_slugs_many(kb_id, {normalize_slug(s) for s in dead}, k=SIMILAR_K)

    def resolve(target: str, display: str | None) -> str | None:
        if target not in dead:
            return target
        name = query(target, display)
        candidates = [
            *similar.get(name.lower(), []),
            *exact.get(name.lower(), []),
            *exact.get(normalize_name(name), []),
            *by_slug.get(normalize_slug(target), []),
        ]
        return fuzzy_resolve(target, display, candidates)

    return resolve, dead
