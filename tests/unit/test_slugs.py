"""Slugs and name keys: stable, unique, non-empty, safe as a path segment."""

from __future__ import annotations

import hashlib
import re

import pytest

from wiki.slugs import (
    fold_latin,
    has_cjk,
    normalize_name,
    normalize_slug,
    slugify,
    summary_slug,
)

TITLES = [
    "上海中心大厦",
    "Café Müller",
    "ACME Corp.",
    "acme corp",
    "MiXeD CaSe Title",
    "🎉🚀",
    "!!! ??? ...",
    "   \t\n ",
    "",
    "../../etc/passwd",
    ".hidden",
    "Straße",
    "東京タワー",
    "서울 타워",
    "Москва Сити",
    "हिन्दी भाषा",
    "Don't Panic",
    "a/b\\c",
    "x" * 500,
    "Long title " * 30,
    "ｆｕｌｌｗｉｄｔｈ ＡＢＣ",
]


def _safe(slug: str) -> bool:
    return bool(slug) and "/" not in slug and "\\" not in slug and ".." not in slug and not slug.startswith(".")


@pytest.mark.parametrize("title", TITLES)
def test_slug_is_safe_non_empty_and_stable(title: str) -> None:
    slug = slugify(title)
    assert _safe(slug)
    assert len(slug) <= 80
    assert not re.search(r"\s", slug)
    assert not slug.startswith("-") and not slug.endswith("-")
    assert "--" not in slug
    assert slugify(title) == slug


def test_cjk_kana_hangul_kept_as_written() -> None:
    assert slugify("上海中心大厦") == "上海中心大厦"
    assert slugify("東京タワー") == "東京タワー"
    assert slugify("서울 타워") == "서울-타워"
    assert slugify("上海 Tower") == "上海-tower"


def test_non_latin_scripts_kept_and_lowercased() -> None:
    assert slugify("Москва Сити") == "москва-сити"
    # Devanagari vowel signs are combining marks that belong to the word.
    assert slugify("हिन्दी भाषा") == "हिन्दी-भाषा"


def test_latin_accents_folded() -> None:
    assert slugify("Café Müller") == "cafe-muller"
    assert slugify("Straße") == "strasse"
    assert slugify("Ærøskøbing Łódź") == "aeroskobing-lodz"
    assert fold_latin("Crème brûlée") == "Creme brulee"
    # Marks on non-Latin letters are not accents.
    assert fold_latin("が") == "が"


def test_case_and_punctuation_runs() -> None:
    assert slugify("MiXeD CaSe Title") == "mixed-case-title"
    assert slugify("  Hello,   World!!  ") == "hello-world"
    assert slugify("Don't Panic") == slugify("Dont Panic") == "dont-panic"
    assert slugify("ｆｕｌｌｗｉｄｔｈ ＡＢＣ") == "fullwidth-abc"


@pytest.mark.parametrize("title", ["🎉🚀", "!!! ??? ...", "   ", "", "—", "🙂"])
def test_empty_result_falls_back_to_hash(title: str) -> None:
    expected = "page-" + hashlib.sha1(title.encode("utf-8")).hexdigest()[:10]
    assert slugify(title) == expected


def test_emoji_only_titles_are_distinct() -> None:
    assert slugify("🎉") != slugify("🚀")
    assert slugify("🎉 Launch") == "launch"


def test_path_like_titles_are_safe() -> None:
    assert slugify("../../etc/passwd") == "etc-passwd"
    assert slugify(".hidden") == "hidden"
    assert slugify("a/b\\c") == "a-b-c"


def test_long_titles_cut_with_hash_and_unique() -> None:
    base = "The history of the international standardisation of " * 3
    first = slugify(base + "railway gauges")
    second = slugify(base + "shipping containers")
    assert first != second
    assert len(first) <= 80 and len(second) <= 80
    assert re.fullmatch(r"[a-z-]+-[0-9a-f]{8}", first)
    # Cut at a hyphen: the part before the hash ends with a whole word of the title.
    head = first.rsplit("-", 1)[0]
    assert base.lower().replace(" ", "-").startswith(head + "-")
    assert slugify(base + "railway gauges") == first


def test_long_titles_same_words_share_slug() -> None:
    title = "Word " * 40
    assert slugify(title) == slugify(title.upper() + "!")


def test_long_single_word_is_hard_cut() -> None:
    slug = slugify("x" * 500)
    assert len(slug) == 80
    assert slug.startswith("x" * 71 + "-")
    assert slugify("x" * 501) != slug


def test_max_len_respected_and_validated() -> None:
    slug = slugify("alpha beta gamma delta epsilon zeta eta theta", max_len=24)
    assert len(slug) <= 24
    with pytest.raises(ValueError):
        slugify("anything", max_len=5)


def test_lone_surrogate_does_not_raise() -> None:
    assert slugify("\ud800").startswith("page-")


def test_summary_slug_prefix_and_length() -> None:
    assert summary_slug("Redis") == "doc-redis"
    assert summary_slug("Redis") != slugify("Redis")
    assert summary_slug("上海中心大厦") == "doc-上海中心大厦"
    assert len(summary_slug("Long title " * 30)) <= 80
    assert summary_slug("🎉").startswith("doc-page-")


def test_normalize_name_dedup_key() -> None:
    assert normalize_name("ACME Corp") == normalize_name("Acme  Corp.") == "acme corp"
    assert normalize_name("Acme Cloud") != normalize_name("Acme Corp")
    assert normalize_name("Café  Müller") == normalize_name("cafe muller")
    assert normalize_name("上海中心大厦") == "上海中心大厦"
    assert normalize_name("  --  ") == ""


def test_normalize_slug() -> None:
    assert normalize_slug("shang-hai-tower") == normalize_slug("shanghai_tower") == "shanghaitower"
    assert normalize_slug("Shanghai Tower") == "shanghaitower"
    assert normalize_slug("上海-中心") == "上海中心"
    assert normalize_slug("acme-cloud") != normalize_slug("acme-corp")


def test_has_cjk() -> None:
    assert has_cjk("abc上")
    assert has_cjk("タワー")
    assert has_cjk("서울")
    assert not has_cjk("Café")
