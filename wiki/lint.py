"""Lint checks of wiki pages, the running tally of a walk, and the health score. No I/O.

The walk (``actors.lint``) reads a KB's pages in windows and hands each page, with the few
facts about its neighbours that bounded queries returned, to the pure checks below. Every
check returns ``LintIssue`` values; ``LintTally`` keeps counters and at most
``SAMPLE_PER_TYPE`` issues of each type, so its size does not grow with the KB.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from wiki.links import LinkTarget, linkify, out_link_slugs, parse_links, rewrite_links
from wiki.models import PageLite
from wiki.slugs import normalize_name, normalize_slug

IssueType = Literal["broken_link", "orphan", "empty_page", "stale_source", "unlinked_mention", "duplicate"]
Severity = Literal["error", "warning", "info"]

ISSUE_TYPES: tuple[IssueType, ...] = (
    "broken_link", "stale_source", "orphan", "duplicate", "empty_page", "unlinked_mention",
)

#: How bad each type is: errors mislead a reader (a link to nothing, a citation of a deleted
#: document), warnings make the wiki harder to use, info is a missed opportunity.
SEVERITY: dict[IssueType, Severity] = {
    "broken_link": "error",
    "stale_source": "error",
    "orphan": "warning",
    "duplicate": "warning",
    "empty_page": "warning",
    "unlinked_mention": "info",
}

#: Whether ``kbwiki lint --fix`` can mend an issue of the type. Orphans need a page to link
#: them from and duplicates need a merge decision: both are left to people.
FIXABLE: dict[IssueType, bool] = {
    "broken_link": True,
    "stale_source": True,
    "orphan": False,
    "duplicate": False,
    "empty_page": True,
    "unlinked_mention": True,
}

#: Weights of the health score (they sum to 1): the two errors weigh most, the missed link least.
SCORE_WEIGHTS: dict[IssueType, float] = {
    "broken_link": 0.25,
    "stale_source": 0.20,
    "orphan": 0.15,
    "duplicate": 0.15,
    "empty_page": 0.15,
    "unlinked_mention": 0.10,
}

#: Issues of each type kept as examples in a report; the rest are only counted.
SAMPLE_PER_TYPE = 20

#: Stale source refs of one page shown as examples (the page may cite thousands of documents).
STALE_SAMPLE_PER_PAGE = 3

# Page types compared with each other for duplicate titles: two summaries of documents with
# the same title are a possible double ingest; an entity and a summary sharing a title are by
# design (summary slugs carry the "doc-" prefix for exactly that case).
_FAMILY = {"entity": "item", "concept": "item", "summary": "summary", "index": "index"}

_HEADING_LINE_RE = re.compile(r"^ {0,3}#{1,6}(?:[ \t].*)?$", re.MULTILINE)


class LintIssue(BaseModel):
    """One problem found on one page.

    ``page`` is the slug of the page the problem is on; ``target`` the slug linked, the knowledge
    id cited or the other page's slug, when there is one.
    """

    type: IssueType
    severity: Severity
    page: str
    target: str | None = None
    description: str
    fixable: bool


class LintPage(PageLite):
    """What the walk reads of a page: the narrow row plus its id (the keyset cursor) and content.

    Source refs and facts are not read by the walk (a hub page may cite thousands of documents):
    stale refs are found by a per-window query, and ``--fix`` re-reads the whole row under lock.
    """

    id: int
    content: str


class LintReport(BaseModel):
    """The outcome of one lint walk of a KB (stored as JSON, latest per KB).

    ``counts``: issues per type; ``pages_affected``: pages with at least one issue of the type;
    ``samples``: up to ``SAMPLE_PER_TYPE`` issues per type; ``fixed``: issues mended by ``--fix``
    per type (0 without it); ``score``: :func:`health_score` as found; ``score_after_fix``: the
    same with pages whose issues of a type were fixed no longer counted (equal to ``score``
    without ``--fix``). ``duration_ms`` is the wall time of the walk.
    """

    knowledge_base_id: str
    knowledge_base_name: str
    pages_checked: int
    counts: dict[str, int]
    pages_affected: dict[str, int]
    fixed: dict[str, int]
    samples: dict[str, list[LintIssue]]
    score: int = Field(ge=0, le=100)
    score_after_fix: int = Field(ge=0, le=100)
    summary: str
    fix: bool
    created_at: datetime
    duration_ms: int = Field(ge=0)


def _issue(type_: IssueType, page: str, description: str, target: str | None = None) -> LintIssue:
    return LintIssue(type=type_, severity=SEVERITY[type_], page=page, target=target,
                     description=description, fixable=FIXABLE[type_])


# --- checks ----------------------------------------------------------------------------------


def broken_links(page: LintPage, live_slugs: set[str]) -> list[LintIssue]:
    """One issue per distinct slug ``page`` links to that is not in ``live_slugs``.

    Only the slug decides: ``[[slug]]``, ``[[slug|display]]`` and ``[[slug#heading|display]]``
    to a live page are all fine, whatever the display text says. ``live_slugs`` must hold at
    least the live pages among the page's link targets (the caller's per-window query).
    """
    seen: set[str] = set()
    issues = []
    for link in parse_links(page.content):
        if link.slug in live_slugs or link.slug in seen:
            continue
        seen.add(link.slug)
        issues.append(_issue("broken_link", page.slug, f"links to [[{link.slug}]], which is not a live page",
                             link.slug))
    return issues


def orphan(page: LintPage, has_in_link: bool) -> list[LintIssue]:
    """An issue when no other page links to ``page``; the index page is the entry point, never an orphan."""
    if has_in_link or page.page_type == "index":
        return []
    return [_issue("orphan", page.slug, "no other page links here")]


def prose_length(content: str) -> int:
    """Characters of prose in Markdown ``content``: heading lines removed, every wiki link read as
    its display text (or its slug as words), runs of whitespace counted as one space."""
    text, _ = rewrite_links(content, lambda slug, display: None)
    text = _HEADING_LINE_RE.sub("", text)
    return len(" ".join(text.split()))


def empty_page(page: LintPage, min_chars: int) -> list[LintIssue]:
    """An issue when ``page`` has fewer than ``min_chars`` characters of prose (:func:`prose_length`).

    The caller passes ``Settings.min_document_chars`` (40 by default): a page saying less than
    a document must say to be ingested at all is near-empty. The index page is never empty.
    """
    if page.page_type == "index":
        return []
    n = prose_length(page.content)
    if n >= min_chars:
        return []
    return [_issue("empty_page", page.slug, f"{n} characters of prose (fewer than {min_chars})")]


def stale_sources(page: LintPage, count: int, sample: Sequence[tuple[str, str]]) -> list[LintIssue]:
    """Issues for the ``count`` source refs of ``page`` whose document no longer exists.

    ``sample`` holds (knowledge id, title) of a few of them (the query returns at most
    ``STALE_SAMPLE_PER_PAGE``); issues beyond the sample are described together in the last one,
    so ``len(result) <= len(sample)`` while :meth:`LintTally.add_stale` counts all ``count``.
    """
    issues = [
        _issue("stale_source", page.slug, f"cites document {title!r} ({kid}), which no longer exists", kid)
        for kid, title in sample
    ]
    if count > len(sample) and issues:
        last = issues[-1]
        issues[-1] = last.model_copy(update={
            "description": last.description + f"; {count - len(sample)} more stale source refs on this page"})
    return issues


def unlinked_mentions(page: LintPage, targets: Iterable[PageLite]) -> list[LintIssue]:
    """Pages among ``targets`` whose title or alias ``page`` mentions without linking them.

    The decision is :func:`wiki.links.linkify`'s own (word boundaries, protected regions, a
    target already linked anywhere in the page is not reported), so ``--fix``, which links
    through linkify, mends exactly what is reported. Archived targets and the page itself are
    ignored.
    """
    link_targets = [LinkTarget(t.slug, t.title, tuple(t.aliases)) for t in targets
                    if t.slug != page.slug and t.status != "archived"]
    if not link_targets:
        return []
    linked = {normalize_slug(s) for s in out_link_slugs(page.content)}
    if all(normalize_slug(t.slug) in linked for t in link_targets):
        return []  # linkify would link none of them; skip compiling its pattern (~10 ms a page)
    _, linked = linkify(page.content, link_targets, self_slug=page.slug)
    return [_issue("unlinked_mention", page.slug, f"mentions [[{slug}]] without linking it", slug)
            for slug in sorted(linked)]


def duplicate_keys(title: str) -> set[str]:
    """The lowercased strings a title is looked up by (its lower form and its ``normalize_name``)."""
    return {k for k in (title.lower().strip(), normalize_name(title)) if k}


def duplicates(page: LintPage, same_title: Iterable[PageLite], alias_holders: Iterable[PageLite]) -> list[LintIssue]:
    """Issues when another live page names the same thing as ``page``.

    ``same_title``: candidates whose lower(title) is one of :func:`duplicate_keys`; a candidate
    of the same family (entity/concept together, summaries together) with an equal
    ``normalize_name`` title and a smaller slug is reported, so each pair is reported once, on
    the page with the larger slug. ``alias_holders``: candidates with an alias among the keys;
    an entity/concept page whose title equals (``normalize_name``) another entity/concept
    page's alias is reported on the page whose title it is. Archived candidates are ignored.
    """
    key = normalize_name(page.title)
    if not key or page.page_type == "index":
        return []
    family = _FAMILY[page.page_type]
    issues: dict[str, LintIssue] = {}
    for cand in same_title:
        if (cand.slug < page.slug and cand.status != "archived" and _FAMILY[cand.page_type] == family
                and normalize_name(cand.title) == key and cand.slug not in issues):
            issues[cand.slug] = _issue("duplicate", page.slug,
                                       f"same title as [[{cand.slug}]] ({cand.title!r})", cand.slug)
    if family == "item":
        for cand in alias_holders:
            if (cand.slug != page.slug and cand.status != "archived" and _FAMILY[cand.page_type] == "item"
                    and cand.slug not in issues and any(normalize_name(a) == key for a in cand.aliases)):
                issues[cand.slug] = _issue("duplicate", page.slug,
                                           f"title is an alias of [[{cand.slug}]] ({cand.title!r})", cand.slug)
    return [issues[s] for s in sorted(issues)]


# --- tally, score, summary -------------------------------------------------------------------


def health_score(pages_checked: int, pages_affected: dict[str, int]) -> int:
    """The health of a wiki from 0 (every page has every problem) to 100 (no problem found).

    ``score = round(100 * sum(w[t] * (1 - affected[t] / pages)))`` over the issue types, with
    the weights of :data:`SCORE_WEIGHTS`: the weighted share of pages free of each kind of
    problem. A page counts once per type however many issues of that type it has, so one
    page with fifty broken links weighs as much as one with a single broken link. A KB
    without pages scores 100.
    """
    if pages_checked <= 0:
        return 100
    total = 0.0
    for type_, weight in SCORE_WEIGHTS.items():
        share = min(pages_affected.get(type_, 0), pages_checked) / pages_checked
        total += weight * (1.0 - share)
    return max(0, min(100, round(100 * total)))


class LintTally:
    """Counters and bounded samples of one walk: its memory does not depend on the KB's size."""

    def __init__(self) -> None:
        self.pages_checked = 0
        self.counts: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.pages_affected: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.pages_fixed: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.fixed: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.samples: dict[str, list[LintIssue]] = {t: [] for t in ISSUE_TYPES}

    def add_page(self, issues: Sequence[LintIssue], stale_count: int = 0) -> None:
        """Count one checked page and its issues; ``stale_count`` is the page's number of stale
        source refs when ``issues`` holds only a sample of them."""
        self.pages_checked += 1
        types = set()
        for issue in issues:
            if issue.type != "stale_source":
                self.counts[issue.type] += 1
            types.add(issue.type)
            sample = self.samples[issue.type]
            if len(sample) < SAMPLE_PER_TYPE:
                sample.append(issue)
        if stale_count:
            self.counts["stale_source"] += stale_count
            types.add("stale_source")
        for type_ in types:
            self.pages_affected[type_] += 1

    def add_fixed(self, type_: IssueType, n: int, page_mended: bool = True) -> None:
        """Record ``n`` issues of a type mended by ``--fix``; ``page_mended`` when the page no longer has any."""
        if n <= 0:
            return
        self.fixed[type_] += n
        if page_mended:
            self.pages_fixed[type_] += 1

    def report(self, kb_id: str, kb_name: str, fix: bool, created_at: datetime, duration_ms: int) -> LintReport:
        """The report of the walk so far."""
        score = health_score(self.pages_checked, self.pages_affected)
        after = {t: max(0, self.pages_affected[t] - self.pages_fixed[t]) for t in ISSUE_TYPES}
        score_after = health_score(self.pages_checked, after) if fix else score
        report = LintReport(
            knowledge_base_id=kb_id, knowledge_base_name=kb_name, pages_checked=self.pages_checked,
            counts=dict(self.counts), pages_affected=dict(self.pages_affected), fixed=dict(self.fixed),
            samples={t: list(s) for t, s in self.samples.items()}, score=score, score_after_fix=score_after,
            summary="", fix=fix, created_at=created_at, duration_ms=duration_ms,
        )
        return report.model_copy(update={"summary": summary_line(report)})


_LABELS = {
    "broken_link": "broken links", "stale_source": "stale source refs", "orphan": "orphans",
    "duplicate": "duplicates", "empty_page": "empty pages", "unlinked_mention": "unlinked mentions",
}


def summary_line(report: LintReport) -> str:
    """One line: the score, pages checked, issues by type and, with ``--fix``, what was fixed.

    Example: ``health 91/100 · 1,204 pages · 3 broken links, 12 orphans, 0 ... · fixed 3``.
    """
    parts = ", ".join(f"{report.counts.get(t, 0):,} {_LABELS[t]}" for t in ISSUE_TYPES)
    line = f"health {report.score}/100 · {report.pages_checked:,} pages · {parts}"
    if report.fix:
        line += f" · fixed {sum(report.fixed.values()):,} (health after fix {report.score_after_fix}/100)"
    return line
