"""Lint: walk a KB's pages in constant memory, report problems with a health score, optionally fix them.

The walk reads live, non-archived pages with a keyset cursor in windows of ``repos.lint.WINDOW``
(200) rows; for each window every check of ``stages.lint_checks.CHECKS`` runs its bounded
query (which link targets are live, which pages have in-links, which source refs are stale,
which titles are mentioned, which titles are shared), then its rule on each page. Nothing but
the counters and bounded samples of ``wiki.lint.LintTally`` outlives a window, so memory does
not grow with the KB. The walk names no check: adding one is adding a ``LintCheck``.

``fix=True`` runs, page by page, the fix of each check that reported a fixable issue there, in
``fix_rank`` order, each as a normal page write under the page's row lock (version bumped,
out-links rewritten): stale source refs are removed (a page left with none is deleted and the
pages linking to it are repaired at once), near-empty pages are archived (an entity/concept
page stops being a link target, so the pages linking to it are relinked at once), and broken
links and unlinked mentions are mended by one relink of the page (``stages.lint_checks.relink_page``):
dead links as cross-link repairs them, then mentions through ``wiki.lint.link_mentions``, the very
function the check runs, so the fix links exactly what was reported and leaves the page where
the check finds nothing more. Fixes never create a fixable issue on a page the walk has already
passed, so a second ``fix=True`` run fixes nothing. ``fixed`` counts only reported issues that
were mended; when anything was written, a check-only walk follows and gives the score after the fixes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime

import structlog
from psycopg_pool import ConnectionPool

from repos.knowledge import KnowledgeBaseRepository
from repos.lint import WINDOW, LintRepository
from repos.pages import WikiPageRepository
from stages.deps import Deps
from stages.lint_checks import CHECKS, LintCheck, PageFix, Window
from wiki.lint import LintIssue, LintPage, LintReport, LintTally
from wiki.models import KnowledgeBase

log = structlog.get_logger(__name__)


def run_lint(
    tenant_id: int,
    knowledge_base_id: str,
    deps: Deps,
    *,
    fix: bool = False,
    checks: Sequence[LintCheck] = CHECKS,
) -> LintReport:
    """Lint every live page of the KB, store the report as the KB's latest and return it.

    ``Settings.min_document_chars`` is the empty-page threshold; ``deps.pool`` holds the
    transactions of the fixes; ``checks`` defaults to every check. Raises
    ``wiki.errors.UnknownKnowledgeBase`` for an unknown or deleted KB or a tenant mismatch, also
    when the KB is deleted during the walk (checked before each window). See the module docstring
    for what ``fix`` changes.
    """
    kb = deps.kbs.get_active(tenant_id, knowledge_base_id)
    walk = _Walk(
        kb,
        tenant_id,
        kbs=deps.kbs,
        pages=deps.pages,
        lint=deps.lint,
        pool=deps.pool,
        min_chars=deps.settings.min_document_chars,
        checks=checks,
    )
    started, t0 = datetime.now(UTC), time.monotonic()
    tally = walk.run(fix)
    after = None
    if fix and tally.pages_written:
        # The state the fixes left, for the score after them: linking adds in-links (fewer
        # orphans), deleting and archiving remove pages and links. Nothing is written here.
        after = walk.run(fix=False)
        left = {c.name: after.counts[c.name] for c in checks if c.fixable and after.counts[c.name]}
        if left:
            log.warning("lint.fix_left_issues", knowledge_base_id=kb.id, counts=left)
    report = tally.report(kb.id, kb.name, fix, started, int((time.monotonic() - t0) * 1000), after=after)
    deps.lint.save_report(report)
    return report


class _Walk:
    """One KB's walks (the check-only one after ``--fix`` reuses it)."""

    def __init__(
        self,
        kb: KnowledgeBase,
        tenant_id: int,
        *,
        kbs: KnowledgeBaseRepository,
        pages: WikiPageRepository,
        lint: LintRepository,
        pool: ConnectionPool,
        min_chars: int,
        checks: Sequence[LintCheck],
    ) -> None:
        self.kb, self.tenant_id, self.kbs, self.pages, self.lint, self.pool = kb, tenant_id, kbs, pages, lint, pool
        self.min_chars = min_chars
        self.checks = tuple(checks)
        self.fixes = sorted((c for c in self.checks if c.fix is not None), key=lambda c: c.fix_rank)

    def run(self, fix: bool) -> LintTally:
        """One keyset walk of the KB's live, non-archived pages; returns its tally."""
        tally = LintTally(self.checks)
        after = 0
        while True:
            window = self.lint.page_window(self.kb.id, after, WINDOW)
            if not window:
                break
            after = window[-1].id
            self.kbs.get_active(self.tenant_id, self.kb.id)  # a KB deleted mid-walk stops it (and its fixes) here
            self._window(window, tally, fix)
        return tally

    def _window(self, rows: Sequence[LintPage], tally: LintTally, fix: bool) -> None:
        """Check one window of pages (and fix them when asked)."""
        window = Window(self.kb, rows, self.lint, self.pages, self.min_chars)
        facts = {c.name: c.gather(window) if c.gather else None for c in self.checks}
        for page in rows:
            issues: dict[str, list[LintIssue]] = {}
            counts: dict[str, int] = {}
            for check in self.checks:
                issues[check.name] = check.issues(page, facts[check.name], window)
                if check.count is not None:
                    counts[check.name] = check.count(page, facts[check.name])
            tally.add_page([i for found in issues.values() for i in found], counts)
            if fix and any(i.fixable for found in issues.values() for i in found):
                self._fix(page, issues, counts, tally)

    def _fix(
        self, page: LintPage, issues: dict[str, list[LintIssue]], counts: dict[str, int], tally: LintTally
    ) -> None:
        """Run the fixes of the checks that reported a fixable issue on ``page``, in ``fix_rank`` order.

        ``fixed`` counts what was mended of what was reported, never what a fix changed beyond it.
        """
        ctx = PageFix(self.kb, page, pool=self.pool, lint=self.lint, wiki_pages=self.pages, min_chars=self.min_chars)
        for check in self.fixes:
            found = [i for i in issues[check.name] if i.fixable]
            if not found:
                continue
            mended = check.fix(ctx, page, found, counts.get(check.name, len(found)))
            tally.add_fixed(check.name, mended.fixed)
            tally.pages_written += mended.written
            if mended.done:  # deleted or archived: nothing of the page is left to mend
                break
        else:
            if ctx.relink_due:
                ctx.relinked()
        tally.pages_written += ctx.relink_written
