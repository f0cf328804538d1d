"""The offline extractor through the whole pipeline: variants on one page, CJK pages (issue 14)."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import _assert_no_dead_links, _pages, _settle


@pytest.fixture()
def env(actors_broker, pool):  # noqa: F811
    """(deps with the offline extractor, a fresh KB)."""
    from stages.deps import build_deps
    from wiki.extract.offline import OfflineExtractor
    from wiki.settings import get_settings

    deps = build_deps(get_settings(), pool, extractor=OfflineExtractor())
    kb = deps.kbs.get_or_create(1, f"offline-{uuid.uuid4().hex[:8]}")
    yield deps, kb
    deps.redis.close()


def _submit(deps, kb, title: str, content: str) -> str:
    from stages.ingest import submit_document

    result = submit_document(
        deps,
        tenant_id=kb.tenant_id,
        knowledge_base_id=kb.id,
        title=title,
        content=content,
        source_uri=f"docs/{title}.md",
    )
    assert result.status == "queued", result
    return result.knowledge_id


PHOTON_DOCS = {
    "Light": "Photons are particles of light that carry energy. Photons move at the speed of light. "
    "A laser sends out photons in one direction.",
    "Quanta": "PHOTONS are the quanta of the electromagnetic field. PHOTONS have no rest mass. "
    "Detectors count PHOTONS one by one.",
    "Fibres": "The photons are small packets of energy in the fibre. The photons travel through the glass core. "
    "Losses in the fibre absorb some photons.",
}


def test_case_variants_in_three_documents_make_one_page_citing_all_three(env):
    deps, kb = env
    ids = {_submit(deps, kb, title, text) for title, text in PHOTON_DOCS.items()}
    _settle(deps, kb)

    pages = _pages(deps, kb)
    photons = [p for p in pages.values() if p.page_type in ("entity", "concept") and "photon" in p.slug]
    assert [p.slug for p in photons] == ["photons"], sorted(pages)
    page = photons[0]
    assert {r.knowledge_id for r in page.source_refs} == ids
    assert {"Photons", "PHOTONS"} <= set(page.aliases) | {page.title}
    assert not any("travel" in slug for slug in pages)
    # the lead defines the subject; every quoted sentence is a whole sentence of a source
    lead = page.content.splitlines()[0]
    assert lead in {
        "Photons are particles of light that carry energy.",
        "PHOTONS are the quanta of the electromagnetic field.",
        "The photons are small packets of energy in the fibre.",
    }
    sources = " ".join(PHOTON_DOCS.values())
    quoted = [
        line[2 : line.rindex(" ([[")] for line in page.content.splitlines() if line.startswith("- ") and "([[" in line
    ]
    assert quoted and all(q in sources for q in quoted)
    _assert_no_dead_links(deps, kb)


CHINESE = (
    "北京大兴国际机场是位于中国北京市大兴区的超大型国际航空枢纽。北京大兴国际机场于2019年9月25日正式通航。"
    "中国民用航空局是主管民用航空事业的国家局。中国民用航空局负责机场的管理。"
)
JAPANESE = (
    "東京スカイツリーは東京都墨田区にある電波塔である。東京スカイツリーの建設は2008年に始まった。"
    "電波塔は放送用の電波を送信する塔である。電波塔は高い場所に建てられる。"
)


def test_chinese_and_japanese_documents_give_pages_in_their_script_with_stable_slugs(env):
    from stages.delete import delete_document

    deps, kb = env
    zh = _submit(deps, kb, "北京大兴国际机场", CHINESE)
    ja = _submit(deps, kb, "東京スカイツリー", JAPANESE)
    short = _submit(deps, kb, "富士山", "富士山は日本で最も高い山である。")  # 16 characters: not near-empty
    _settle(deps, kb)

    before = {slug: (p.page_type, p.title) for slug, p in _pages(deps, kb).items() if p.page_type != "index"}
    titles = {t for _, t in before.values()}
    assert {"北京大兴国际机场", "中国民用航空局", "東京スカイツリー", "電波塔", "富士山"} <= titles, before
    assert sum(kind == "summary" for kind, _ in before.values()) == 3
    assert all(any(c > "\u3000" for c in slug) for slug in before)  # slugs keep the script
    _assert_no_dead_links(deps, kb)

    for kid in (zh, ja, short):
        delete_document(kb.tenant_id, kb.id, kid, deps)
    _settle(deps, kb)
    assert not [p for p in _pages(deps, kb).values() if p.page_type != "index"]
    # a re-ingest waits out the delete tombstone only in Redis: clear it as its hour would
    deps.redis.delete(*deps.redis.keys(f"{deps.settings.key_prefix}:deleted:{kb.id}:*") or ["-"])
    _submit(deps, kb, "富士山", "富士山は日本で最も高い山である。")
    _submit(deps, kb, "東京スカイツリー", JAPANESE)
    _submit(deps, kb, "北京大兴国际机场", CHINESE)
    _settle(deps, kb)
    after = {slug: (p.page_type, p.title) for slug, p in _pages(deps, kb).items() if p.page_type != "index"}
    assert after == before
