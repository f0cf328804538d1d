"""The pure rules that keep a wiki independent of document order, link folders and reserved slugs."""

from __future__ import annotations

from wiki.links import LinkTarget, linkify, parse_links, unlink
from wiki.lint import LintPage, broken_links
from wiki.merge import item_type
from wiki.models import Extraction, Page, PageLite
from wiki.render import listed_link_starts, render_index_page, render_summary_page
from wiki.slugs import INDEX_SLUG, RESERVED_SLUGS


def test_a_folder_prefix_as_obsidian_writes_it_is_not_part_of_the_slug() -> None:
    links = parse_links("See [[entity/acme-cloud]], [[summary/doc-guide|the guide]] and [[concept/x#Use|x]].")
    assert [(link.slug, link.display, link.heading) for link in links] == [
        ("acme-cloud", None, None),
        ("doc-guide", "the guide", None),
        ("x", "x", "Use"),
    ]
    # only the vault's page folders are prefixes: any other "/" stays (and names no live page)
    assert [link.slug for link in parse_links("[[notes/acme]] [[entity/]]")] == ["notes/acme", "entity/"]


def test_lint_does_not_call_a_folder_prefixed_link_to_a_live_page_broken() -> None:
    page = LintPage(
        id=1,
        slug="doc-a",
        title="A",
        page_type="summary",
        status="published",
        aliases=[],
        content="[[entity/acme|Acme]] and [[concept/gone]]",
    )
    assert [issue.target for issue in broken_links(page, {"acme"})] == ["gone"]


def test_the_index_slug_is_reserved() -> None:
    assert INDEX_SLUG in RESERVED_SLUGS


def test_a_page_type_is_the_kind_most_sources_give_it() -> None:
    assert item_type(entity=1, docs=3) == "concept"
    assert item_type(entity=1, docs=2) == "entity"  # a tie
    assert item_type(entity=1, docs=1) == "entity" and item_type(entity=0, docs=1) == "concept"


def test_cross_links_come_off_and_the_summary_lists_stay() -> None:
    extraction = Extraction(summary="Acme Cloud runs Widgets.", body="Acme Cloud runs Widgets on Acme.", items=[])
    listed = [("entity", "acme-cloud", "Acme Cloud", "Acme Cloud hosts Acme."), ("concept", "widget", "Widgets", "")]
    rendered = render_summary_page(extraction, "docs/a.md", listed)
    linked, added = linkify(rendered, [LinkTarget("acme", "Acme"), LinkTarget("widget-maker", "Widgets")])
    assert added == {"acme", "widget-maker"}
    listed = listed_link_starts(linked)
    assert sorted(link.slug for link in parse_links(linked) if link.start in listed) == ["acme-cloud", "widget"]
    items = {"acme", "acme-cloud", "widget", "widget-maker"}
    assert unlink(linked, lambda link: link.slug in items and link.start not in listed) == rendered


def test_unlink_reads_a_link_without_display_as_its_slug_words() -> None:
    assert unlink("a [[acme-cloud]] b [[x|X]]", lambda link: True) == "a acme cloud b X"
    assert unlink("nothing here", lambda link: True) == "nothing here"


def test_the_index_page_lists_counts_most_cited_and_documents() -> None:
    cited = {
        "entity": [(PageLite(slug="acme", title="Acme", page_type="entity"), 12)],
        "concept": [(PageLite(slug="widget", title="widget", page_type="concept"), 1)],
    }
    listed = [
        Page(tenant_id=1, knowledge_base_id="kb", slug=f"doc-{t.lower()}", title=t, page_type="summary", content="")
        for t in ("Alpha", "Beta")
    ]
    content = render_index_page("kb", {"summary": 3, "entity": 1, "concept": 1, "index": 1}, listed, cited)
    assert "Wiki of **kb**: 5 pages." in content
    assert "## Most-cited entities\n\n- [[acme|Acme]] (quotes 12 documents)" in content
    assert "## Most-cited concepts\n\n- [[widget|widget]] (quotes 1 document)" in content
    # the summaries the caller read (the first A-Z), and a count of the rest: no "recent" order
    assert "## Documents (3)\n\n- [[doc-alpha|Alpha]]\n- [[doc-beta|Beta]]\n- and 1 more\n" in content
    assert content.index("## Most-cited entities") < content.index("## Documents (3)")
