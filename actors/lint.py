"""Lint: walk a KB's pages in constant memory, report problems with a health score, optionally fix them.

The walk reads live, non-archived pages with a keyset cursor in windows of ``WINDOW`` (200)
rows; for each window a handful of bounded queries answer what the checks need about other
pages (which link targets are live, which pages have in-links, which source refs are stale,
which titles are mentioned, which titles are shared). Nothing but the counters and bounded
samples of ``wiki.lint.LintTally`` outlives a window, so memory does not grow with the KB.

``fix=True`` mends what can be mended, page by page, each as a normal page write under the
page's row lock (version bumped, out-links rewritten): stale source refs are removed (a page
left with none is deleted and the pages linking to it are repaired at once), near-empty pages
are archived (an entity/concept page stops being a link target, so the pages linking to it are
relinked at once), and broken links and unlinked mentions are mended by :func:`relink_page`:
dead links as cross-link repairs them (``stages.relink``) (fuzzy resolve else plain text), then
mentions through ``wiki.lint.link_mentions``, the very function the check runs, so the fix
links exactly what was reported and leaves the page where the check finds nothing more.
Fixes never create a fixable issue on a page the walk has already passed, so a second
``fix=True`` run fixes nothing. ``fixed`` counts only reported issues that were mended; when
anything was written, a check-only walk follows and gives the score after the fixes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.declare import actor
from actors.deps import Deps, get_deps
from repos.lint import WINDOW, LintRepository
from stages.relink import dead_link_resolver
from wiki import lint as checks
from wiki.links import candidate_phrases, parse_links, rewrite_links
from wiki.lint import LintIssue, LintPage, LintReport, LintTally
from wiki.mentions import mentions_by_page
from wiki.models import ITEM_TYPES, KnowledgeBase, PageLite
from wiki.render import render_item_page

log = structlog.get_logger(__name__)

class LintArgs(KbArgs):
    """``wiki_lint``: the KB, and whether to fix what can be fixed."""

    fix: bool = False


def run_lint(deps: Deps, tenant_id: int, knowledge_base_id: str, fix: bool = False) -> LintReport:
    """Lint every live page of the KB, store the report as the KB's latest and return it.

    Raises ``repos.knowledge.UnknownKnowledgeBase`` for an unknown or deleted KB or a tenant
    mismatch, also when the KB is deleted during the walk (checked before each window). See the module docstring for what ``fix`` changes.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    repo = LintRepository(deps.pool)
    started, t0 = datetime.now(UTC), time.monotonic()
    tally = _walk(deps, repo, kb, tenant_id, fix)
    after = None
    if fix and tally.pages_written:
        # The state the fixes left, for the score after them: linking adds in-links (fewer
        # orphans), deleting and archiving remove pages and links. Nothing is written here.
        after = _walk(deps, repo, kb, tenant_id, fix=False)
        left = {t: after.counts[t] for t in checks.ISSUE_TYPES if checks.FIXABLE[t] and after.counts[t]}
        if left:
            log.warning("lint.fix_left_issues", knowledge_base_id=kb.id, counts=left)
    report = tally.report(kb.id, kb.name, fix, started, int((time.monotonic() - t0) * 1000), after=after)
    repo.save_report(report)
    return report


def _walk(deps: Deps, repo: LintRepository, kb: KnowledgeBase, tenant_id: int, fix: bool) -> LintTally:
    """One keyset walk of the KB's live, non-archived pages; returns its tally."""
    tally = LintTally()
    after = 0
    while True:
        window = repo.page_window(kb.id, after, WINDOW)
        if not window:
            break
        after = window[-1].id
        deps.kbs.get_active(tenant_id, kb.id)  # a KB deleted mid-walk stops it (and its fixes) here
        _lint_window(deps, repo, kb, window, tally, fix)
    return tally


def _lint_window(deps: Deps, repo: LintRepository, kb: KnowledgeBase, window: Sequence[LintPage],
                 tally: LintTally, fix: bool) -> None:
    """Check one window of pages (and fix them when asked)."""
    targets = {link.slug for page in window for link in parse_links(page.content)}
    live = deps.pages.existing_slugs(kb.id, targets)
    in_linked = repo.slugs_with_in_links(kb.id, [p.slug for p in window])
    stale = repo.stale_source_refs(kb.id, [p.id for p in window])
    keys = {k for p in window for k in checks.duplicate_keys(p.title)}
    same_title = _by_key(repo.pages_titled(kb.id, keys), lambda p: [p.title.lower()])
    alias_of = _by_key(repo.pages_with_alias(kb.id, keys), lambda p: [a.lower() for a in p.aliases])
    mentions = mentions_by_page(lambda phrases: repo.title_matches(kb.id, phrases),
                                {p.slug: p.content for p in window})
    min_chars = deps.settings.min_document_chars
    for page in window:
        page_keys = checks.duplicate_keys(page.title)
        n_stale, stale_sample = stale.get(page.slug, (0, []))
        issues = [
            *checks.broken_links(page, live),
            *checks.orphan(page, page.slug in in_linked),
            *checks.empty_page(page, min_chars),
            *checks.stale_sources(page, n_stale, stale_sample),
            *_unlinked_mentions(repo, kb.id, page, mentions.get(page.slug, {})),
            *checks.duplicates(page, [c for k in page_keys for c in same_title.get(k, [])],
                               [c for k in page_keys for c in alias_of.get(k, [])]),
        ]
        tally.add_page(issues, stale_count=n_stale)
        if fix and any(i.fixable for i in issues):
            _fix_page(deps, repo, kb, page, issues, n_stale, tally)


def _by_key(pages: Sequence[PageLite], keys_of) -> dict[str, list[PageLite]]:
    out: dict[str, list[PageLite]] = defaultdict(list)
    for page in pages:
        for key in keys_of(page):
            out[key].append(page)
    return out


def _matching_pages(repo: LintRepository, kb_id: str) -> checks.MentionLookup:
    """The mention lookup of ``--fix``: one title-key query of the phrases."""
    return lambda phrases: [page for _, page in repo.title_matches(kb_id, phrases)]


def _unlinked_mentions(repo: LintRepository, kb_id: str, page: LintPage,
                       matched: dict[str, list[PageLite]]) -> list[LintIssue]:
    """``checks.unlinked_mentions`` of a walked page, its first lookup answered from the window's batch.

    Later rounds (only on a page with findings) look up the phrases of the linked text with
    ``--fix``'s own per-page query, so every round sees what ``--fix`` sees.
    """
    first = [p for found in matched.values() for p in found]
    lookup = _matching_pages(repo, kb_id)
    return checks.unlinked_mentions(page, first, lookup)


# --- fixes -----------------------------------------------------------------------------------


def _fix_page(deps: Deps, repo: LintRepository, kb: KnowledgeBase, page: LintPage,
              issues: Sequence[LintIssue], n_stale: int, tally: LintTally) -> None:
    """Mend the fixable issues of one page, in the order that keeps later fixes meaningful.

    ``fixed`` counts what was mended of what was reported (``n_stale`` stale refs, the broken
    and mentioned slugs of ``issues``), never what a fix changed beyond it.
    """
    types = {i.type for i in issues if i.fixable}
    reported = {t: {i.target for i in issues if i.type == t} for t in ("broken_link", "unlinked_mention")}
    relink = bool(types & {"broken_link", "unlinked_mention"})
    if "stale_source" in types:
        removed, deleted, rerendered = _drop_stale_refs(deps, repo, kb, page.slug)
        tally.add_fixed("stale_source", min(removed, n_stale))
        tally.pages_written += bool(removed)
        if deleted:
            _relink_in_links(deps, repo, kb.id, page.slug, tally)
            return
        relink = relink or rerendered
    if "empty_page" in types and _archive_if_empty(deps, kb.id, page.slug):
        tally.add_fixed("empty_page", 1)
        tally.pages_written += 1
        if page.page_type in ITEM_TYPES:
            # Its title and aliases are no longer link targets: where they hid a shorter title
            # ("abstract base classes" covering "base classes"), that one is now a mention.
            _relink_in_links(deps, repo, kb.id, page.slug, tally)
        return
    if relink:
        linked, repaired = relink_page(deps, repo, kb.id, page.slug)
        tally.add_fixed("broken_link", len(reported["broken_link"] & repaired))
        tally.add_fixed("unlinked_mention", len(reported["unlinked_mention"] & linked))
        tally.pages_written += bool(linked or repaired)


def relink_page(deps: Deps, repo: LintRepository, kb_id: str, slug: str) -> tuple[set[str], set[str]]:
    """Repair dead links, then link unlinked mentions, in one page under its row lock.

    Returns (slugs linked to mentions, dead slugs repaired or stripped); a page that needs
    neither is not written. Dead links are repaired as cross-link repairs
    them; mentions are linked by ``wiki.lint.link_mentions``, the function the check runs, with
    the same title-key lookup, so what the check reported on this text is exactly what is linked.
    """
    with deps.pool.connection() as conn:
        deps.pages.lock_link_graph(kb_id, conn)  # before the row lock: see its docstring
        page = deps.pages.get(kb_id, slug, conn=conn, for_update=True)
        if page is None:
            return set(), set()
        resolve, dead = dead_link_resolver(deps.pages, kb_id, [page.content], conn=conn)
        content, _ = rewrite_links(page.content, resolve)
        lookup = _matching_pages(repo, kb_id)
        content, linked = checks.link_mentions(content, slug, lookup(candidate_phrases(content)), lookup)
        if content == page.content:
            return set(), set()
        deps.pages.save(page.model_copy(update={"content": content}), conn=conn)
    return set(linked), dead


def _drop_stale_refs(deps: Deps, repo: LintRepository, kb: KnowledgeBase, slug: str) -> tuple[int, bool, bool]:
    """Remove the page's source refs (and facts) of documents that no longer exist.

    Returns (refs removed, page deleted, content re-rendered). A page left without sources is
    deleted, as a retract would; an entity/concept page that still has facts is re-rendered
    from them so it stops quoting the deleted documents (its cross-links are then re-added by
    the caller).
    """
    with deps.pool.connection() as conn:
        deps.pages.lock_link_graph(kb.id, conn)  # before the row lock: see its docstring
        page = deps.pages.get(kb.id, slug, conn=conn, for_update=True)
        if page is None:
            return 0, False, False
        live = repo.live_documents(kb.id, [r.knowledge_id for r in page.source_refs], conn=conn)
        refs = [r for r in page.source_refs if r.knowledge_id in live]
        removed = len(page.source_refs) - len(refs)
        if not removed:
            return 0, False, False
        if not refs:
            return removed, deps.pages.delete(kb.id, slug, conn=conn), False
        facts = {k: v for k, v in page.facts.items() if k in live}
        content = page.content
        if page.page_type in ("entity", "concept") and facts:
            content = render_item_page(page.title, facts, page.aliases, len(refs))
        deps.pages.save(page.model_copy(update={"source_refs": refs, "facts": facts, "content": content}), conn=conn)
    return removed, False, content != page.content


def _archive_if_empty(deps: Deps, kb_id: str, slug: str) -> bool:
    """Archive the page if it is still near-empty under its row lock; returns whether it was archived."""
    with deps.pool.connection() as conn:
        deps.pages.lock_link_graph(kb_id, conn)  # before the row lock: see its docstring
        page = deps.pages.get(kb_id, slug, conn=conn, for_update=True)
        if page is None or page.status == "archived":
            return False
        lite = LintPage(id=page.id or 0, slug=page.slug, title=page.title, page_type=page.page_type,
                        status=page.status, aliases=page.aliases, content=page.content)
        if not checks.empty_page(lite, deps.settings.min_document_chars):
            return False
        deps.pages.save(page.model_copy(update={"status": "archived"}), conn=conn)
    return True


def _relink_in_links(deps: Deps, repo: LintRepository, kb_id: str, slug: str, tally: LintTally) -> None:
    """Relink, at once, every page that links to the just-deleted or just-archived ``slug``.

    A deleted page leaves broken links; a deleted or archived entity/concept page stops being a
    link target, which may uncover a mention its title covered. Pages the walk has passed would
    otherwise keep the issue until the next run. Nothing here was reported, so nothing is
    counted as fixed.
    """
    for source in deps.pages.in_link_sources(kb_id, [slug]):
        linked, repaired = relink_page(deps, repo, kb_id, source)
        tally.pages_written += bool(linked or repaired)


@actor(max_retries=3, time_limit=3_600_000, throws=BAD_MESSAGE)
def wiki_lint(**kwargs) -> None:
    """Lint a KB (``fix`` to mend what can be mended) and store the report as its latest."""
    args = LintArgs.model_validate(kwargs)
    report = run_lint(get_deps(), args.tenant_id, args.knowledge_base_id, fix=args.fix)
    log.info("lint.done", knowledge_base_id=args.knowledge_base_id, pages=report.pages_checked,
             score=report.score, counts=report.counts, fixed=report.fixed, duration_ms=report.duration_ms)
