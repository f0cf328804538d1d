"""Lint checks of wiki pages, the running tally of a walk, and the health score. No I/O.

The walk (``actors.lint``) reads a KB's pages in windows and hands each page, with the few
facts about its neighbours that bounded queries returned, to the pure checks below. Every
check returns ``LintIssue`` values; ``LintTally`` keeps counters and at most
``SAMPLE_PER_TYPE`` issues of each type, so its size does not grow with the KB.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from wiki.links import LinkTarget, candidate_phrases, linkify, out_link_slugs, parse_links, rewrite_links
from wiki.markdown import HEADING_LINE_RE
from wiki.models import PageLite
from wiki.slugs import normalize_name, normalize_slug
from wiki.text import prose_size

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
    per type (0 without it), never more than ``counts``; ``score``: :func:`health_score` as found;
    ``score_after_fix``: the score of the KB as the fixes left it, from a check-only walk run after
    them (equal to ``score`` without ``--fix`` or when nothing was written). ``duration_ms`` is the
    wall time of the walk (both walks with ``--fix``).
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
    its display text (or its slug as words), runs of whitespace counted as one space, a CJK
    character counting 3 as it does for documents (``wiki.text.prose_size``)."""
    text, _ = rewrite_links(content, lambda slug, display: None)
    text = HEADING_LINE_RE.sub("", text)
    return prose_size(" ".join(text.split()))


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


#: Pages that take part in one page's mention matching, as returned by a title-key lookup: the
#: live entity/concept pages one of whose keys (lower(title), lower(alias)) is among the phrases.
MentionLookup = Callable[[Sequence[str]], Iterable[PageLite]]

#: Rounds of :func:`link_mentions` on one page. Every round but the last links at least one
#: target not linked before, and a page rarely needs more than two; the bound only caps the
#: cost of a pathological page (the walk then simply finds the rest next time).
MAX_MENTION_ROUNDS = 16


def mention_targets(pages: Iterable[PageLite], self_slug: str) -> list[LinkTarget]:
    """The ``linkify`` targets of a page from the pages its phrases matched, in a fixed order.

    ``linkify`` gives a phrase to the first target that has it, so the order decides between
    pages sharing a title or alias: every title comes before every alias (a page named
    "base classes" beats a page with that alias), ties go to the smaller slug. The order must
    not depend on how the pages were fetched (a batched lookup and a per-page one return rows
    in different orders): it is what keeps the check and ``--fix`` on the same target. The page
    itself and archived pages are left out.
    """
    live = {p.slug: p for p in pages if p.slug != self_slug and p.status != "archived"}
    ordered = [live[s] for s in sorted(live)]
    return ([LinkTarget(p.slug, p.title) for p in ordered]
            + [LinkTarget(p.slug, p.title, tuple(p.aliases)) for p in ordered if p.aliases])


def link_mentions(content: str, self_slug: str, first: Iterable[PageLite],
                  lookup: MentionLookup) -> tuple[str, list[str]]:
    """Link the unlinked mentions of ``content`` until none is left; return (content, slugs linked).

    The one code path of the unlinked-mention check (on the page as read, the result thrown
    away) and of ``--fix`` (on the page under its row lock, the result saved), so the fix mends
    exactly what the check reports. A round is ``linkify`` with the targets ``lookup`` finds for
    ``candidate_phrases`` of the text, ordered by :func:`mention_targets`; ``first`` is the
    lookup's answer for the text as given (callers batch it). Rounds repeat while one links
    something, because a link changes the phrases of the text: the phrases of a page stop at
    ``candidate_phrases``' limit, and a mention turned into a link frees room for phrases
    further on (a title mentioned there only then becomes a target). After the last round the
    text is a fixed point: checking it again finds nothing.
    """
    found = first
    linked_all: list[str] = []
    for _ in range(MAX_MENTION_ROUNDS):
        targets = mention_targets(found, self_slug)
        if not targets:
            break
        linked = {normalize_slug(s) for s in out_link_slugs(content)}
        if all(normalize_slug(t.slug) in linked for t in targets):
            break  # linkify would link none of them; skip compiling its pattern (~10 ms a page)
        content, added = linkify(content, targets, self_slug=self_slug)
        if not added:
            break
        linked_all.extend(sorted(added))
        found = lookup(candidate_phrases(content))
    return content, linked_all


def unlinked_mentions(page: LintPage, first: Iterable[PageLite], lookup: MentionLookup) -> list[LintIssue]:
    """The pages :func:`link_mentions` would link in ``page``: mentioned by title or alias, not linked.

    ``first``: the pages whose title keys are among the page's candidate phrases; ``lookup``
    answers the same question for the phrases of a later round. ``--fix`` runs
    :func:`link_mentions` itself, so it mends exactly what is reported. The index page is not
    checked: the pipeline rebuilds it after every batch, so a link lint added would not last.
    """
    if page.page_type == "index":
        return []
    _, linked = link_mentions(page.content, page.slug, first, lookup)
    return [_issue("unlinked_mention", page.slug, f"mentions [[{slug}]] without linking it", slug)
            for slug in sorted(set(linked))]


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

    ``score = floor(100 * sum(w[t] * (1 - affected[t] / pages)))`` over the issue types, with
    the weights of :data:`SCORE_WEIGHTS`: the weighted share of pages free of each kind of
    problem. A page counts once per type however many issues of that type it has, so one
    page with fifty broken links weighs as much as one with a single broken link. Rounded
    down, so 100 means nothing was found (2 orphans among 3,920 pages rounded up to 100 and
    read as a clean bill). A KB without pages scores 100.
    """
    if pages_checked <= 0:
        return 100
    total = 0.0
    for type_, weight in SCORE_WEIGHTS.items():
        share = min(pages_affected.get(type_, 0), pages_checked) / pages_checked
        total += weight * (1.0 - share)
    return max(0, min(100, math.floor(100 * total + 1e-9)))  # 1e-9: the weights' float sum


class LintTally:
    """Counters and bounded samples of one walk: its memory does not depend on the KB's size."""

    def __init__(self) -> None:
        self.pages_checked = 0
        self.counts: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.pages_affected: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.fixed: dict[str, int] = dict.fromkeys(ISSUE_TYPES, 0)
        self.pages_written = 0  # page writes by --fix, reported issues or not
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

    def add_fixed(self, type_: IssueType, n: int) -> None:
        """Record ``n`` reported issues of a type mended by ``--fix`` (never more than were reported:
        what a fix mends beyond them, such as a link that only appeared when a dead one became
        text, is no issue found)."""
        if n > 0:
            self.fixed[type_] += n

    def report(self, kb_id: str, kb_name: str, fix: bool, created_at: datetime, duration_ms: int,
               after: LintTally | None = None) -> LintReport:
        """The report of the walk so far; ``after`` is the tally of a check-only walk run after the
        fixes (its score is ``score_after_fix``; without it, ``score`` is)."""
        score = health_score(self.pages_checked, self.pages_affected)
        score_after = health_score(after.pages_checked, after.pages_affected) if fix and after else score
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
