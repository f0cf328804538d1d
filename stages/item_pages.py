"""The entity and concept pages of the name keys a reduce batch touched, made from the mention index.

A batch changes the mention rows of its documents (``wiki.coverage.rows_of``: the rows they give
now, in place of the rows they gave before). Every name key whose rows change is planned again
from what the index holds once the batch is written: whether it has a page
(``wiki.coverage.has_page`` on its counters, title and best rows), its title and aliases (the names its rows give),
its lead and quotes (its best rows, the batch's documents merged with the stored ones), what it is
a member of, its members, and its related pages (the items of the documents it quotes). Each of
these is a bounded read per key (a counter row, a few names, at most ``MAX_QUOTES`` rows), never a
scan of the KB, and a function of the key's rows only, so the pages are the same whatever order
the documents came in. What a page shows of other keys' pages (their titles in its link lists,
whether they have one, its slug among the pages whose titles slugify alike) is planned again
whenever those change (``_showing``, ``_slug_shares``), so it is no record of the order either.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from repos.mentions import MentionRepository
from stages.batch_context import BatchContext
from wiki.coverage import (
    DISAMBIGUATION_MIN,
    MAX_QUOTES,
    KeyStats,
    MentionRow,
    bare_name,
    best,
    disambiguation_slug,
    facts_of,
    has_page,
    may_have_page,
    name_deltas,
    stats_after,
)
from wiki.dedup import name_key
from wiki.merge import item_summary, item_type, new_page_slugs, title_and_aliases
from wiki.models import ITEM_TYPES, KnowledgeBase, Page, PageLite, PageType, SourceRef
from wiki.render import MEMBER_OF, MEMBERS, RELATED, SEE_ALSO, LinkSection, render_disambiguation_page, render_item_page
from wiki.slugs import RESERVED_SLUGS, slugify

#: Members an entity page lists (a module's classes, a class's methods); the rest are counted.
MAX_MEMBERS = 40
#: Related pages an entity or concept page lists: the items of the documents it quotes that are no
#: member of a class or module, the most shared first (a short list, not a count of the rest).
MAX_RELATED = 12


@dataclass
class ItemPlan:
    """What a batch does to entity and concept pages, and to the mention index.

    ``pages``: slug -> the page as the batch leaves it (without a stored model lead: the writer
    keeps it, ``wiki.merge.keep_lead``); ``deleted``: slugs of item pages that have no name key
    with a page any more; ``slug_of``: name key -> slug of every key with a page after the batch
    that the batch knows of; and the index's changes (rows, counters, names)."""

    pages: dict[str, Page] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    slug_of: dict[str, str] = field(default_factory=dict)
    moves: dict[str, str] = field(default_factory=dict)
    dropped: list[MentionRow] = field(default_factory=list)
    added: list[MentionRow] = field(default_factory=list)
    stat_deltas: dict[str, KeyStats] = field(default_factory=dict)
    name_deltas: dict[tuple[str, str, bool], int] = field(default_factory=dict)


def plan_item_pages(
    kb: KnowledgeBase,
    new_rows: dict[str, dict[str, MentionRow]],
    batch_ids: set[str],
    *,
    ctx: BatchContext,
    mentions: MentionRepository,
    taken: set[str],
) -> ItemPlan:
    """Plan the item pages of every name key the batch's documents named before or name now.

    ``new_rows``: knowledge id -> {key: row} of the documents the batch ingests (retracted ones
    give none); ``batch_ids``: every document of the batch (ingested and retracted); ``taken``:
    slugs new pages must not take (the batch's summaries). Reads only the keys concerned."""
    plan = ItemPlan()
    plan.dropped = mentions.rows_of_docs(kb.id, batch_ids)
    plan.added = [row for rows in new_rows.values() for row in rows.values()]
    # pages citing the batch's documents (their quotes come from them): pages written before the
    # mention index are found this way too, and planned again from it
    citing = ctx.lite(s for slugs in ctx.slugs_citing_many(batch_ids).values() for s in slugs)
    legacy = {s: p for s, p in citing.items() if p.page_type in ITEM_TYPES}
    touched = {r.key for r in [*plan.dropped, *plan.added]}
    touched |= {r.parent for r in [*plan.dropped, *plan.added] if r.parent}
    touched |= {name_key(p.title) for p in legacy.values()}
    by_key = ctx.by_name_keys(touched)
    found = {p.slug for pages in by_key.values() for p in pages}
    plan.deleted |= {slug for slug in legacy if slug not in found}  # keyed by an older rule: planned again
    stats = stats_after(mentions.stats(kb.id, touched), plan.dropped, plan.added)
    plan.stat_deltas = stats_after({}, plan.dropped, plan.added)
    plan.name_deltas = name_deltas(plan.dropped, plan.added)
    resolved = _Resolved(kb, mentions, ctx, stats, by_key, plan.name_deltas, plan.added, batch_ids)
    resolved.resolve(touched)
    # a page shows other keys' pages (its "Member of", "Members" and "Related" link them by their
    # titles): when a key's page appears, goes or takes another title, the pages showing it are
    # planned again, as a fresh ingest would have made them
    changed = {k for k in touched if resolved.shown(k) != _shown_now(by_key.get(k))}
    touched |= _showing(kb, mentions, ctx, changed, batch_ids, plan.added)
    # the pages a touched code name shares its bare name with ("Queue": queue.Queue and
    # asyncio.queues.Queue) are planned again with it: their "See also" and their disambiguation page
    sharing = _sharing(kb, mentions, touched, plan.name_deltas)
    touched |= {k for keys in sharing.values() for k in keys}
    resolved.resolve(touched)
    # the pages sharing a slug with a page that appears, goes, is retitled or sits where its title
    # does not put it are planned again with it: the slug is shared out among them all
    shares = _slug_shares(ctx, resolved, touched)
    touched |= {k for keys in shares.values() for k in keys}
    resolved.resolve(touched)
    worthy, titled, chosen = resolved.worthy, resolved.titled, resolved.chosen
    shares = {base: keys & worthy for base, keys in shares.items() if keys & worthy}
    members = _members(kb, mentions, worthy, batch_ids, plan.added)
    ambiguous = {bare: sorted(keys & worthy) for bare, keys in sharing.items()}
    ambiguous = {bare: keys for bare, keys in ambiguous.items() if len(keys) >= DISAMBIGUATION_MIN}

    # slugs: a key's live page keeps its slug, but in a slug's share-out (``_slug_shares``): the
    # pages whose titles slugify alike take that slug and its suffixed forms in (title, key) order,
    # so the same pages get the same slugs whatever order they came in
    for key in sorted(touched - worthy):
        plan.deleted.update(p.slug for p in by_key.get(key, []))
    shared = {k for keys in shares.values() for k in keys}
    for key in sorted(worthy):
        live = by_key.get(key, [])
        plan.deleted.update(p.slug for p in live[1:])  # written under an older rule: one page per key
        if key not in shared:
            plan.slug_of[key] = live[0].slug
    bases = {slugify(titled[key][0]) for key in worthy}
    for base in sorted(shares):
        for key in sorted(shares[base], key=lambda k: (titled[k][0], k)):
            kind = _page_type(stats[key], chosen[key])
            plan.slug_of[key] = next(
                s
                for s in new_page_slugs(titled[key][0], kind)
                if s not in RESERVED_SLUGS and s not in taken and not _held(s, base, plan, ctx, shared, bases)
            )
            live = by_key.get(key, [])
            if live and live[0].slug != plan.slug_of[key]:
                plan.moves[live[0].slug] = plan.slug_of[key]

    related = _related(kb, mentions, chosen, new_rows, batch_ids)
    linked = {k for ks in [*related.values(), *members.values()] for k in ks} | {
        r.parent for rows in chosen.values() for r in rows if r.parent
    }
    titles = _titles(ctx, linked - plan.slug_of.keys() - touched)  # a touched key has a page only if worthy
    titles.update({key: (plan.slug_of[key], titled[key][0]) for key in worthy})
    for key in sorted(worthy):
        title, aliases = titled[key]
        slug, rows = plan.slug_of[key], chosen[key]
        facts = facts_of(rows)
        parent = next((r.parent for r in rows if r.parent), "")
        bare = bare_name(key)
        # only a page its disambiguation page lists links it: whether another page's bare name is
        # ambiguous is no fact of this key's rows ("Command.spawn" beside the pages called "spawn")
        see_also = [(disambiguation_slug(bare), f"{bare} (disambiguation)")] if key in ambiguous.get(bare, ()) else []
        sections = [
            LinkSection(MEMBER_OF, [titles[parent]] if parent in titles and parent != key else []),
            _section(MEMBERS, [titles[m] for m in members.get(key, []) if m in titles and m != key], MAX_MEMBERS),
            # a member's family is its "Member of" and its module's members, not pages related to it
            LinkSection(
                RELATED,
                [] if parent else [titles[r] for r in related.get(key, []) if r in titles and r != key][:MAX_RELATED],
            ),
            LinkSection(SEE_ALSO, see_also),
        ]
        plan.pages[slug] = Page(
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            slug=slug,
            title=title,
            page_type=_page_type(stats[key], rows),
            content=render_item_page(title, facts, aliases, sections=sections),
            summary=item_summary(facts, ""),
            aliases=aliases,
            source_refs=[SourceRef(knowledge_id=r.knowledge_id, title=r.doc_title) for r in rows],
            facts=facts,
        )
    ctx.lite(disambiguation_slug(bare) for bare in sharing)
    for bare in sorted(sharing):
        slug, title = disambiguation_slug(bare), f"{bare} (disambiguation)"
        if bare not in ambiguous or slug in plan.pages:
            live = ctx.lite([slug]).get(slug)
            if live is not None and live.title == title and slug not in plan.pages:
                plan.deleted.add(slug)  # "queue" and "Queue" share the slug: only this name's page goes
            continue
        entries = [(p.slug, p.title, p.summary) for p in (plan.pages[plan.slug_of[k]] for k in ambiguous[bare])]
        plan.pages[slug] = Page(
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            slug=slug,
            title=title,
            page_type=PageType.disambiguation,
            content=render_disambiguation_page(bare, entries),
            summary=f"{bare} is the name of {len(entries)} pages.",
            source_refs=[ref for k in ambiguous[bare] for ref in plan.pages[plan.slug_of[k]].source_refs[:1]],
        )
    plan.deleted -= plan.pages.keys()
    return plan


class _Resolved:
    """What the mention index says of name keys once the batch is written, read for the keys asked
    (each once): their counters (in ``stats``), the live pages of each (in ``by_key``), and for the
    keys that may have a page their names, best rows, title and whether they have a page."""

    def __init__(
        self,
        kb: KnowledgeBase,
        mentions: MentionRepository,
        ctx: BatchContext,
        stats: dict[str, KeyStats],
        by_key: dict[str, list[PageLite]],
        deltas: dict[tuple[str, str, bool], int],
        added: list[MentionRow],
        batch_ids: set[str],
    ) -> None:
        self.kb, self.mentions, self.ctx, self.stats, self.by_key = kb, mentions, ctx, stats, by_key
        self.deltas, self.batch_ids = deltas, batch_ids
        self.added: dict[str, list[MentionRow]] = {}
        for row in added:
            self.added.setdefault(row.key, []).append(row)
        self.done: set[str] = set()
        self.worthy: set[str] = set()  # keys with a page once the batch is written
        self.titled: dict[str, tuple[str, list[str]]] = {}  # key -> (title, aliases)
        self.chosen: dict[str, list[MentionRow]] = {}  # key -> its best rows (wiki.coverage.best)

    def resolve(self, keys: set[str]) -> None:
        """Read and decide the keys not resolved yet."""
        keys = keys - self.done
        self.done |= keys
        missing = keys - self.stats.keys()
        if missing:
            self.stats.update(self.mentions.stats(self.kb.id, missing))
        self.by_key.update(self.ctx.by_name_keys(keys - self.by_key.keys()))
        maybe = {key for key in keys if may_have_page(self.stats.get(key, KeyStats()))}
        names = self.mentions.names(self.kb.id, maybe)
        for (key, name, alias), delta in self.deltas.items():
            if key in maybe:
                bucket = names.setdefault(key, {})
                bucket[(name, alias)] = bucket.get((name, alias), 0) + delta
        stored = self.mentions.best_rows(self.kb.id, maybe, exclude=self.batch_ids, limit=MAX_QUOTES)
        for key in maybe:
            self.chosen[key] = best([*stored.get(key, []), *self.added.get(key, [])])
            if names.get(key):  # a key with rows always has names; none only for a key being emptied
                self.titled[key] = title_and_aliases(names[key])
                if has_page(self.stats[key], self.titled[key][0], self.chosen[key]):
                    self.worthy.add(key)

    def shown(self, key: str) -> str | None:
        """The title other pages show a resolved key's page by, None when it has none."""
        return self.titled[key][0] if key in self.worthy else None


def _shown_now(live: list[PageLite] | None) -> str | None:
    """The title other pages show a key's live page by (``_Resolved.shown`` before the batch)."""
    return live[0].title if live else None


def _showing(
    kb: KnowledgeBase,
    mentions: MentionRepository,
    ctx: BatchContext,
    keys: set[str],
    batch_ids: set[str],
    added: list[MentionRow],
) -> set[str]:
    """The keys whose pages show one of ``keys``' pages: its members (their "Member of"), the
    classes and modules it is a member of (their "Members"), and the pages quoting a document it
    is an item of (their "Related", ``_related``). Bounded by the rows of ``keys`` and the pages
    citing their documents; the batch's own documents are left out (every page citing them is
    planned already)."""
    if not keys:
        return set()
    found = {k for members in _members(kb, mentions, keys, batch_ids, added).values() for k in members}
    parents, items_of = mentions.relations(kb.id, keys, exclude=batch_ids)
    found |= {parent for key in keys for parent in parents.get(key, ())}
    docs = {kid for key in keys for kid in items_of.get(key, ())}
    citing = ctx.lite(s for slugs in ctx.slugs_citing_many(docs).values() for s in slugs)
    found |= {name_key(p.title) for p in citing.values() if p.page_type in ITEM_TYPES}
    return found


def _sharing(
    kb: KnowledgeBase, mentions: MentionRepository, keys: set[str], deltas: dict[tuple[str, str, bool], int]
) -> dict[str, set[str]]:
    """{bare name: the code keys going by it (``wiki.coverage.bare_name``)} for the bare names of
    ``keys``, once the batch's name changes (``deltas``) are counted."""
    bares = {bare for key in keys if (bare := bare_name(key))}
    counts = mentions.keys_aliased(kb.id, bares)
    for (key, name, alias), delta in deltas.items():
        if alias and name in bares:
            bucket = counts.setdefault(name, {})
            bucket[key] = bucket.get(key, 0) + delta
    return {
        bare: {k for k, docs in counts.get(bare, {}).items() if docs > 0 and bare_name(k) == bare} for bare in bares
    }


def _page_type(stats: KeyStats, rows: list[MentionRow]) -> str:
    """The type of a key's page (``wiki.merge.item_type``) from its counters and best rows."""
    return item_type(stats.entity, stats.docs, rows[0].kind if rows else "")


def _held(slug: str, base: str, plan: ItemPlan, ctx: BatchContext, shared: set[str], bases: set[str]) -> bool:
    """Whether a page whose title slugifies to ``base`` may not take ``slug``: a key was given it
    already, it is another title's own slug (``bases``: those of the keys with a page that the
    batch knows; a title's slug goes to a page of that title before it is any other title's
    suffixed slug), or a page that keeps it is live there (not deleted by the batch, nor of a key
    being given its slug, ``shared``)."""
    if slug in plan.slug_of.values() or (slug != base and slug in bases):
        return True
    page = ctx.lite([slug]).get(slug)
    if page is None or slug in plan.deleted:
        return False
    if page.page_type not in ITEM_TYPES or (slug != base and slugify(page.title) == slug):
        return True
    return name_key(page.title) not in shared


def _suffixed(base: str, n: int) -> list[str]:
    """The ``n``-th suffixed slugs of ``base`` of each kind (``wiki.merge.new_page_slugs``' order)."""
    return [f"{base}-{kind}" + (f"-{n}" if n > 1 else "") for kind in ITEM_TYPES]


def _fits(slug: str, base: str, kind: str) -> bool:
    """Whether ``slug`` is one ``wiki.merge.new_page_slugs`` gives a page of ``kind`` whose title
    slugifies to ``base``: the slug itself, or it suffixed with the kind (and a number from 2)."""
    return re.fullmatch(rf"{re.escape(base)}(?:-{kind}(?:-(?:[2-9]|[1-9][0-9]+))?)?", slug) is not None


def _slug_shares(ctx: BatchContext, resolved: _Resolved, touched: set[str]) -> dict[str, set[str]]:
    """{slug: the keys whose pages share it out} for the slugs whose share-out a batch changes:
    the title slug of every touched key whose page is new, retitled or not at one of its title's
    slugs (``wiki.merge.new_page_slugs``), the title slug of every page that goes or is retitled,
    and the title slug of a page holding one of those as a suffixed slug (it gives it up). The
    keys are those with a page once the batch is written whose title slugifies to it: the
    batch's, and the live pages at the slug and its suffixed forms (where a share-out puts them),
    probed a few slugs at a time."""
    bases: set[str] = set()
    for key in touched:
        live = resolved.by_key.get(key) or []
        now = slugify(resolved.titled[key][0]) if key in resolved.worthy else None
        if live and slugify(live[0].title) != now:
            bases.add(slugify(live[0].title))  # its old slug's share-out loses it
        if now is not None:
            kind = _page_type(resolved.stats[key], resolved.chosen[key])
            if not live or slugify(live[0].title) != now or not _fits(live[0].slug, now, kind):
                bases.add(now)
    shares: dict[str, set[str]] = {base: set() for base in bases}
    probe = {base: [base, *_suffixed(base, 1)] for base in bases}
    n = dict.fromkeys(bases, 1)
    while probe:
        found = ctx.lite(s for slugs in probe.values() for s in slugs)
        more: dict[str, list[str]] = {}
        for base, slugs in probe.items():
            for page in (found[s] for s in slugs if s in found and found[s].page_type in ITEM_TYPES):
                key, own = name_key(page.title), slugify(page.title)
                if own != base and page.slug != base:
                    continue  # another title's page at one of this title's suffixed slugs: it keeps it
                if key not in touched:
                    shares.setdefault(own, set()).add(key)  # a live page that stays as it is, but may move
                if own not in n:  # it holds this title's slug as a suffixed one of its own: it gives it up
                    n[own], more[own] = 1, [own, *_suffixed(own, 1)]
            if any(s in found for s in _suffixed(base, n[base])):
                n[base] += 1
                more[base] = _suffixed(base, n[base])
        probe = more
    for key in touched & resolved.worthy:
        base = slugify(resolved.titled[key][0])
        if base in shares:
            shares[base].add(key)
    return {base: keys for base, keys in shares.items() if keys}


def _section(heading: str, links: list[tuple[str, str]], limit: int) -> LinkSection:
    unique = list(dict.fromkeys(links))
    return LinkSection(heading, unique[:limit], max(0, len(unique) - limit))


def _titles(ctx: BatchContext, keys: set[str]) -> dict[str, tuple[str, str]]:
    """{key: (slug, title)} of the live item pages of ``keys`` (keys without one are left out)."""
    return {key: (found[0].slug, found[0].title) for key, found in ctx.by_name_keys(keys).items() if found}


def _members(
    kb: KnowledgeBase,
    mentions: MentionRepository,
    keys: set[str],
    batch_ids: set[str],
    added: list[MentionRow],
) -> dict[str, list[str]]:
    """{key: keys of its members} once the batch is written: rows naming it as their parent,
    the batch's documents' stored rows replaced by their new ones."""
    stored = mentions.children(kb.id, keys, exclude=batch_ids)
    out = {key: set(found) for key, found in stored.items()}
    for row in added:
        if row.parent in keys:
            out.setdefault(row.parent, set()).add(row.key)
    return {key: sorted(found) for key, found in out.items()}


def _related(
    kb: KnowledgeBase,
    mentions: MentionRepository,
    chosen: dict[str, list[MentionRow]],
    new_rows: dict[str, dict[str, MentionRow]],
    batch_ids: set[str],
) -> dict[str, list[str]]:
    """{key: related keys}: the items (earned keys) of the documents the key's page quotes that
    are no member of a class or module, most shared first, then by key: what the summaries of its
    documents connect it to, without a module's every method (its own page lists those)."""
    docs = {r.knowledge_id for rows in chosen.values() for r in rows}
    earned = mentions.earned_keys(kb.id, docs - batch_ids)
    for kid, rows in new_rows.items():
        earned[kid] = sorted(k for k, r in rows.items() if r.earned and not r.parent)
    out: dict[str, list[str]] = {}
    for key, rows in chosen.items():
        counts = Counter(k for r in rows for k in earned.get(r.knowledge_id, []) if k != key)
        out[key] = [k for k, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return out
