"""Lint: walk a KB's pages in constant memory, report problems with a health score, optionally fix them.

The walk reads live, non-archived pages with a keyset cursor in windows of ``WINDOW`` (200)
rows; for each window a handful of bounded queries answer what the checks need about other
pages (which link targets are live, which pages have in-links, which source refs are stale,
which titles are mentioned, which titles are shared). Nothing but the counters and bounded
samples of ``wiki.lint.LintTally`` outlives a window, so memory does not grow with the KB.

``fix=True`` mends what can be mended, page by page, each as a normal page write under the
page's row lock (version bumped, out-links rewritten): stale source refs are removed (a page
left with none is deleted and the pages linking to it are repaired at once), near-empty pages
are archived, and broken links and unlinked mentions go through ``actors.crosslink.link_page``
(fuzzy resolve else plain text, then linkify). Fixes never create a fixable issue on a page the
walk has already passed, so a second ``fix=True`` run fixes nothing.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime

import dramatiq
import structlog

from actors.args import BAD_MESSAGE, KbArgs
from actors.crosslink import link_page
from actors.deps import Deps, get_deps
from repos.lint import WINDOW, LintRepository
from wiki import lint as checks
from wiki.links import candidate_phrases, parse_links
from wiki.lint import LintIssue, LintPage, LintReport, LintTally
from wiki.models import KnowledgeBase, PageLite
from wiki.render import render_item_page

log = structlog.get_logger(__name__)

#: Distinct candidate phrases sent in one title lookup. A 3 KB page yields a few hundred; the
#: cap keeps the query's array and the phrase sets held for it to about a megabyte.
MENTION_PHRASES_PER_QUERY = 5000


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
    tally = LintTally()
    started, t0 = datetime.now(UTC), time.monotonic()
    after = 0
    while True:
        window = repo.page_window(kb.id, after, WINDOW)
        if not window:
            break
        after = window[-1].id
        deps.kbs.get_active(tenant_id, kb.id)  # a KB deleted mid-walk stops it (and its fixes) here
        _lint_window(deps, repo, kb, window, tally, fix)
    report = tally.report(kb.id, kb.name, fix, started, int((time.monotonic() - t0) * 1000))
    repo.save_report(report)
    return report


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
    mentions = _mention_targets(deps, kb.id, window)
    min_chars = deps.settings.min_document_chars
    for page in window:
        page_keys = checks.duplicate_keys(page.title)
        n_stale, stale_sample = stale.get(page.slug, (0, []))
        issues = [
            *checks.broken_links(page, live),
            *checks.orphan(page, page.slug in in_linked),
            *checks.empty_page(page, min_chars),
            *checks.stale_sources(page, n_stale, stale_sample),
            *checks.unlinked_mentions(page, mentions.get(page.slug, [])),
            *checks.duplicates(page, [c for k in page_keys for c in same_title.get(k, [])],
                               [c for k in page_keys for c in alias_of.get(k, [])]),
        ]
        tally.add_page(issues, stale_count=n_stale)
        if fix and any(i.fixable for i in issues):
            _fix_page(deps, repo, kb, page, issues, tally)


def _by_key(pages: Sequence[PageLite], keys_of) -> dict[str, list[PageLite]]:
    out: dict[str, list[PageLite]] = defaultdict(list)
    for page in pages:
        for key in keys_of(page):
            out[key].append(page)
    return out


def _mention_targets(deps: Deps, kb_id: str, window: Sequence[LintPage]) -> dict[str, list[PageLite]]:
    """Per page slug: the entity/concept pages whose title is one of the page's candidate phrases.

    The same lookup ``link_page`` makes (``candidate_phrases`` then ``titles_matching``), batched:
    phrases of consecutive pages go into one query of at most about
    ``MENTION_PHRASES_PER_QUERY`` phrases.
    """
    out: dict[str, list[PageLite]] = {}
    pending: list[tuple[str, set[str]]] = []
    union: set[str] = set()

    def flush() -> None:
        by_title = _by_key(deps.pages.titles_matching(kb_id, sorted(union)), lambda p: [p.title.lower()])
        for slug, phrases in pending:
            out[slug] = [t for key, found in by_title.items() if key in phrases for t in found]
        pending.clear()
        union.clear()

    for page in window:
        phrases = set(candidate_phrases(page.content))
        pending.append((page.slug, phrases))
        union.update(phrases)
        if len(union) >= MENTION_PHRASES_PER_QUERY:
            flush()
    if pending:
        flush()
    return out


# --- fixes -----------------------------------------------------------------------------------


def _fix_page(deps: Deps, repo: LintRepository, kb: KnowledgeBase, page: LintPage,
              issues: Sequence[LintIssue], tally: LintTally) -> None:
    """Mend the fixable issues of one page, in the order that keeps later fixes meaningful."""
    types = {i.type for i in issues if i.fixable}
    relink = bool(types & {"broken_link", "unlinked_mention"})
    if "stale_source" in types:
        removed, deleted, rerendered = _drop_stale_refs(deps, repo, kb, page.slug)
        tally.add_fixed("stale_source", removed)
        if deleted:
            _repair_in_links(deps, kb.id, page.slug, tally)
            return
        relink = relink or rerendered
    if "empty_page" in types and _archive_if_empty(deps, kb.id, page.slug):
        tally.add_fixed("empty_page", 1)
        return
    if relink:
        linked, repaired = link_page(deps, kb.id, page.slug)
        tally.add_fixed("broken_link", repaired, page_mended="broken_link" in types)
        tally.add_fixed("unlinked_mention", linked, page_mended="unlinked_mention" in types)


def _drop_stale_refs(deps: Deps, repo: LintRepository, kb: KnowledgeBase, slug: str) -> tuple[int, bool, bool]:
    """Remove the page's source refs (and facts) of documents that no longer exist.

    Returns (refs removed, page deleted, content re-rendered). A page left without sources is
    deleted, as a retract would; an entity/concept page that still has facts is re-rendered
    from them so it stops quoting the deleted documents (its cross-links are then re-added by
    the caller).
    """
    with deps.pool.connection() as conn:
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
        page = deps.pages.get(kb_id, slug, conn=conn, for_update=True)
        if page is None or page.status == "archived":
            return False
        lite = LintPage(id=page.id or 0, slug=page.slug, title=page.title, page_type=page.page_type,
                        status=page.status, aliases=page.aliases, content=page.content)
        if not checks.empty_page(lite, deps.settings.min_document_chars):
            return False
        deps.pages.save(page.model_copy(update={"status": "archived"}), conn=conn)
    return True


def _repair_in_links(deps: Deps, kb_id: str, slug: str, tally: LintTally) -> None:
    """Repair, at once, the links of every page that pointed at the just-deleted ``slug``.

    Pages the walk has passed would otherwise keep a broken link until the next run.
    """
    for source in deps.pages.in_link_sources(kb_id, [slug]):
        linked, repaired = link_page(deps, kb_id, source)
        tally.add_fixed("broken_link", repaired, page_mended=False)
        tally.add_fixed("unlinked_mention", linked, page_mended=False)


@dramatiq.actor(queue_name="wiki", max_retries=3, time_limit=3_600_000, throws=BAD_MESSAGE)
def wiki_lint(**kwargs) -> None:
    """Lint a KB (``fix`` to mend what can be mended) and store the report as its latest."""
    args = LintArgs.model_validate(kwargs)
    report = run_lint(get_deps(), args.tenant_id, args.knowledge_base_id, fix=args.fix)
    log.info("lint.done", knowledge_base_id=args.knowledge_base_id, pages=report.pages_checked,
             score=report.score, counts=report.counts, fixed=report.fixed, duration_ms=report.duration_ms)
