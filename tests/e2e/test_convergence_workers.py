"""Worker threads change nothing either: the fixture corpus ingested through the running pipeline
(real worker threads, shuffled, small batches) gives the wiki the stages give run one by one."""

from __future__ import annotations

import random
import uuid

import pytest

from tests.e2e.conftest import wait_until
from tests.integration.test_convergence import _assert_same, _corpus, _link_rows, _submit, _wiki
from tests.support.pipeline import settle

pytestmark = pytest.mark.e2e


def test_worker_threads_give_the_wiki_a_sequential_run_gives(deps, worker):
    from kbwiki.ingest import lane_rows

    docs = _corpus()
    shuffled = docs[:]
    random.Random(7).shuffle(shuffled)

    kb = deps.kbs.get_or_create(1, f"converge-workers-{uuid.uuid4().hex[:8]}")
    deps.kbs.set_wiki_config(kb.id, {"ingest_batch_size": 5})
    _submit(deps, kb, shuffled)

    def drained():
        return (
            lane_rows(deps, kb.id) == 0
            and deps.docs.count_by_status(kb.id).get("done", 0) == len(docs)
            and deps.pages.link_stats(kb.id)["dead_links"] == 0
        )

    wait_until(drained, 300, "every lane drained")

    worker.stop()  # the sequential run below must be the only one draining its lanes
    try:
        alone = deps.kbs.get_or_create(1, f"converge-alone-{uuid.uuid4().hex[:8]}")
        _submit(deps, alone, docs)
        settle(deps, alone)
        _assert_same(_wiki(deps, alone), _wiki(deps, kb))
        assert _link_rows(deps, kb) == _link_rows(deps, alone)
    finally:
        worker.start()
