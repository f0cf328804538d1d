"""The lint checks: one ``LintCheck`` object per kind of issue, all of them in :data:`CHECKS`.

A check is everything lint knows of one kind of issue: its name (the issue type), the label of
the summary line, its severity, its weight in the health score, the bounded per-window query
that gathers what it needs to know about other pages (``gather``), the rule that finds its
issues on one page (``find``), and, when ``--fix`` can mend it, the fix (``fix``). The walk
(``stages.lint``) knows none of them by name.

Adding a check: append one ``LintCheck`` to :data:`CHECKS` and test it (``tests/integration/
test_lint_checks.py`` shows one built in a test). Its ``gather`` calls a ``repos.lint.LintRepository``
or ``WikiPageRepository`` method; only a check that needs a question no repository answers yet
also adds that query there (SQL stays in ``repos/``). The health score stays comparable across
the addition: weights are relative (the score divides by their sum) and every report records
the checks and weights it was scored with (``wiki.lint.score_version``) and the pages each check
found affected, so older reports can be rescored over the checks both share (``docs/decisions.md``).

Order matters twice: :data:`CHECKS` is the order of the summary line, the text output and the
report's keys; ``fix_rank`` is the order the fixes of one page run in (a fix that deletes or
archives the page ends that page's fixes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from repos.lint import LintRepository
from repos.pages import ITEM_TYPES, WikiPageRepository
from stages.relink import dead_link_resolver
from wiki import lint as rules
from wiki.links import candidate_phrases, parse_links, rewrite_links
from wiki.lint import CheckInfo, Finding, LintIssue, LintPage
from wiki.mentions import mentions_by_page
from wiki.merge import item_summary, keep_lead
from wiki.models import KnowledgeBase, PageLite
from wiki.render import link_sections, render_item_page
from wiki.revisions import Writer, written_by

#: Who the fixes' page versions are written by (``wiki.revisions``).
LINT = written_by(Writer.lint)


@dataclass
class Window:
    """One window of the walk (at most ``repos.lint.WINDOW`` pages) and what a check's query may use."""

    kb: KnowledgeBase
    pages: Sequence[LintPage]
    lint: LintRepository
    wiki_pages: WikiPageRepository
    min_chars: int


@dataclass
class Mended:
    """What one check's fix did to one page: reported issues mended, page writes (also of other
    pages, such as in-links relinked after a delete) and whether the page is gone from the walk
    (deleted or archived: later fixes of the page are skipped)."""

    fixed: int = 0
    written: int = 0
    done: bool = False


class PageFix:
    """The fixes of one page under ``--fix``: the repositories, and the one relink every link fix shares.

    ``relinked()`` runs :func:`relink_page` once per page (dead links repaired, then unlinked
    mentions linked) and returns (slugs linked, dead slugs repaired); a later call returns the
    same answer. ``relink_due`` asks for that run even when no link check reported anything
    (a page re-rendered by a stale-source fix lost its cross-links).
    """

    def __init__(
        self,
        kb: KnowledgeBase,
        page: LintPage,
        *,
        pool,
        lint: LintRepository,
        wiki_pages: WikiPageRepository,
        min_chars: int,
    ) -> None:
        self.kb, self.page, self.pool, self.lint, self.wiki_pages = kb, page, pool, lint, wiki_pages
        self.min_chars = min_chars
        self.relink_due = False
        self._relinked: tuple[set[str], set[str]] | None = None
        self.relink_written = 0

    def relinked(self) -> tuple[set[str], set[str]]:
        """(slugs linked, dead slugs repaired) of this page's one relink, run on the first call."""
        if self._relinked is None:
            self._relinked = relink_page(self.pool, self.wiki_pages, self.lint, self.kb.id, self.page.slug)
            self.relink_written = int(any(self._relinked))
        return self._relinked

    def relink_in_links(self) -> int:
        """Relink every page that links to this just-deleted or just-archived page; returns pages written.

        A deleted page leaves broken links; a deleted or archived entity/concept page stops being
        a link target, which may uncover a mention its title covered. Pages the walk has passed
        would otherwise keep the issue until the next run. Nothing here was reported, so nothing
        is counted as fixed.
        """
        written = 0
        for source in self.wiki_pages.in_link_sources(self.kb.id, [self.page.slug]):
            linked, repaired = relink_page(self.pool, self.wiki_pages, self.lint, self.kb.id, source)
            written += bool(linked or repaired)
        return written


@dataclass(frozen=True)
class LintCheck(CheckInfo):
    """One kind of issue (see the module docstring).

    ``gather(window)``: the facts the rule needs about the window's pages, from at most a few
    bounded queries (``None`` when the page alone says enough). ``find(page, facts, window)``:
    the page's findings. ``count(page, facts)``: how many issues the page has when ``find``
    returns only a sample of them (None: one per finding). ``fix(ctx, page, issues, n)``: mend
    the page's reported issues of this check, ``n`` of them (``count``'s answer, else
    ``len(issues)``); None: not fixable (``fixable`` must say the same).
    """

    find: Callable[[LintPage, Any, Window], list[Finding]] = field(default=lambda page, facts, window: [])
    gather: Callable[[Window], Any] | None = None
    count: Callable[[LintPage, Any], int] | None = None
    fix: Callable[[PageFix, LintPage, Sequence[LintIssue], int], Mended] | None = None
    fix_rank: int = 0

    def issues(self, page: LintPage, facts: Any, window: Window) -> list[LintIssue]:
        """The page's findings as issues of this check."""
        return [
            LintIssue(
                type=self.name,
                severity=self.severity,
                page=f.page,
                target=f.target,
                description=f.description,
                fixable=self.fixable,
            )
            for f in self.find(page, facts, window)
        ]


# --- the link fixes, shared by broken_link and unlinked_mention ---------------------------------


def _matching_pages(lint: LintRepository, kb_id: str) -> rules.MentionLookup:
    """The mention lookup of ``--fix``: one title-key query of the phrases."""
    return lambda phrases: [page for _, page in lint.title_matches(kb_id, phrases)]


def relink_page(
    pool, wiki_pages: WikiPageRepository, lint: LintRepository, kb_id: str, slug: str
) -> tuple[set[str], set[str]]:
    """Repair dead links, then link unlinked mentions, in one page under its row lock.

    Returns (slugs linked to mentions, dead slugs repaired or stripped); a page that needs
    neither is not written. Dead links are repaired as cross-link repairs
    them; mentions are linked by ``wiki.lint.link_mentions``, the function the check runs, with
    the same title-key lookup, so what the check reported on this text is exactly what is linked.
    """
    with pool.connection() as conn:
        wiki_pages.lock_link_graph(kb_id, conn)  # before the row lock: see its docstring
        page = wiki_pages.get(kb_id, slug, conn=conn, for_update=True)
        if page is None:
            return set(), set()
        resolve, dead = dead_link_resolver(wiki_pages, kb_id, [page.content], conn=conn)
        content, _ = rewrite_links(page.content, resolve)
        lookup = _matching_pages(lint, kb_id)
        content, linked = rules.link_mentions(content, slug, lookup(candidate_phrases(content)), lookup)
        if content == page.content:
            return set(), set()
        wiki_pages.save(page.model_copy(update={"content": content}), conn=conn, written_by=LINT)
    return set(linked), dead


def _fix_broken_links(ctx: PageFix, page: LintPage, issues: Sequence[LintIssue], n: int) -> Mended:
    _, repaired = ctx.relinked()
    return Mended(fixed=len({i.target for i in issues} & repaired))


def _fix_unlinked_mentions(ctx: PageFix, page: LintPage, issues: Sequence[LintIssue], n: int) -> Mended:
    linked, _ = ctx.relinked()
    return Mended(fixed=len({i.target for i in issues} & linked))


# --- stale source refs ---------------------------------------------------------------------------


def _fix_stale_sources(ctx: PageFix, page: LintPage, issues: Sequence[LintIssue], n_stale: int) -> Mended:
    """Remove the page's source refs (and facts) of documents that no longer exist.

    A page left without sources is deleted, as a retract would (its in-links are relinked at
    once); an entity/concept page that still has facts is re-rendered from them so it stops
    quoting the deleted documents, and its cross-links are added again (``relink_due``).
    ``fixed`` is at most ``n_stale``, the refs the walk counted on the page.
    """
    kb_id = ctx.kb.id
    with ctx.pool.connection() as conn:
        ctx.wiki_pages.lock_link_graph(kb_id, conn)  # before the row lock: see its docstring
        full = ctx.wiki_pages.get(kb_id, page.slug, conn=conn, for_update=True)
        if full is None:
            return Mended()
        live = ctx.lint.live_documents(kb_id, [r.knowledge_id for r in full.source_refs], conn=conn)
        refs = [r for r in full.source_refs if r.knowledge_id in live]
        removed = len(full.source_refs) - len(refs)
        if not removed:
            return Mended()
        if not refs:
            deleted = ctx.wiki_pages.delete(kb_id, page.slug, conn=conn)
        else:
            deleted = False
            facts = {k: v for k, v in full.facts.items() if k in live}
            mended = full.model_copy(update={"source_refs": refs, "facts": facts})
            if full.page_type in ITEM_TYPES and facts:
                content = render_item_page(full.title, facts, full.aliases, sections=link_sections(full.content))
                update = {"content": content, "lead": "", "lead_key": "", "summary": item_summary(facts, "")}
                mended = keep_lead(mended.model_copy(update=update), full)
            ctx.wiki_pages.save(mended, conn=conn, written_by=LINT)
            content = mended.content
            ctx.relink_due = ctx.relink_due or content != full.content
        # the version just replaced cites them too: the page's history keeps no deleted document
        ctx.wiki_pages.forget_documents(kb_id, {r.knowledge_id for r in full.source_refs} - live, conn=conn)
    mended = Mended(fixed=min(removed, n_stale), written=1)
    if deleted:
        mended.written += ctx.relink_in_links()
        mended.done = True
    return mended


def _gather_stale(window: Window) -> dict[str, tuple[int, list[tuple[str, str]]]]:
    return window.lint.stale_source_refs(window.kb.id, [p.id for p in window.pages])


# --- empty pages ---------------------------------------------------------------------------------


def _fix_empty_page(ctx: PageFix, page: LintPage, issues: Sequence[LintIssue], n: int) -> Mended:
    """Archive the page if it is still near-empty under its row lock. An archived entity/concept
    page is no longer a link target: where its title or aliases hid a shorter title ("abstract
    base classes" covering "base classes"), that one is now a mention, so its in-links are relinked."""
    kb_id = ctx.kb.id
    with ctx.pool.connection() as conn:
        ctx.wiki_pages.lock_link_graph(kb_id, conn)  # before the row lock: see its docstring
        full = ctx.wiki_pages.get(kb_id, page.slug, conn=conn, for_update=True)
        if full is None or full.status == "archived":
            return Mended()
        lite = LintPage(
            id=full.id or 0,
            slug=full.slug,
            title=full.title,
            page_type=full.page_type,
            status=full.status,
            aliases=full.aliases,
            content=full.content,
        )
        if not rules.empty_page(lite, ctx.min_chars):
            return Mended()
        ctx.wiki_pages.save(full.model_copy(update={"status": "archived"}), conn=conn, written_by=LINT)
    mended = Mended(fixed=1, written=1, done=True)
    if page.page_type in ITEM_TYPES:
        mended.written += ctx.relink_in_links()
    return mended


# --- duplicates and mentions: window lookups -----------------------------------------------------


def _by_key(pages: Sequence[PageLite], keys_of) -> dict[str, list[PageLite]]:
    out: dict[str, list[PageLite]] = defaultdict(list)
    for page in pages:
        for key in keys_of(page):
            out[key].append(page)
    return out


def _gather_duplicates(window: Window) -> tuple[dict[str, list[PageLite]], dict[str, list[PageLite]]]:
    keys = {k for p in window.pages for k in rules.duplicate_keys(p.title)}
    same_title = _by_key(window.lint.pages_titled(window.kb.id, keys), lambda p: [p.title.lower()])
    alias_of = _by_key(window.lint.pages_with_alias(window.kb.id, keys), lambda p: [a.lower() for a in p.aliases])
    return same_title, alias_of


def _find_duplicates(page: LintPage, facts, window: Window) -> list[Finding]:
    same_title, alias_of = facts
    keys = rules.duplicate_keys(page.title)
    return rules.duplicates(
        page, [c for k in keys for c in same_title.get(k, [])], [c for k in keys for c in alias_of.get(k, [])]
    )


def _gather_mentions(window: Window) -> dict[str, dict[str, list[PageLite]]]:
    return mentions_by_page(
        lambda phrases: window.lint.title_matches(window.kb.id, phrases), {p.slug: p.content for p in window.pages}
    )


def _find_unlinked_mentions(page: LintPage, facts, window: Window) -> list[Finding]:
    """``wiki.lint.unlinked_mentions`` of a walked page, its first lookup answered from the window's batch.

    Later rounds (only on a page with findings) look up the phrases of the linked text with
    ``--fix``'s own per-page query, so every round sees what ``--fix`` sees.
    """
    first = [p for found in facts.get(page.slug, {}).values() for p in found]
    return rules.unlinked_mentions(page, first, _matching_pages(window.lint, window.kb.id))


#: Every lint check, in report order. Weights are relative (the first six sum to 100, so each reads
#: as a percentage; the seventh, added later, rescales them: ``wiki.lint.score_version``): the two
#: errors weigh most, an overwritten revert least (it tells the operator, the wiki is no worse).
CHECKS: tuple[LintCheck, ...] = (
    LintCheck(
        name="broken_link",
        label="broken link",
        severity="error",
        weight=25,
        fixable=True,
        gather=lambda w: w.wiki_pages.existing_slugs(
            w.kb.id, {link.slug for p in w.pages for link in parse_links(p.content)}
        ),
        find=lambda page, live, w: rules.broken_links(page, live),
        fix=_fix_broken_links,
        fix_rank=3,
    ),
    LintCheck(
        name="stale_source",
        label="stale source ref",
        severity="error",
        weight=20,
        fixable=True,
        gather=_gather_stale,
        find=lambda page, stale, w: rules.stale_sources(page, *stale.get(page.slug, (0, []))),
        count=lambda page, stale: stale.get(page.slug, (0, []))[0],
        fix=_fix_stale_sources,
        fix_rank=1,
    ),
    # Orphans need a page to link them from, duplicates a merge decision: both are left to people.
    LintCheck(
        name="orphan",
        label="orphan",
        severity="warning",
        weight=15,
        fixable=False,
        gather=lambda w: w.lint.slugs_with_in_links(w.kb.id, [p.slug for p in w.pages]),
        find=lambda page, in_linked, w: rules.orphan(page, page.slug in in_linked),
    ),
    LintCheck(
        name="duplicate",
        label="duplicate",
        severity="warning",
        weight=15,
        fixable=False,
        gather=_gather_duplicates,
        find=_find_duplicates,
    ),
    LintCheck(
        name="empty_page",
        label="empty page",
        severity="warning",
        weight=15,
        fixable=True,
        find=lambda page, _, w: rules.empty_page(page, w.min_chars),
        fix=_fix_empty_page,
        fix_rank=2,
    ),
    LintCheck(
        name="unlinked_mention",
        label="unlinked mention",
        severity="info",
        weight=10,
        fixable=True,
        gather=_gather_mentions,
        find=_find_unlinked_mentions,
        fix=_fix_unlinked_mentions,
        fix_rank=4,
    ),
    # Whether the operator's revert or the ingest's page is right is the operator's call: no fix.
    LintCheck(
        name="overwritten_revert",
        label="overwritten revert",
        severity="warning",
        weight=5,
        fixable=False,
        gather=lambda w: w.lint.overwritten_reverts(w.kb.id, [p.id for p in w.pages]),
        find=lambda page, found, w: rules.overwritten_revert(page, found.get(page.slug)),
    ),
)


def check_named(name: str, checks: Sequence[LintCheck] = CHECKS) -> LintCheck:
    """The check of issue type ``name``; ``KeyError`` when there is none."""
    for check in checks:
        if check.name == name:
            return check
    raise KeyError(name)
