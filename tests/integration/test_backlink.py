"""Back-links on real PostgreSQL: a page that appears later is linked from the pages that already
mention it, found through the full-text index in chunks, never by reading the KB."""

from __future__ import annotations

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import _settle, _submit, env  # noqa: F401  (env: fixture)
from wiki.links import out_link_slugs


def test_a_page_created_later_is_linked_from_the_pages_that_mentioned_it_first(env, monkeypatch):  # noqa: F811
    import actors.backlink
    from actors.backlink import run_backlink

    deps, kb = env
    runs = []
    monkeypatch.setattr(actors.backlink, "CHUNK", 2)  # three mentioning pages: two chunks
    monkeypatch.setattr(actors.backlink, "run_backlink", lambda *a: runs.append(1) or run_backlink(*a))
    for name in ("Alpha", "Beta", "Gamma"):
        _submit(deps, kb, name, f"The {name} line mentions the Sprocket Drive in passing.",
                f"* {name} Part (entity): {name} Part is a part.")
    _settle(deps, kb)
    assert deps.pages.get(kb.id, "sprocket-drive") is None

    runs.clear()
    _submit(deps, kb, "Delta", "* Sprocket Drive (entity): The Sprocket Drive turns every wheel.")
    _settle(deps, kb)
    assert len(runs) >= 2  # the pages mentioning the new title came in chunks of two

    for name in ("alpha", "beta", "gamma"):
        assert "sprocket-drive" in out_link_slugs(deps.pages.get(kb.id, f"doc-{name}").content), name
    assert deps.pages.pages_mentioning(kb.id, ["sprocket drive"], "", 10) == [
        "doc-alpha", "doc-beta", "doc-delta", "doc-gamma", "sprocket-drive"]
    assert deps.pages.pages_mentioning(kb.id, ["sprocket drive"], "doc-delta", 2) == ["doc-gamma", "sprocket-drive"]


def test_a_title_that_goes_away_is_unlinked_from_the_pages_that_mentioned_it(env):  # noqa: F811
    from actors.delete import delete_document

    deps, kb = env
    _submit(deps, kb, "Alpha", "The Alpha line mentions the Sprocket Drive in passing.",
            "* Alpha Part (entity): Alpha Part is a part.")
    delta = _submit(deps, kb, "Delta", "* Sprocket Drive (entity): The Sprocket Drive turns every wheel.")
    _settle(deps, kb)
    assert "sprocket-drive" in out_link_slugs(deps.pages.get(kb.id, "doc-alpha").content)

    delete_document(deps, kb.tenant_id, kb.id, delta)
    _settle(deps, kb)

    alpha = deps.pages.get(kb.id, "doc-alpha").content
    assert "sprocket-drive" not in out_link_slugs(alpha) and "Sprocket Drive" in alpha
