"""Cross-link on real PostgreSQL: a page another transaction holds is put back, not waited for."""

from __future__ import annotations

from tests.e2e.conftest import actors_broker, pipeline_env  # noqa: F401  (fixtures: the real broker)
from tests.integration.test_retract import _settle, _submit, env  # noqa: F401  (env: fixture)
from wiki.links import parse_links


def _reduce_only(deps, kb) -> None:
    """Pump, map and reduce the KB's documents, leaving the finalize lane for the test."""
    from stages.ingest import pump_ingest_lane
    from stages.map import map_document
    from stages.reduce import run_reduce_batch
    from wiki.lanes import INGEST, OP_INGEST, REDUCE, SCOPE_KB

    pump_ingest_lane(kb.tenant_id, kb.id, deps)
    for op in deps.ops.peek(INGEST, SCOPE_KB, kb.id, 1000):
        if op.claimed_at is not None and op.op == OP_INGEST:
            map_document(kb.tenant_id, kb.id, op.dedup_key, op.id, deps)
    while deps.ops.pending_count(REDUCE, SCOPE_KB, kb.id):
        run_reduce_batch(kb.tenant_id, kb.id, deps)


def _sprocket_mentioning_widget(deps, kb) -> None:
    """A reduced KB whose "sprocket" page mentions the "widget" page, not yet cross-linked (the
    two come from two documents, so the sprocket page does not list the widget as related)."""
    _submit(deps, kb, "Alpha", "* Widget (entity): Widget is a small part.")
    _submit(deps, kb, "Beta", "* Sprocket (entity): A sprocket drives the widget of every machine.")
    _reduce_only(deps, kb)


def _crosslink_with_a_writer_meanwhile(deps, kb, write):
    """One cross-link run during which ``write()`` runs after the run has read its pages and
    looked up their mentions (as another writer's commit would land); returns its result."""
    from stages.crosslink import run_crosslink

    lookup = deps.pages.title_matches

    def lookup_then_write(kb_id, phrases):
        found = lookup(kb_id, phrases)
        write()
        return found

    deps.pages.title_matches = lookup_then_write
    try:
        return run_crosslink(kb.tenant_id, kb.id, deps)
    finally:
        del deps.pages.title_matches


def test_a_page_held_by_another_writer_is_put_back_on_the_lane_and_linked_later(env):  # noqa: F811
    from stages.crosslink import run_crosslink
    from wiki.lanes import FINALIZE, SCOPE_KB

    deps, kb = env
    _sprocket_mentioning_widget(deps, kb)
    assert deps.pages.get(kb.id, "sprocket") and deps.pages.get(kb.id, "widget")

    with deps.pool.connection() as holder:  # another writer holds the sprocket page
        holder.execute(
            "SELECT 1 FROM wiki_pages WHERE knowledge_base_id = %s AND slug = 'sprocket'"
            " AND deleted_at IS NULL FOR UPDATE",
            (kb.id,),
        )
        result = run_crosslink(kb.tenant_id, kb.id, deps)
        assert result.busy == 1
        put_back = deps.ops.peek(FINALIZE, SCOPE_KB, kb.id, 10)
        assert [op.payload["slugs"] for op in put_back] == [["sprocket"]]
        assert "widget" not in {link.slug for link in parse_links(deps.pages.get(kb.id, "sprocket").content)}

    result = run_crosslink(kb.tenant_id, kb.id, deps)
    assert result.busy == 0 and result.linked >= 1
    assert "widget" in {link.slug for link in parse_links(deps.pages.get(kb.id, "sprocket").content)}
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 0
    _settle(deps, kb)


def test_a_page_rewritten_while_it_was_being_linked_is_not_overwritten(env):  # noqa: F811
    from stages.crosslink import run_crosslink
    from wiki.lanes import FINALIZE, SCOPE_KB

    deps, kb = env
    _sprocket_mentioning_widget(deps, kb)

    def edit():  # another writer saves the page between read and write
        page = deps.pages.get(kb.id, "sprocket")
        if "Edited meanwhile." not in page.content:
            deps.pages.save(page.model_copy(update={"content": page.content + "\nEdited meanwhile.\n"}))

    result = _crosslink_with_a_writer_meanwhile(deps, kb, edit)
    assert result.busy == 1
    assert "Edited meanwhile." in deps.pages.get(kb.id, "sprocket").content  # the other write survived
    assert [op.payload["slugs"] for op in deps.ops.peek(FINALIZE, SCOPE_KB, kb.id, 10)] == [["sprocket"]]

    run_crosslink(kb.tenant_id, kb.id, deps)
    page = deps.pages.get(kb.id, "sprocket")
    assert "Edited meanwhile." in page.content and "widget" in {link.slug for link in parse_links(page.content)}


def test_the_index_page_is_left_to_its_rebuild(env):  # noqa: F811
    # Every cross-link run triggers an index rebuild, so the index's version always moved on by
    # the time a run wrote it: runs put it back on the lane forever (seen in the delete e2e test).
    from stages.crosslink import enqueue_touched, run_crosslink
    from wiki.lanes import FINALIZE, SCOPE_KB
    from wiki.slugs import INDEX_SLUG

    deps, kb = env
    _submit(deps, kb, "Alpha", "* Widget (entity): Widget is a small part.")
    _settle(deps, kb)
    index = deps.pages.get(kb.id, INDEX_SLUG)
    assert index is not None
    enqueue_touched(kb, [INDEX_SLUG], ops=deps.ops)
    result = run_crosslink(kb.tenant_id, kb.id, deps)
    assert (result.pages, result.rewritten, result.busy) == (1, 0, 0)
    assert deps.pages.get(kb.id, INDEX_SLUG).version == index.version
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 0


def test_a_run_takes_one_op_and_sends_the_next_run_first(env):  # noqa: F811
    from stages.crosslink import CHUNK, enqueue_touched, run_crosslink
    from wiki.lanes import FINALIZE, SCOPE_KB

    deps, kb = env
    _submit(deps, kb, "Alpha", "* Widget (entity): Widget is a small part.")
    _settle(deps, kb)
    enqueue_touched(kb, [f"page-{i}" for i in range(2 * CHUNK + 1)], ops=deps.ops)  # 3 ops
    assert deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id) == 3
    sent = []
    result = run_crosslink(kb.tenant_id, kb.id, deps, fan_out=lambda: sent.append(1))
    assert (result.claimed, result.pages, result.remaining, len(sent)) == (1, CHUNK, 2, 1)
    while deps.ops.pending_count(FINALIZE, SCOPE_KB, kb.id):
        run_crosslink(kb.tenant_id, kb.id, deps, fan_out=lambda: sent.append(1))
    assert len(sent) == 2  # the last run found nothing left to hand on


def test_a_link_to_a_page_deleted_while_it_was_being_linked_is_not_written(env):  # noqa: F811
    # Seen in the delete e2e test and the demo: a run found "connections" as a mention, a reduce
    # batch then moved it to "connection", and the run wrote a link to a page that was gone.
    deps, kb = env
    _sprocket_mentioning_widget(deps, kb)
    # another writer deletes the page the run will link to
    result = _crosslink_with_a_writer_meanwhile(deps, kb, lambda: deps.pages.delete(kb.id, "widget"))
    assert result.busy >= 1
    assert "widget" not in {link.slug for link in parse_links(deps.pages.get(kb.id, "sprocket").content)}
    # only the summary reduce wrote before the delete links there (a real delete queues it for repair)
    linking = {p.slug for p in deps.pages.iter_pages(kb.id) if "widget" in {lk.slug for lk in parse_links(p.content)}}
    assert linking == {"doc-alpha"}
