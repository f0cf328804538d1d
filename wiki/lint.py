"""The pure rules of the lint checks, the running tally of a walk, and the health score. No I/O.

The checks themselves (name, query, weight, fix) are objects in ``stages.lint_checks``; the walk
(``stages.lint``) reads a KB's pages in windows and hands each page, with the few facts about
its neighbours that the checks' bounded queries returned, to the rules below. A rule returns
``Finding`` values, which its check turns into ``LintIssue`` values (adding the type, severity
and whether ``--fix`` mends it); ``LintTally`` keeps counters and at most ``SAMPLE_PER_TYPE``
issues of each type, so its size does not grow with the KB.

The health score (:func:`health_score`) is a weighted mean over the checks that ran, with the
weights normalised by their sum, so a check added later rescales the others instead of pushing
the total past 100. A report records the checks and weights it was scored with
(``LintReport.score_version``) and, per check, the pages it found affected, so two reports of
different check sets stay comparable: rescore both over the checks they share (``health_score``
with those checks).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from wiki.dedup import link_phrases
from wiki.links import LinkTarget, candidate_phrases, linkify, out_link_slugs, parse_links, rewrite_links
from wiki.markdown import HEADING_LINE_RE
from wiki.models import PageLite
from wiki.plural import counted, noun
from wiki.slugs import normalize_name, normalize_slug
from wiki.text import prose_size

#: How bad an issue is: an error misleads a reader (a link to nothing, a citation of a deleted
#: document), a warning makes the wiki harder to use, info is a missed opportunity.
Severity = Literal["error", "warning", "info"]


@dataclass(frozen=True)
class CheckInfo:
    """What the tally, the score and the summary know of a check: its issue type (``name``), the
    singular ``label`` of the summary line ("broken link": ``wiki.plural`` makes "3 broken links"),
    its ``severity``, its ``weight`` in the health score (relative: the score divides by the sum of
    the weights) and whether ``--fix`` mends it."""

    name: str
    label: str
    severity: Severity
    weight: float
    fixable: bool


class Finding(NamedTuple):
    """What a rule found on one page: ``page`` its slug, ``target`` the slug linked, the knowledge
    id cited or the other page's slug when there is one. Its check makes it a ``LintIssue``."""

    page: str
    description: str
    target: str | None = None


#: Issues of each type kept as examples in a report; the rest are only counted.
SAMPLE_PER_TYPE = 20

#: Stale source refs of one page shown as examples (the page may cite thousands of documents).
STALE_SAMPLE_PER_PAGE = 3

# Page types compared with each other for duplicate titles: two summaries of documents with
# the same title are a possible double ingest; an entity and a summary sharing a title are by
# design (summary slugs carry the "doc-" prefix for exactly that case).
_FAMILY = {
    "entity": "item",
    "concept": "item",
    "summary": "summary",
    "index": "index",
    "disambiguation": "disambiguation",
}


class LintIssue(BaseModel):
    """One problem found on one page.

    ``page`` is the slug of the page the problem is on; ``target`` the slug linked, the knowledge
    id cited or the other page's slug, when there is one.
    """

    type: str
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
    wall time of the walk (both walks with ``--fix``). ``score_version``: the checks and weights
    the score was computed with (:func:`score_version`; "" in reports stored before it was kept).
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
    score_version: str = ""


# --- checks ----------------------------------------------------------------------------------


def broken_links(page: LintPage, live_slugs: set[str]) -> list[Finding]:
    """One finding per distinct slug ``page`` links to that is not in ``live_slugs``.

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
        issues.append(Finding(page.slug, f"links to [[{link.slug}]], which is not a live page", link.slug))
    return issues


def orphan(page: LintPage, has_in_link: bool) -> list[Finding]:
    """A finding when no other page links to ``page``; the index page is the entry point, never an orphan."""
    if has_in_link or page.page_type == "index":
        return []
    return [Finding(page.slug, "no other page links here")]


def prose_length(content: str) -> int:
    """Characters of prose in Markdown ``content``: heading lines removed, every wiki link read as
    its display text (or its slug as words), runs of whitespace counted as one space, a CJK
    character counting 3 as it does for documents (``wiki.text.prose_size``)."""
    text, _ = rewrite_links(content, lambda slug, display: None)
    text = HEADING_LINE_RE.sub("", text)
    return prose_size(" ".join(text.split()))


def empty_page(page: LintPage, min_chars: int) -> list[Finding]:
    """A finding when ``page`` has fewer than ``min_chars`` characters of prose (:func:`prose_length`).

    The caller passes ``Settings.min_document_chars`` (40 by default): a page saying less than
    a document must say to be ingested at all is near-empty. The index page is never empty.
    """
    if page.page_type == "index":
        return []
    n = prose_length(page.content)
    if n >= min_chars:
        return []
    return [Finding(page.slug, f"{counted(n, 'character')} of prose (fewer than {min_chars})")]


def stale_sources(page: LintPage, count: int, sample: Sequence[tuple[str, str]]) -> list[Finding]:
    """Findings for the ``count`` source refs of ``page`` whose document no longer exists.

    ``sample`` holds (knowledge id, title) of a few of them (the query returns at most
    ``STALE_SAMPLE_PER_PAGE``); refs beyond the sample are described together in the last one,
    so ``len(result) <= len(sample)`` while the tally counts all ``count`` (the check's ``count``).
    """
    issues = [
        Finding(page.slug, f"cites document {title!r} ({kid}), which no longer exists", kid) for kid, title in sample
    ]
    if count > len(sample) and issues:
        last = issues[-1]
        issues[-1] = last._replace(
            description=last.description + f"; {count - len(sample)} more stale source refs on this page"
        )
    return issues


class RevertOverwritten(NamedTuple):
    """A page's latest revert and the ingest write after it (``LintRepository.overwritten_reverts``):
    ``revert`` the version the revert wrote, ``reverted_to`` the version it went back to,
    ``rewritten`` the first later version an ingest wrote and ``by`` its ``written_by`` label."""

    revert: int
    reverted_to: str
    rewritten: int
    by: str


def overwritten_revert(page: LintPage, found: RevertOverwritten | None) -> list[Finding]:
    """A finding when the page's latest revert (``kbwiki revert`` or the web view's) was written
    over by an ingest since: the reduce batch rendered the page again from its sources, so the
    text the operator chose is gone (``kbwiki history`` shows both; reverting again restores it
    until the next such write). Not fixable: whether the revert or the ingest is right is a
    person's call."""
    if found is None:
        return []
    return [
        Finding(
            page.slug,
            f"version {found.revert} reverted it to version {found.reverted_to}; an ingest ({found.by})"
            f" wrote version {found.rewritten} over it",
            found.by,
        )
    ]


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
    in different orders): it is what keeps the check and ``--fix`` on the same target. Archived
    pages are left out. The page itself comes first: ``linkify`` never links it, but its title
    holds its mentions whole ("Ttk Labelframe widget" on its own page is no link to "Labelframe").
    """
    live = {p.slug: p for p in pages if p.status != "archived"}
    if self_slug in live:
        own = live.pop(self_slug)
        return [LinkTarget(own.slug, own.title, tuple(own.aliases)), *mention_targets(live.values(), self_slug)]
    # a page's phrases are those its mentions are linked by (``wiki.dedup.link_phrases``): one
    # found by an alias does not link its title's every dictionary word
    phrases = {p.slug: link_phrases(p.title, p.aliases, p.page_type) for p in live.values()}
    ordered = [live[s] for s in sorted(live)]
    return [LinkTarget(p.slug, p.title) for p in ordered if phrases[p.slug][:1] == [p.title]] + [
        LinkTarget(p.slug, "", aliases)
        for p in ordered
        if (aliases := tuple(a for a in phrases[p.slug] if a != p.title))
    ]


def link_mentions(
    content: str, self_slug: str, first: Iterable[PageLite], lookup: MentionLookup
) -> tuple[str, list[str]]:
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


def unlinked_mentions(page: LintPage, first: Iterable[PageLite], lookup: MentionLookup) -> list[Finding]:
    """The pages :func:`link_mentions` would link in ``page``: mentioned by title or alias, not linked.

    ``first``: the pages whose title keys are among the page's candidate phrases; ``lookup``
    answers the same question for the phrases of a later round. ``--fix`` runs
    :func:`link_mentions` itself, so it mends exactly what is reported. The index page is not
    checked: the pipeline rebuilds it after every batch, so a link lint added would not last.
    """
    if page.page_type == "index":
        return []
    _, linked = link_mentions(page.content, page.slug, first, lookup)
    return [Finding(page.slug, f"mentions [[{slug}]] without linking it", slug) for slug in sorted(set(linked))]


def duplicate_keys(title: str) -> set[str]:
    """The lowercased strings a title is looked up by (its lower form and its ``normalize_name``)."""
    return {k for k in (title.lower().strip(), normalize_name(title)) if k}


def duplicates(page: LintPage, same_title: Iterable[PageLite], alias_holders: Iterable[PageLite]) -> list[Finding]:
    """Findings when another live page names the same thing as ``page``.

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
    issues: dict[str, Finding] = {}
    for cand in same_title:
        if (
            cand.slug < page.slug
            and cand.status != "archived"
            and _FAMILY[cand.page_type] == family
            and normalize_name(cand.title) == key
            and cand.slug not in issues
        ):
            issues[cand.slug] = Finding(page.slug, f"same title as [[{cand.slug}]] ({cand.title!r})", cand.slug)
    if family == "item":
        for cand in alias_holders:
            if (
                cand.slug != page.slug
                and cand.status != "archived"
                and _FAMILY[cand.page_type] == "item"
                and cand.slug not in issues
                and any(normalize_name(a) == key for a in cand.aliases)
            ):
                issues[cand.slug] = Finding(
                    page.slug, f"title is an alias of [[{cand.slug}]] ({cand.title!r})", cand.slug
                )
    return [issues[s] for s in sorted(issues)]


# --- tally, score, summary -------------------------------------------------------------------


def score_version(checks: Sequence[CheckInfo]) -> str:
    """The checks and weights a score is computed with, e.g. ``"broken_link:25,orphan:15"``: two
    scores are directly comparable only when their versions are equal (else rescore, see the
    module docstring)."""
    return ",".join(f"{c.name}:{c.weight:g}" for c in checks)


def health_score(pages_checked: int, pages_affected: Mapping[str, int], checks: Sequence[CheckInfo]) -> int:
    """The health of a wiki from 0 (every page has every problem) to 100 (no problem found).

    ``score = floor(100 * sum(w[t] * (1 - affected[t] / pages)) / sum(w))`` over ``checks``: the
    weighted share of pages free of each kind of problem, the weights normalised by their sum
    (so adding a check never lets the score pass 100, and rescoring a report over a subset of its
    checks gives what a walk of only those would have). A page counts once per type however many
    issues of that type it has, so one page with fifty broken links weighs as much as one with a
    single broken link. Rounded down, so 100 means nothing was found (2 orphans among 3,920
    pages rounded up to 100 and read as a clean bill). A KB without pages, or no check, scores 100.
    """
    total_weight = sum(c.weight for c in checks)
    if pages_checked <= 0 or total_weight <= 0:
        return 100
    total = 0.0
    for check in checks:
        share = min(pages_affected.get(check.name, 0), pages_checked) / pages_checked
        total += check.weight * (1.0 - share)
    return max(0, min(100, math.floor(100 * total / total_weight + 1e-9)))  # 1e-9: the weights' float sum


class LintTally:
    """Counters and bounded samples of one walk over ``checks``: its memory does not depend on the KB's size."""

    def __init__(self, checks: Sequence[CheckInfo]) -> None:
        self.checks = tuple(checks)
        names = [c.name for c in self.checks]
        self.pages_checked = 0
        self.counts: dict[str, int] = dict.fromkeys(names, 0)
        self.pages_affected: dict[str, int] = dict.fromkeys(names, 0)
        self.fixed: dict[str, int] = dict.fromkeys(names, 0)
        self.pages_written = 0  # page writes by --fix, reported issues or not
        self.samples: dict[str, list[LintIssue]] = {t: [] for t in names}

    def add_page(self, issues: Sequence[LintIssue], counts: Mapping[str, int] | None = None) -> None:
        """Count one checked page and its issues. ``counts`` gives, for a type whose ``issues`` are
        only a sample (stale source refs), how many there are on the page."""
        counts = counts or {}
        self.pages_checked += 1
        types = set()
        for issue in issues:
            if issue.type not in counts:
                self.counts[issue.type] += 1
            types.add(issue.type)
            sample = self.samples[issue.type]
            if len(sample) < SAMPLE_PER_TYPE:
                sample.append(issue)
        for type_, n in counts.items():
            if n:
                self.counts[type_] += n
                types.add(type_)
        for type_ in types:
            self.pages_affected[type_] += 1

    def add_fixed(self, type_: str, n: int) -> None:
        """Record ``n`` reported issues of a type mended by ``--fix`` (never more than were reported:
        what a fix mends beyond them, such as a link that only appeared when a dead one became
        text, is no issue found)."""
        if n > 0:
            self.fixed[type_] += n

    def score(self) -> int:
        """:func:`health_score` of the walk so far."""
        return health_score(self.pages_checked, self.pages_affected, self.checks)

    def report(
        self,
        kb_id: str,
        kb_name: str,
        fix: bool,
        created_at: datetime,
        duration_ms: int,
        after: LintTally | None = None,
    ) -> LintReport:
        """The report of the walk so far; ``after`` is the tally of a check-only walk run after the
        fixes (its score is ``score_after_fix``; without it, ``score`` is)."""
        score = self.score()
        score_after = after.score() if fix and after else score
        report = LintReport(
            knowledge_base_id=kb_id,
            knowledge_base_name=kb_name,
            pages_checked=self.pages_checked,
            counts=dict(self.counts),
            pages_affected=dict(self.pages_affected),
            fixed=dict(self.fixed),
            samples={t: list(s) for t, s in self.samples.items()},
            score=score,
            score_after_fix=score_after,
            summary="",
            fix=fix,
            created_at=created_at,
            duration_ms=duration_ms,
            score_version=score_version(self.checks),
        )
        return report.model_copy(update={"summary": summary_line(report, self.checks)})


def summary_line(report: LintReport, checks: Sequence[CheckInfo]) -> str:
    """One line: the score, pages checked, issues by type (in the order of ``checks``) and, with
    ``--fix``, what was fixed.

    Example: ``health 91/100 · 1,204 pages · 3 broken links, 12 orphans, 0 ... · fixed 3``.
    """
    parts = ", ".join(f"{(n := report.counts.get(c.name, 0)):,} {noun(n, c.label)}" for c in checks)
    line = f"health {report.score}/100 · {report.pages_checked:,} {noun(report.pages_checked, 'page')} · {parts}"
    if report.fix:
        line += f" · fixed {sum(report.fixed.values()):,} (health after fix {report.score_after_fix}/100)"
    return line
