"""Dead-link repair on real PostgreSQL follows the documented resolve order for every link to no
live page: display text equal to a live title or alias; else equal slugs without hyphens,
underscores and case; else character-bigram Jaccard >= 0.8; else plain text. Candidates are looked
up by the display text and by the slug, so a display text no title has still finds its page."""

from __future__ import annotations

import uuid

import pytest

from stages.relink import dead_link_resolver
from wiki.links import rewrite_links
from wiki.models import Page, SourceRef


@pytest.fixture()
def kb_pages(settings, clean_db):
    """(pages repository, kb id) with a few live pages of every kind a link can land on."""
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor

    deps = build_deps(settings, pool=clean_db, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"repair-{uuid.uuid4().hex[:6]}")
    ref = [SourceRef(knowledge_id="k1", title="Doc")]
    pages = [
        Page(
            tenant_id=1,
            knowledge_base_id=kb.id,
            slug=slug,
            title=title,
            page_type=kind,
            aliases=aliases,
            content=f"{title} is a page.",
            source_refs=ref,
        )
        for slug, title, kind, aliases in [
            ("beijing-daxing", "Beijing Daxing", "entity", []),
            ("shanghai-tower", "Shanghai Tower", "entity", ["上海中心大厦"]),
            ("read-copy-update", "read-copy update", "concept", ["RCU"]),
            ("zhongguo-yinhang", "Zhongguo Yinhang", "entity", []),
            ("doc-guide", "Guide", "summary", []),
        ]
    ]
    deps.pages.save_many(pages)
    yield deps.pages, kb.id
    deps.redis.close()


def _repair(pages, kb_id: str, text: str) -> str:
    resolve, _ = dead_link_resolver(pages, kb_id, [text])
    return rewrite_links(text, resolve)[0]


@pytest.mark.parametrize(
    "text, repaired",
    [
        # live targets, with or without a vault folder, are kept as written
        ("[[beijing-daxing|Daxing]]", "[[beijing-daxing|Daxing]]"),
        (
            "[[entity/beijing-daxing]] [[summary/doc-guide|Guide]]",
            "[[entity/beijing-daxing]] [[summary/doc-guide|Guide]]",
        ),
        # 1. the display text is a live title or alias (CJK alias, no slug in common)
        ("[[rcu-2|RCU]]", "[[read-copy-update|RCU]]"),
        ("[[shang-hai-zhong-xin|上海中心大厦]]", "[[shanghai-tower|上海中心大厦]]"),
        # 2. slugs equal without hyphens and case, whatever the display text (CJK, no title has it)
        ("[[bei-jing-daxing|北京大兴]]", "[[beijing-daxing|北京大兴]]"),
        ("[[Shanghai_Tower|the tower]]", "[[shanghai-tower|the tower]]"),
        ("[[entity/Bei-Jing-Daxing]]", "[[beijing-daxing|Bei Jing Daxing]]"),
        # 3. bigram Jaccard of the normalized slugs >= 0.8
        ("[[zhongguo-yinghang|中国银行]]", "[[zhongguo-yinhang|中国银行]]"),
        # 4. nothing close: plain text
        ("[[acme-corp|Acme Corp]] and [[concept/gone]]", "Acme Corp and gone"),
    ],
)
def test_every_resolve_stage(kb_pages, text, repaired):
    pages, kb_id = kb_pages
    assert _repair(pages, kb_id, text) == repaired


def test_the_title_stage_comes_before_the_slug_stages(kb_pages):
    # the slug alone would go to beijing-daxing; the display text is Shanghai Tower's alias
    pages, kb_id = kb_pages
    assert _repair(pages, kb_id, "[[bei-jing-daxing|上海中心大厦]]") == "[[shanghai-tower|上海中心大厦]]"


def test_slug_candidates_come_from_an_indexed_lookup(kb_pages):
    pages, kb_id = kb_pages
    found = pages.similar_slugs_many(kb_id, ["beijingdaxing", "zhongguoyinghang", "nothinglikeit"])
    assert [p.slug for p in found["beijingdaxing"]][:1] == ["beijing-daxing"]
    assert "zhongguo-yinhang" in [p.slug for p in found["zhongguoyinghang"]]
    assert found["nothinglikeit"] == []
