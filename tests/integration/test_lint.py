"""Lint checks, health score and --fix against a real PostgreSQL, on pages built with WikiPageRepository.save.

Every test works in a fresh KB of its own. Several tests shrink the walk's window to 2 pages so
that the keyset cursor, and fixes that reach pages of other windows, are exercised.
"""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass

import pytest

from repos.lint import LintRepository
from stages.deps import Deps, build_deps
from stages.lint_checks import CHECKS, check_named
from wiki.extract.offline import OfflineExtractor
from wiki.lint import health_score, prose_length
from wiki.models import Page, SourceRef

ISSUE_TYPES = tuple(c.name for c in CHECKS)

PROSE = "This page explains what it is about in a few plain sentences that are long enough."


@dataclass
class Wiki:
    deps: Deps
    kb: object
    docs: dict[str, str]  # document title -> knowledge id

    def doc(self, title: str) -> str:
        if title not in self.docs:
            doc, _ = self.deps.docs.upsert(self.kb, title=title, source_uri=f"{title}.md", content=f"{title} " * 20)
            self.docs[title] = doc.id
        return self.docs[title]

    def page(
        self,
        slug: str,
        title: str,
        content: str,
        *,
        page_type: str = "entity",
        sources=("doc one",),
        aliases=(),
        refs: list[SourceRef] | None = None,
        facts: dict | None = None,
    ) -> Page:
        if refs is None:
            refs = [SourceRef(knowledge_id=self.doc(t), title=t) for t in sources]
        return self.deps.pages.save(
            Page(
                tenant_id=self.kb.tenant_id,
                knowledge_base_id=self.kb.id,
                slug=slug,
                title=title,
                page_type=page_type,
                content=content,
                aliases=list(aliases),
                source_refs=refs,
                facts=facts or {},
            )
        )

    def lint(self, fix: bool = False):
        return self.lint_with(CHECKS, fix)

    def lint_with(self, checks, fix: bool = False):
        from stages.lint import run_lint

        return run_lint(
            self.kb.tenant_id,
            self.kb.id,
            self.deps,
            fix=fix,
            checks=checks,
        )

    def get(self, slug: str) -> Page | None:
        return self.deps.pages.get(self.kb.id, slug)

    def out_links(self, slug: str) -> set[str]:
        with self.deps.pool.connection() as conn:
            rows = conn.execute(
                "SELECT to_slug FROM wiki_links WHERE knowledge_base_id = %s AND from_slug = %s", (self.kb.id, slug)
            ).fetchall()
        return {r["to_slug"] for r in rows}

    def delete_doc(self, title: str) -> None:
        with self.deps.pool.connection() as conn:
            conn.execute(
                "UPDATE knowledges SET status = 'deleted', deleted_at = now() WHERE id = %s", (self.docs[title],)
            )


@pytest.fixture()
def wiki(settings, pool) -> Wiki:
    deps = build_deps(settings, pool=pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"lint-{uuid.uuid4().hex[:8]}")
    return Wiki(deps, kb, {})


@pytest.fixture()
def small_windows(monkeypatch):
    import stages.lint

    monkeypatch.setattr(stages.lint, "WINDOW", 2)


def _issues(report, type_: str) -> set[tuple[str, str | None]]:
    return {(i.page, i.target) for i in report.samples[type_]}


# --- a healthy wiki ------------------------------------------------------------------------


def _healthy(w: Wiki) -> None:
    w.page("index", "Index", f"{PROSE}\n\n- [[doc-alpha|About alpha]]\n", page_type="index", sources=())
    w.page(
        "doc-alpha",
        "Alpha handbook",
        f"{PROSE} See [[alpha-engine|the engine]] and [[beta-tool]].\n",
        page_type="summary",
    )
    w.page(
        "alpha-engine",
        "Alpha Engine",
        f"{PROSE} It runs [[beta-tool#usage|the beta]] jobs.\n\n## Sources\n\n- [[doc-alpha|Alpha handbook]]\n",
    )
    w.page("beta-tool", "Beta Tool", f"{PROSE} Driven by [[alpha-engine|ALPHA ENGINE]].\n", page_type="concept")


def test_a_reachable_wiki_has_no_orphans_and_display_links_are_not_broken(wiki, small_windows):
    _healthy(wiki)

    report = wiki.lint()

    assert report.pages_checked == 4
    assert report.counts == dict.fromkeys(ISSUE_TYPES, 0), report.samples
    assert report.score == 100
    assert report.summary.startswith("health 100/100 · 4 pages")


# --- one test per check --------------------------------------------------------------------


def test_broken_links_in_both_forms_are_reported_whatever_the_display_text(wiki):
    _healthy(wiki)
    wiki.page(
        "gamma",
        "Gamma",
        f"{PROSE} [[ghost]], [[phantom|Alpha Engine]], [[alpha-engine|Ghost]], [[ghost|again]] and `[[in-code]]`.\n",
        sources=("doc two",),
    )
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[gamma]] [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint()

    assert report.counts["broken_link"] == 2
    assert _issues(report, "broken_link") == {("gamma", "ghost"), ("gamma", "phantom")}
    assert all(i.severity == "error" and i.fixable for i in report.samples["broken_link"])


def test_orphans_are_pages_without_in_links_except_the_index(wiki, small_windows):
    _healthy(wiki)
    wiki.page("lonely", "Lonely", f"{PROSE} Only [[lonely|itself]] links here.\n")

    report = wiki.lint()

    assert report.counts["orphan"] == 1
    assert _issues(report, "orphan") == {("lonely", None)}
    assert report.samples["orphan"][0].fixable is False


def test_near_empty_pages_are_reported_below_the_document_threshold(wiki):
    _healthy(wiki)
    stub = "## Overview\n\n## Sources\n\n- [[doc-alpha|Alpha]]\n"
    wiki.page("stub", "Stub", stub)
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[stub]] [[alpha-engine]] [[beta-tool]]", page_type="summary")
    threshold = wiki.deps.settings.min_document_chars

    report = wiki.lint()

    assert prose_length(stub) < threshold <= prose_length(PROSE)
    assert _issues(report, "empty_page") == {("stub", None)}
    assert report.counts["empty_page"] == 1


def test_source_refs_to_deleted_or_missing_documents_are_stale(wiki):
    _healthy(wiki)
    wiki.page("cited", "Cited", f"{PROSE}", sources=("kept doc", "gone doc"))
    missing = SourceRef(knowledge_id=str(uuid.uuid4()), title="never stored")
    wiki.page("ghostly", "Ghostly", f"{PROSE}", refs=[missing])
    wiki.page(
        "doc-alpha",
        "Alpha handbook",
        f"{PROSE} [[cited]] [[ghostly]] [[alpha-engine]] [[beta-tool]]",
        page_type="summary",
    )
    wiki.delete_doc("gone doc")

    report = wiki.lint()

    assert report.counts["stale_source"] == 2
    assert _issues(report, "stale_source") == {("cited", wiki.docs["gone doc"]), ("ghostly", missing.knowledge_id)}


def test_mentions_of_other_titles_that_are_not_linked_are_reported(wiki):
    _healthy(wiki)
    wiki.page(
        "gamma",
        "Gamma",
        f"{PROSE} The Alpha Engine and the beta tool work together; `Beta Tool` in code does not count.\n",
        sources=("doc two",),
    )
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[gamma]] [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint()

    assert _issues(report, "unlinked_mention") == {("gamma", "alpha-engine"), ("gamma", "beta-tool")}
    assert report.counts["unlinked_mention"] == 2


def test_pages_with_the_same_normalized_title_or_a_title_equal_to_an_alias_are_duplicates(wiki):
    _healthy(wiki)
    wiki.page("acme-corp", "Acme Corp", f"{PROSE}")
    wiki.page("acme-corp-2", "ACME corp", f"{PROSE}")
    wiki.page("acme-holding", "Acme Holding", f"{PROSE}", aliases=["The Firm"])
    wiki.page("the-firm", "The firm", f"{PROSE}", page_type="concept")
    wiki.page("doc-acme-corp", "Acme Corp", f"{PROSE}", page_type="summary")  # a summary may share a title

    report = wiki.lint()

    assert _issues(report, "duplicate") == {("acme-corp-2", "acme-corp"), ("the-firm", "acme-holding")}
    assert report.counts["duplicate"] == 2


def test_health_score_follows_its_formula_and_the_report_is_stored(wiki):
    _healthy(wiki)
    wiki.page("lonely", "Lonely", f"{PROSE} [[nowhere]]")

    report = wiki.lint()

    total = sum(c.weight for c in CHECKS)
    weight = {c.name: c.weight / total for c in CHECKS}
    expected = math.floor(100 * (1 - weight["orphan"] / 5 - weight["broken_link"] / 5) + 1e-9)
    assert report.score == expected == health_score(5, {"orphan": 1, "broken_link": 1}, CHECKS)
    assert health_score(0, {}, CHECKS) == 100 and health_score(3, dict.fromkeys(ISSUE_TYPES, 3), CHECKS) == 0
    assert health_score(3920, {"orphan": 2}, CHECKS) == 99  # any finding keeps the score below 100
    # a report rescored over a subset of its checks is what a walk of only those would score
    assert health_score(5, report.pages_affected, [check_named("broken_link")]) == 80
    stored = LintRepository(wiki.deps.pool).latest_report(wiki.kb.id)
    assert stored == report
    wiki.deps.pages.delete(wiki.kb.id, "lonely")
    assert LintRepository(wiki.deps.pool).latest_report(wiki.kb.id) == report  # until the next run
    again = wiki.lint()
    assert LintRepository(wiki.deps.pool).latest_report(wiki.kb.id) == again and again.score == 100


def test_samples_are_bounded_while_counts_are_not(wiki, small_windows):
    _healthy(wiki)
    links = " ".join(f"[[missing-{i}]]" for i in range(30))
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} {links} [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint()

    assert report.counts["broken_link"] == 30
    assert report.pages_affected["broken_link"] == 1
    assert len(report.samples["broken_link"]) == 20


# --- one test per fix ----------------------------------------------------------------------


def test_fix_repairs_broken_links_by_fuzzy_resolve_else_plain_text(wiki):
    _healthy(wiki)
    before = wiki.page(
        "gamma",
        "Gamma",
        f"{PROSE} Uses [[alpha-engin|the alpha engin]] and [[zzz-nowhere|old thing]].",
        sources=("doc two",),
    )
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[gamma]] [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint(fix=True)

    after = wiki.get("gamma")
    assert report.fixed["broken_link"] == 2
    assert "[[alpha-engine|the alpha engin]]" in after.content
    assert "old thing" in after.content and "zzz-nowhere" not in after.content
    assert after.version == before.version + 1
    assert wiki.out_links("gamma") == {"alpha-engine"}
    assert wiki.lint().counts["broken_link"] == 0


def test_fix_archives_near_empty_pages(wiki):
    _healthy(wiki)
    before = wiki.page("stub", "Stub", "## Overview\n\nTBD.\n")
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[stub]] [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint(fix=True)

    after = wiki.get("stub")
    assert report.fixed["empty_page"] == 1
    assert after.status == "archived" and after.version == before.version + 1
    second = wiki.lint()
    assert second.counts["empty_page"] == 0 and second.counts["broken_link"] == 0  # archived pages stay linkable


def test_fix_removes_stale_source_refs_and_deletes_pages_left_without_any(wiki, small_windows):
    _healthy(wiki)
    facts = {
        wiki.doc("kept doc"): {
            "doc_title": "kept doc",
            "summary_slug": "doc-alpha",
            "description": "Kept.",
            "evidence": ["The kept document says this."],
            "seq": 1,
        },
        wiki.doc("gone doc"): {
            "doc_title": "gone doc",
            "summary_slug": "doc-gone",
            "description": "Gone.",
            "evidence": ["The gone document said that."],
            "seq": 2,
        },
    }
    before = wiki.page(
        "cited", "Cited", f"{PROSE} The gone document said that.", sources=("kept doc", "gone doc"), facts=facts
    )
    # "doc-gone" cites only the deleted document; "alpha-engine" (an earlier window) links to it.
    wiki.page("alpha-engine", "Alpha Engine", f"{PROSE} Read [[doc-gone|the gone doc]] and [[beta-tool]].")
    wiki.page("doc-gone", "Gone doc", f"{PROSE} [[cited]]", page_type="summary", sources=("gone doc",))
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[cited]] [[alpha-engine]] [[beta-tool]]", page_type="summary")
    wiki.delete_doc("gone doc")

    report = wiki.lint(fix=True)

    assert report.fixed["stale_source"] == 2
    cited = wiki.get("cited")
    assert [r.title for r in cited.source_refs] == ["kept doc"]
    assert list(cited.facts) == [wiki.docs["kept doc"]]
    assert "gone document" not in cited.content and "The kept document says this." in cited.content
    assert cited.version > before.version
    assert wiki.get("doc-gone") is None
    engine = wiki.get("alpha-engine")
    assert "doc-gone" not in engine.content and "the gone doc" in engine.content
    assert "doc-gone" not in wiki.out_links("alpha-engine")
    second = wiki.lint()
    assert second.counts["stale_source"] == 0 and second.counts["broken_link"] == 0


def test_fix_links_unlinked_mentions(wiki):
    _healthy(wiki)
    before = wiki.page("gamma", "Gamma", f"{PROSE} The Alpha Engine runs here.", sources=("doc two",))
    wiki.page("doc-alpha", "Alpha handbook", f"{PROSE} [[gamma]] [[alpha-engine]] [[beta-tool]]", page_type="summary")

    report = wiki.lint(fix=True)

    after = wiki.get("gamma")
    assert report.fixed["unlinked_mention"] == 1
    assert "[[alpha-engine|Alpha Engine]]" in after.content
    assert after.version == before.version + 1
    assert "alpha-engine" in wiki.out_links("gamma")


def test_a_second_fix_fixes_nothing(wiki, small_windows):
    _healthy(wiki)
    wiki.page(
        "gamma",
        "Gamma",
        f"{PROSE} The Beta Tool and [[alpha-engin|the engine]] and [[doc-gone]].",
        sources=("doc two",),
    )
    wiki.page("stub", "Stub", "Nothing yet.")
    wiki.page(
        "doc-gone", "Gone doc", f"{PROSE} Mentions Gamma and [[gamma]].", page_type="summary", sources=("gone doc",)
    )
    wiki.page("lonely", "Lonely", f"{PROSE} Mentions the alpha engine and the Gone doc.", sources=("gone doc", "kept"))
    wiki.page("acme", "Alpha engine", f"{PROSE}")  # a duplicate: reported, never fixed
    wiki.delete_doc("gone doc")

    first = wiki.lint(fix=True)
    versions = {p.slug: p.version for p in wiki.deps.pages.iter_pages(wiki.kb.id)}
    second = wiki.lint(fix=True)

    assert sum(first.fixed.values()) >= 5
    assert second.fixed == dict.fromkeys(ISSUE_TYPES, 0)
    assert {p.slug: p.version for p in wiki.deps.pages.iter_pages(wiki.kb.id)} == versions
    assert all(second.counts[t] == 0 for t in ("broken_link", "stale_source", "empty_page", "unlinked_mention"))
    assert second.counts["duplicate"] == 1
    assert second.score >= first.score


# --- the command ---------------------------------------------------------------------------


def test_lint_command_prints_the_report_and_json(wiki, database_url, monkeypatch):
    from click.testing import CliRunner

    import stages.deps
    from kbwiki.cli import main
    from wiki.settings import get_settings

    _healthy(wiki)
    wiki.page("gamma", "Gamma", f"{PROSE} [[nowhere]]", sources=("doc two",))
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("REDIS_URL", wiki.deps.settings.redis_url)
    get_settings.cache_clear()
    previous = stages.deps._deps  # another test may have built the process-wide Deps already
    stages.deps.set_deps(wiki.deps)
    try:
        runner = CliRunner()
        text = runner.invoke(main, ["lint", "--kb", wiki.kb.name], catch_exceptions=False)
        as_json = runner.invoke(main, ["lint", "--kb", wiki.kb.name, "--json"], catch_exceptions=False)
    finally:
        stages.deps.set_deps(previous)
        get_settings.cache_clear()

    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0].startswith("health ")
    assert "gamma: links to [[nowhere]]" in text.output
    rows = [line for line in text.output.splitlines() if line.startswith("  ") and "  [" in line]
    assert len(rows) == len(CHECKS)
    assert len({row.index(" on ") for row in rows}) == 1, rows  # one column (overwritten_revert's was one off)
    data = json.loads(as_json.output)
    assert data["counts"]["broken_link"] == 1 and data["counts"]["orphan"] == 1
    assert data["knowledge_base_name"] == wiki.kb.name


def test_wiki_lint_actor_is_declared_and_validates_its_arguments(wiki):
    import dramatiq
    import pydantic

    import stages.deps
    from actors.lint import LintArgs, wiki_lint

    assert "wiki_lint" in dramatiq.get_broker().get_declared_actors()
    _healthy(wiki)
    previous = stages.deps._deps
    stages.deps.set_deps(wiki.deps)
    try:
        wiki_lint.fn(tenant_id=wiki.kb.tenant_id, knowledge_base_id=wiki.kb.id, fix=False)  # the body, inline
    finally:
        stages.deps.set_deps(previous)
    stored = LintRepository(wiki.deps.pool).latest_report(wiki.kb.id)
    assert stored is not None and stored.pages_checked == 4 and stored.fix is False
    with pytest.raises(pydantic.ValidationError):
        LintArgs.model_validate({"tenant_id": 1, "knowledge_base_id": wiki.kb.id, "fix": True, "extra": 1})


# --- --fix reaches a fixed point (regression: the python-stdlib demo KB) ---------------------


def _filler_before(phrase: str, head: str, linked_head: str, tail: str) -> str:
    """Unique filler words that push ``phrase`` (in ``tail``) just past candidate_phrases' limit
    while ``head`` is plain prose, and just under it once ``head`` is ``linked_head``: the
    mention of ``tail`` only becomes a candidate after the first fix."""
    from wiki.links import candidate_phrases

    for n in range(300, 700):
        filler = " ".join(f"w{i}x" for i in range(n))
        if phrase not in candidate_phrases(f"{head} {filler} {tail}") and phrase in candidate_phrases(
            f"{linked_head} {filler} {tail}"
        ):
            return filler
    raise AssertionError("no filler length puts the phrase at the limit")


def _stdlib_like(w: Wiki) -> None:
    """The kinds of pages of the python-stdlib KB whose mentions lint reported and --fix never mended."""
    _healthy(w)
    # Two pages share the key "base classes": one as its title, one as an alias (a folded plural).
    w.page("base-class", "base class", f"{PROSE}", page_type="concept", aliases=["base classes"])
    w.page("base-classes", "base classes", f"{PROSE}", page_type="concept")
    # The page of the report's sample: two mentions of the shared key.
    w.page(
        "abc",
        "abc",
        f"{PROSE} The abc module defines base classes for containers.\n\n"
        "Register virtual subclasses with the base classes of collections.abc.\n",
        sources=("abc doc",),
    )
    # A mention of an alias only (the check looked titles up, the fix titles and aliases).
    w.page("json", "JSON", f"{PROSE} Read and write data.", aliases=["JavaScript Object Notation"])
    w.page(
        "pickle", "pickle", f"{PROSE} Unlike JavaScript Object Notation, pickle is binary.\n", sources=("pickle doc",)
    )
    # One broken link written twice: one issue, so at most one fix.
    w.page("shelve", "shelve", f"{PROSE} Built on [[dbm-module]] and [[dbm-module|dbm]].\n", sources=("shelve doc",))
    # A long page: its last mention is only a candidate phrase once the first one is linked.
    w.page("zeta-widget", "Zeta Widget", f"{PROSE}")
    w.page("omega-gadget", "Omega Gadget", f"{PROSE}")
    head = f"{PROSE} The Zeta Widget spins."
    tail = "The Omega Gadget stops."
    filler = _filler_before("omega gadget", head, f"{PROSE} The [[zeta-widget|Zeta Widget]] spins.", tail)
    w.page("long-read", "Long read", f"{head} {filler} {tail}\n", sources=("long doc",))
    # A page linking a near-empty page whose title covers another title: once --fix archives
    # the stub, its title stops hiding the mention of "base classes" inside it.
    w.page(
        "inspect",
        "inspect",
        f"{PROSE} See [[abstract-base-classes|abstract base classes]]; abstract base classes register subclasses.\n",
        sources=("inspect doc",),
    )
    w.page("abstract-base-classes", "Abstract base classes", "## Overview\n\nTBD.\n", page_type="concept")
    links = " ".join(
        f"[[{s}]]"
        for s in (
            "abc",
            "pickle",
            "shelve",
            "long-read",
            "inspect",
            "json",
            "base-class",
            "base-classes",
            "zeta-widget",
            "omega-gadget",
        )
    )
    w.page("doc-alpha", "Alpha handbook", f"{PROSE} {links} [[alpha-engine]] [[beta-tool]]", page_type="summary")


FIXABLE_TYPES = ("broken_link", "stale_source", "empty_page", "unlinked_mention")


def test_fix_twice_fixes_nothing_the_second_time_on_stdlib_like_pages(wiki, small_windows):
    _stdlib_like(wiki)

    first = wiki.lint(fix=True)
    second = wiki.lint(fix=True)
    plain = wiki.lint()

    assert ("abc", "base-classes") in _issues(first, "unlinked_mention")
    assert ("pickle", "json") in _issues(first, "unlinked_mention")
    assert ("long-read", "omega-gadget") in _issues(first, "unlinked_mention")
    assert second.fixed == dict.fromkeys(ISSUE_TYPES, 0), second.samples
    assert all(plain.counts[t] == 0 for t in FIXABLE_TYPES), plain.samples
    assert first.score_after_fix == plain.score


def test_fix_counts_at_most_what_it_found_and_mends_what_it_reports(wiki, small_windows):
    _stdlib_like(wiki)

    first = wiki.lint(fix=True)

    for type_ in ISSUE_TYPES:
        assert first.fixed[type_] <= first.counts[type_], (type_, first.fixed, first.counts)
    assert first.fixed["broken_link"] == first.counts["broken_link"] == 1
    assert first.fixed["unlinked_mention"] == first.counts["unlinked_mention"]
    for page, target in _issues(first, "unlinked_mention"):
        assert target in wiki.out_links(page), (page, target)
    assert "[[base-classes|base classes]]" in wiki.get("abc").content
    assert "[[json|JavaScript Object Notation]]" in wiki.get("pickle").content
