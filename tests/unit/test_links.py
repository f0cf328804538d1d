"""Wiki links: parsing, linkify rules, candidate phrases, rewriting and fuzzy dead-link repair."""

from __future__ import annotations

import random

import pytest

from wiki.links import (
    FUZZY_JACCARD_THRESHOLD,
    Link,
    LinkTarget,
    candidate_phrases,
    fuzzy_resolve,
    linkify,
    out_link_slugs,
    parse_links,
    rewrite_links,
)
from wiki.models import PageLite
from wiki.stopwords import is_stopword

# --- parse -------------------------------------------------------------------------------


def test_parse_link_forms() -> None:
    text = "See [[acme]], [[acme-corp|ACME Corp]] and [[ guide #Install | the guide ]]."
    links = parse_links(text)
    assert [(link.slug, link.display) for link in links] == [
        ("acme", None),
        ("acme-corp", "ACME Corp"),
        ("guide", "the guide"),
    ]
    assert links[2].heading == "Install"
    for link in links:
        assert text[link.start : link.end].startswith("[[")
        assert text[link.start : link.end].endswith("]]")
    assert out_link_slugs(text) == {"acme", "acme-corp", "guide"}


def test_parse_escaped_pipe_in_table() -> None:
    links = parse_links("| [[acme-corp\\|Acme]] | x |")
    assert [(link.slug, link.display) for link in links] == [("acme-corp", "Acme")]


def test_parse_skips_empty_and_code() -> None:
    text = "[[#local]] [[ ]] `[[in-code]]`\n```\n[[fenced]]\n```\n[[real]]"
    assert out_link_slugs(text) == {"real"}


def test_parse_cjk_slug() -> None:
    text = "去[[上海中心大厦|上海中心]]看看"
    assert parse_links(text) == [Link("上海中心大厦", "上海中心", text.index("["), text.index("看"))]


# --- linkify -----------------------------------------------------------------------------

ACME = LinkTarget("acme-corp", "Acme Corp", ("ACME Corporation",))
CLOUD = LinkTarget("acme-cloud", "Acme Cloud")
ACME_SHORT = LinkTarget("acme", "Acme")
GO = LinkTarget("go", "Go")
GOOGLE = LinkTarget("google", "Google")
TOWER = LinkTarget("上海中心大厦", "上海中心大厦")
SHANGHAI = LinkTarget("上海", "上海")


def test_links_first_mention_only_and_keeps_text_as_written() -> None:
    out, linked = linkify("ACME CORP makes rockets. Acme Corp is big.", [ACME])
    assert out == "[[acme-corp|ACME CORP]] makes rockets. Acme Corp is big."
    assert linked == {"acme-corp"}


def test_links_alias() -> None:
    out, linked = linkify("The acme corporation sells.", [ACME])
    assert out == "The [[acme-corp|acme corporation]] sells."
    assert linked == {"acme-corp"}


def test_title_wrapped_across_lines() -> None:
    out, _ = linkify("we met Acme\nCorp today", [ACME])
    assert out == "we met [[acme-corp|Acme Corp]] today"


@pytest.mark.parametrize(
    "text",
    [
        "Use `Acme Corp` here.",
        "```\nAcme Corp\n```\n",
        "~~~python\nAcme Corp\n~~~\n",
        "```\nunclosed Acme Corp",
        "[about Acme Corp](https://example.org/acme)",
        "[docs](https://example.org/Acme-Corp)",
        "![Acme Corp logo](logo.png)",
        "see https://example.org/Acme%20Corp/acme-corp for more",
        "<https://acme-corp.example.org>",
        "# Acme Corp\n",
        "## All about Acme Corp\n",
        "[Acme Corp][1]\n",
        "[1]: https://example.org  Acme Corp\n",
        '<span title="Acme Corp">x</span>',
        "| name | owner |\n|---|---|\n| Acme Corp | x |\n",
    ],
)
def test_never_links_inside_protected_regions(text: str) -> None:
    out, linked = linkify(text, [ACME])
    assert out == text
    assert linked == set()


def test_links_prose_next_to_protected_regions() -> None:
    text = "# Acme Corp\n\n`Acme Corp` and [x](http://acme.example) then Acme Corp."
    out, linked = linkify(text, [ACME])
    assert out.endswith("then [[acme-corp|Acme Corp]].")
    assert out.startswith("# Acme Corp\n\n`Acme Corp`")
    assert linked == {"acme-corp"}


def test_does_not_link_inside_existing_link() -> None:
    text = "[[acme-cloud|Acme Corp cloud]] is new."
    out, linked = linkify(text, [ACME])
    assert out == text
    assert linked == set()


def test_already_linked_target_not_linked_again() -> None:
    text = "Acme Corp was founded. Later [[acme-corp|the company]] grew."
    out, linked = linkify(text, [ACME])
    assert out == text
    assert linked == set()
    # The same slug written differently still counts as linked.
    out, _ = linkify("Acme Corp. [[Acme_Corp]]", [ACME])
    assert out == "Acme Corp. [[Acme_Corp]]"


def test_never_links_self() -> None:
    out, linked = linkify("Acme Corp is this page.", [ACME], self_slug="acme-corp")
    assert out == "Acme Corp is this page."
    assert linked == set()


def test_self_mention_still_shields_shorter_titles() -> None:
    out, linked = linkify("Acme Cloud runs on Acme Cloud.", [CLOUD, ACME_SHORT], self_slug="acme-cloud")
    assert linked == set()
    assert out == "Acme Cloud runs on Acme Cloud."


def test_word_boundaries_for_latin() -> None:
    out, linked = linkify("Googleplex is near Google.", [GOOGLE])
    assert out == "Googleplex is near [[google|Google]]."
    out, linked = linkify("Acme Corporations and Acme_Corp and xAcme Corp", [ACME])
    assert linked == set()


def test_short_titles_ignored_unless_cjk() -> None:
    out, linked = linkify("Go is a language; we go to Google.", [GO, GOOGLE])
    assert "[[go|" not in out
    assert linked == {"google"}
    out, linked = linkify("中国和日本", [LinkTarget("zhongguo", "中国")])
    assert out == "[[zhongguo|中国]]和日本"


def test_case_insensitive() -> None:
    out, linked = linkify("we love GOOGLE", [GOOGLE])
    assert out == "we love [[google|GOOGLE]]"


def test_cjk_without_word_boundaries_and_longest_wins() -> None:
    text = "我在上海中心大厦工作。上海很大。"
    out, linked = linkify(text, [SHANGHAI, TOWER])
    assert out == "我在[[上海中心大厦|上海中心大厦]]工作。[[上海|上海]]很大。"
    assert linked == {"上海中心大厦", "上海"}


def test_latin_title_inside_cjk_text() -> None:
    out, linked = linkify("使用Google搜索", [GOOGLE])
    assert out == "使用[[google|Google]]搜索"


def test_longest_wins_same_start() -> None:
    out, linked = linkify("Acme Cloud is fast.", [ACME_SHORT, CLOUD])
    assert out == "[[acme-cloud|Acme Cloud]] is fast."
    assert linked == {"acme-cloud"}


def test_longest_wins_overlap_later_start() -> None:
    targets = [LinkTarget("new-york", "New York"), LinkTarget("york-city-hall", "York City Hall")]
    out, linked = linkify("In New York City Hall today.", targets)
    assert out == "In New [[york-city-hall|York City Hall]] today."
    assert linked == {"york-city-hall"}


def test_falls_back_to_shorter_title_when_boundary_fails() -> None:
    out, linked = linkify("Acme Cloudy days", [ACME_SHORT, CLOUD])
    assert out == "[[acme|Acme]] Cloudy days"


def test_shared_title_goes_to_first_target() -> None:
    out, linked = linkify(
        "Mercury rises", [LinkTarget("mercury-planet", "Mercury"), LinkTarget("mercury-element", "Mercury")]
    )
    assert linked == {"mercury-planet"}


def test_bad_targets_ignored() -> None:
    targets = [LinkTarget("a|b", "Alpha"), LinkTarget("ok", "Has ]] bracket"), LinkTarget("", "Empty")]
    out, linked = linkify("Alpha Has ]] bracket Empty", targets)
    assert linked == set()


def test_no_targets_no_change() -> None:
    assert linkify("anything", []) == ("anything", set())


DOC = """# Acme Corp overview

Acme Corp builds Acme Cloud, hosted in 上海中心大厦 near Google offices.
`Acme` code, and [Google](https://google.com). Acme later, acme corporation.

```
Acme Cloud
```

Google and Acme Cloud again; 上海 is a city. Go!
"""


def test_idempotent() -> None:
    targets = [ACME, CLOUD, ACME_SHORT, GO, GOOGLE, TOWER, SHANGHAI]
    once, linked = linkify(DOC, targets)
    assert linked == {"acme-corp", "acme-cloud", "acme", "google", "上海中心大厦", "上海"}
    assert "[[google|Google]] offices" in once
    twice, linked_again = linkify(once, targets)
    assert twice == once
    assert linked_again == set()
    assert out_link_slugs(once) == linked


def test_idempotent_random() -> None:
    rng = random.Random(7)
    targets = [ACME, CLOUD, ACME_SHORT, GOOGLE, TOWER, SHANGHAI]
    pieces = [
        "Acme",
        "Corp",
        "Cloud",
        "Google",
        "上海",
        "中心大厦",
        "`x`",
        "[a](b)",
        "\n",
        " ",
        ".",
        "# ",
        "http://e.com/Acme",
    ]
    for _ in range(200):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 30)))
        once, _ = linkify(text, targets)
        assert linkify(once, targets) == (once, set()), text
        # Linking only adds markup: removing it gives the original text back (up to wrapping).
        plain, _ = rewrite_links(once, lambda slug, display: None)
        assert " ".join(plain.split()) == " ".join(text.split())


# --- candidate phrases -------------------------------------------------------------------


def test_candidate_phrases_ngrams_and_exclusions() -> None:
    text = (
        "Bank of China opened in Shanghai.\n"
        "`Secret Code` and [Hidden Link](http://x.y/Hidden) and http://url.example/Path\n"
        "# Heading Words\n"
        "[[linked-page|Linked Page]] Node.js rocks."
    )
    phrases = candidate_phrases(text)
    assert "bank of china" in phrases
    assert "bank of china opened" in phrases
    assert "shanghai" in phrases
    assert "node.js" in phrases and "node" in phrases
    for banned in ("secret code", "hidden link", "hidden", "heading words", "linked page", "path"):
        assert banned not in phrases
    # Words separated by punctuation do not form a phrase.
    assert "shanghai secret" not in phrases
    # Only stop words or too short: left out.
    assert "of" not in phrases and "in" not in phrases
    assert len(phrases) == len(set(phrases))
    assert all(p == p.lower() for p in phrases)


def test_candidate_phrases_skip_the_extractors_stopwords() -> None:
    # One stopword list (yake's): a phrase of stop words only can never be an item's name
    # (validate_item_name refuses it), so it is no candidate either.
    phrases = candidate_phrases("Use the value as an example of Acme Cloud.")
    assert "acme cloud" in phrases and "example of acme cloud" in phrases
    for only_stops in ("use the", "value", "example", "the value", "use"):
        assert is_stopword(only_stops.split()[0]) and only_stops not in phrases


def test_candidate_phrases_max_words() -> None:
    phrases = candidate_phrases("alpha beta gamma delta epsilon", max_words=2)
    assert "alpha beta" in phrases
    assert "alpha beta gamma" not in phrases


def test_candidate_phrases_cjk_runs() -> None:
    phrases = candidate_phrases("我在上海中心大厦工作。")
    assert "我在上海中心大厦工作" in phrases
    assert "上海中心大厦" in phrases and "上海" in phrases
    assert all(len(p) >= 2 for p in phrases)
    assert not any(len(p) > 8 for p in phrases if p != "我在上海中心大厦工作")


def test_candidate_phrases_limit() -> None:
    text = " ".join(f"word{i}" for i in range(5000))
    phrases = candidate_phrases(text, limit=100)
    assert len(phrases) == 100
    assert phrases[0].startswith("word0")


def test_candidates_cover_what_linkify_links() -> None:
    targets = [ACME, CLOUD, GOOGLE, TOWER, SHANGHAI]
    phrases = set(candidate_phrases(DOC))
    _, linked = linkify(DOC, targets)
    titles = {t.slug: t.title.lower() for t in targets}
    assert linked
    assert all(titles[slug] in phrases for slug in linked)


# --- rewrite -----------------------------------------------------------------------------


def test_rewrite_keep_retarget_and_strip() -> None:
    text = "A [[keep|Kept]], [[old-name]], [[old-name#Usage|usage]], [[gone-page]] and [[gone|Gone Thing]]."
    calls: list[tuple[str, str | None]] = []

    def resolve(slug: str, display: str | None) -> str | None:
        calls.append((slug, display))
        return {"keep": "keep", "old-name": "new-name"}.get(slug)

    out, changed = rewrite_links(text, resolve)
    assert out == ("A [[keep|Kept]], [[new-name|old name]], [[new-name#Usage|usage]], gone page and Gone Thing.")
    assert changed == 4
    assert len(calls) == len(set(calls)) == 5


def test_rewrite_calls_once_per_pair_and_skips_code() -> None:
    calls: list[str] = []

    def resolve(slug: str, display: str | None) -> str | None:
        calls.append(slug)
        return None

    out, changed = rewrite_links("[[a]] [[a]] `[[a]]`", resolve)
    assert out == "a a `[[a]]`"
    assert changed == 2
    assert calls == ["a"]


def test_rewrite_no_change() -> None:
    text = "[[a|b]] text"
    assert rewrite_links(text, lambda slug, display: slug) == (text, 0)


# --- fuzzy resolve -----------------------------------------------------------------------


def _page(slug: str, title: str, aliases: list[str] | None = None, status: str = "published") -> PageLite:
    return PageLite(slug=slug, title=title, page_type="entity", status=status, aliases=aliases or [])


def test_fuzzy_stage1_display_matches_title_or_alias() -> None:
    pages = [_page("acme-corporation", "ACME Corp."), _page("big-blue", "IBM", ["Big Blue"])]
    assert fuzzy_resolve("whatever", "Acme  corp", pages) == "acme-corporation"
    assert fuzzy_resolve("whatever", "big blue", pages) == "big-blue"
    # Without a display, the slug read as words is the name.
    assert fuzzy_resolve("acme-corp", None, pages) == "acme-corporation"


def test_fuzzy_stage2_normalized_slug() -> None:
    pages = [_page("shanghai-tower", "Shanghai Tower (building)")]
    assert fuzzy_resolve("shang-hai-tower", None, pages) == "shanghai-tower"
    assert fuzzy_resolve("Shanghai_Tower", "the tower", pages) == "shanghai-tower"


def test_fuzzy_stage3_bigram_jaccard() -> None:
    pages = [_page("zhongguo-yinhang", "Bank of China"), _page("zhongguo-dianxin", "China Telecom")]
    assert fuzzy_resolve("zhongguo-yinghang", None, pages) == "zhongguo-yinhang"
    assert fuzzy_resolve("acme-cloud", None, [_page("acme-corp", "Acme Corp")]) is None


def test_fuzzy_threshold_documented_value() -> None:
    assert FUZZY_JACCARD_THRESHOLD == 0.8


def test_fuzzy_cjk() -> None:
    pages = [_page("上海中心大厦", "上海中心大厦")]
    assert fuzzy_resolve("上海-中心大厦", None, pages) == "上海中心大厦"
    assert fuzzy_resolve("北京", None, pages) is None


def test_fuzzy_ties_smallest_slug_and_best_score() -> None:
    pages = [_page("b-topic", "Topic"), _page("a-topic", "Topic")]
    assert fuzzy_resolve("x", "topic", pages) == "a-topic"
    pages = [_page("kubernetes-clusterz", "K2"), _page("kubernetes-cluster", "K1")]
    assert fuzzy_resolve("kubernetes-clusters", None, pages) == "kubernetes-cluster"


def test_fuzzy_archived_never_matches() -> None:
    pages = [_page("acme", "Acme", status="archived")]
    assert fuzzy_resolve("acme", "Acme", pages) is None
    assert fuzzy_resolve("acme", "Acme", []) is None


def test_linkify_never_links_a_mention_beside_a_bracket():
    # Seen in the stdlib demo: "List[int]" became "List[[[int|int]]]", a link no reader resolves.
    text = "Use List[int] or [object] here; int and object are types."
    targets = [LinkTarget("int", "int"), LinkTarget("object", "object")]
    out, linked = linkify(text, targets)
    assert "[[[" not in out and "]]]" not in out
    assert out.startswith("Use List[int] or [object] here;")
    assert linked == {"int", "object"}
    assert {link.slug for link in parse_links(out)} == {"int", "object"}


# --- the unlinked-mention check and its fix (wiki.lint.link_mentions) ---------------------


def _key_lookup(pages: list[PageLite]):
    """A title-key lookup as the database answers it: pages with lower(title) or lower(alias) among the phrases."""

    def lookup(phrases):
        wanted = set(phrases)
        return [p for p in pages if {k.lower() for k in (p.title, *p.aliases)} & wanted]

    return lookup


def test_mention_targets_put_titles_before_aliases_whatever_the_row_order() -> None:
    # Seen on the stdlib demo: "base classes" is one page's title and another's alias; the check
    # and the fix each took the first row of its own query and linked different pages, so the
    # check reported [[base-classes]] on every run and the fix never linked it.
    from wiki.lint import link_mentions, mention_targets

    alias_holder = _page("base-class", "base class", ["base classes"])
    title_holder = _page("base-classes", "base classes")
    text = "Defines base classes. Register them with base classes."
    for rows in ([alias_holder, title_holder], [title_holder, alias_holder]):
        assert [(t.slug, t.aliases) for t in mention_targets(rows, "abc")] == [
            ("base-class", ()),
            ("base-classes", ()),
            ("base-class", ("base classes",)),
        ]
        out, linked = link_mentions(text, "abc", rows, _key_lookup(rows))
        assert out == "Defines [[base-classes|base classes]]. Register them with base classes."
        assert linked == ["base-classes"]
    # the page itself comes first (never linked, but holding its own title whole); archived pages never
    targets = mention_targets([_page("old", "old", status="archived"), _page("abc", "abc")], "abc")
    assert [(t.slug, t.title) for t in targets] == [("abc", "abc")]


def test_a_page_s_own_title_holds_its_mentions_whole() -> None:
    # "Ttk Labelframe widget is a container" on its own page linked "Labelframe" to tix's LabelFrame
    from wiki.lint import link_mentions

    rows = [_page("ttk-labelframe-widget", "Ttk Labelframe widget"), _page("labelframe", "Labelframe")]
    text = "Ttk Labelframe widget is a container. A Labelframe groups widgets."
    out, linked = link_mentions(text, "ttk-labelframe-widget", rows, _key_lookup(rows))
    assert out == "Ttk Labelframe widget is a container. A [[labelframe|Labelframe]] groups widgets."
    assert linked == ["labelframe"]


@pytest.mark.parametrize(
    "text",
    ["Call Handler.handleError on failure.", "See logging.Handler for it.", "Use os.path.Handler_x now."],
)
def test_a_piece_of_a_dotted_code_name_is_no_mention(text: str) -> None:
    out, linked = linkify(text, [LinkTarget("handler", "Handler")])
    assert (out, linked) == (text, set())


def test_a_name_before_a_full_stop_is_still_linked() -> None:
    out, _ = linkify("Logging goes through a Handler. Then it ends.", [LinkTarget("handler", "Handler")])
    assert out == "Logging goes through a [[handler|Handler]]. Then it ends."


def test_link_mentions_goes_on_until_checking_its_output_finds_nothing() -> None:
    # A long page: linking its first mention frees room under candidate_phrases' limit, and a
    # title mentioned further on only then becomes a candidate (one linkify left it for next time).
    from wiki.lint import link_mentions

    pages = [_page("zeta-widget", "Zeta Widget"), _page("omega-gadget", "Omega Gadget")]
    lookup = _key_lookup(pages)
    head, tail = "The Zeta Widget spins.", "The Omega Gadget stops."
    for n in range(300, 700):
        filler = " ".join(f"w{i}x" for i in range(n))
        text = f"{head} {filler} {tail}"
        if "omega gadget" not in candidate_phrases(text) and "omega gadget" in candidate_phrases(
            f"The [[zeta-widget|Zeta Widget]] spins. {filler} {tail}"
        ):
            break
    else:
        raise AssertionError("no filler length puts the phrase at the limit")

    out, linked = link_mentions(text, "long-read", lookup(candidate_phrases(text)), lookup)

    assert linked == ["zeta-widget", "omega-gadget"]
    assert "[[omega-gadget|Omega Gadget]]" in out
    assert link_mentions(out, "long-read", lookup(candidate_phrases(out)), lookup) == (out, [])


def test_a_word_title_and_a_bare_member_name_link_no_prose_word() -> None:
    # the demo linked "random" (the adjective) to the random module and "filename" to fileinput.filename
    from wiki.lint import link_mentions

    rows = [
        _page("random", "random"),
        _page("fileinput-filename", "fileinput.filename", ["filename"]),
        _page("tarfile-tarfile", "tarfile.TarFile", ["TarFile"]),
    ]
    text = "Pick a random filename. Call fileinput.filename() on a TarFile."
    out, linked = link_mentions(text, "abc", rows, _key_lookup(rows))
    assert sorted(linked) == ["fileinput-filename", "tarfile-tarfile"]
    assert out.startswith("Pick a random filename. Call [[fileinput-filename|fileinput.filename]]()")
    # a concept page titled by a word keeps it
    concept = PageLite(slug="heap", title="heap", page_type="concept", aliases=[])
    assert link_mentions("A heap is a tree.", "abc", [concept], _key_lookup([concept]))[1] == ["heap"]
