"""Feeding a folder (or any iterable of documents) to a KB, and waiting for the wiki to catch up."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tqdm import tqdm

from kbwiki.corpus import CorpusDoc, Rejected
from wiki.models import KnowledgeBase

if TYPE_CHECKING:  # importing actors builds the broker: only once the servers are known
    from actors.deps import Deps

POLL_S = 0.5


@dataclass
class IngestReport:
    """Counts per outcome, and the reason of every skipped or rejected input."""

    counts: Counter = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)

    @property
    def queued(self) -> int:
        return self.counts["queued"]

    def describe(self) -> str:
        head = ", ".join(f"{k}={v}" for k, v in sorted(self.counts.items())) or "no documents found"
        return "\n".join(
            [head, *self.problems[:50]] + ([f"... {len(self.problems) - 50} more"] if len(self.problems) > 50 else [])
        )


def ingest_docs(deps: Deps, kb: KnowledgeBase, docs: Iterable[CorpusDoc | Rejected]) -> IngestReport:
    """Submit every document; rejected inputs (binary, undecodable) are reported, never stored."""
    from actors.ingest import submit_document

    report = IngestReport()
    for doc in docs:
        if isinstance(doc, Rejected):
            report.counts["rejected"] += 1
            report.problems.append(f"rejected {doc.path}: {doc.reason}")
            continue
        result = submit_document(
            deps,
            tenant_id=kb.tenant_id,
            knowledge_base_id=kb.id,
            title=doc.title,
            content=doc.text,
            source_uri=doc.source_uri,
        )
        report.counts[result.status] += 1
        if result.reason:
            report.problems.append(f"{result.status} {doc.source_uri}: {result.reason}")
    return report


def lane_rows(deps: Deps, kb_id: str) -> int:
    """Rows in every wiki lane of the KB (claimed ones included)."""
    from actors.lanes import SCOPE_KB, WIKI_LANES

    counts = deps.ops.counts_by_lane(SCOPE_KB, kb_id)
    return sum(counts.get(lane, 0) for lane in WIKI_LANES)


def wait_for_lanes(deps: Deps, kb: KnowledgeBase, expected: int, timeout_s: float, progress: bool = True) -> bool:
    """Block until the KB's wiki is complete, with a progress bar of documents settled.

    Complete is every lane of the KB empty: documents mapped and reduced (``wiki:ingest``,
    ``wiki:reduce``), cross-links done (``wiki:finalize``) and the index page rebuilt after the last
    batch (``wiki:index``, see ``actors.index``); a running batch still holds its reduce-lane rows.
    Returns False when ``timeout_s`` passes first. Needs running workers (``kbwiki worker``).
    """
    from actors.lanes import INGEST, REDUCE, SCOPE_KB, WIKI_LANES

    deadline = time.monotonic() + timeout_s
    bar = tqdm(total=max(expected, 1), unit="doc", desc="wiki", disable=not progress or expected == 0, mininterval=1.0)
    try:
        while time.monotonic() < deadline:
            counts = deps.ops.counts_by_lane(SCOPE_KB, kb.id)
            rows = sum(counts.get(lane, 0) for lane in WIKI_LANES)
            # documents still before or in reduce; the finalize lane holds slugs, not documents
            bar.update(max(0, expected - counts.get(INGEST, 0) - counts.get(REDUCE, 0)) - bar.n)
            bar.set_postfix(lane_rows=rows, refresh=False)
            if rows == 0:
                bar.n = expected
                bar.refresh()
                return True
            time.sleep(POLL_S)
        return False
    finally:
        bar.close()
