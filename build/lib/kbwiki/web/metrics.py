"""kbwiki's Prometheus gauges for one tenant, read from PostgreSQL at scrape time.

One bounded set of five grouped queries (KBs, lanes, documents, pages, dead letters) per scrape,
cached ``CACHE_S`` seconds so several scrapers (or a fast one) cost one read. Worker-side series
(message counts and durations per actor) come from Dramatiq's own Prometheus middleware on the
workers, not from here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from repos.web import WebRepository

#: Seconds a scrape's numbers are reused.
CACHE_S = 5.0


class KbwikiCollector(Collector):
    """Collects ``kbwiki_*`` gauges of one tenant (labels: ``kb`` is the KB's name)."""

    def __init__(self, repo: WebRepository, tenant_id: int, cache_s: float = CACHE_S) -> None:
        self.repo = repo
        self.tenant_id = tenant_id
        self.cache_s = cache_s
        self._lock = threading.Lock()
        self._cached: tuple[float, list[Metric]] | None = None

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] > self.cache_s:
                self._cached = (time.monotonic(), self._read())
            yield from self._cached[1]

    def _read(self) -> list[Metric]:
        started = time.perf_counter()
        t = self.tenant_id
        names = {kb.id: kb.name for kb in self.repo.kbs(t, limit=10_000)}
        rows = GaugeMetricFamily(
            "kbwiki_lane_rows", "Rows waiting in a KB's lane (claimed ones included).", labels=["kb", "lane"]
        )
        age = GaugeMetricFamily(
            "kbwiki_lane_oldest_age_seconds", "Age of the oldest row of a KB's lane.", labels=["kb", "lane"]
        )
        claimed = GaugeMetricFamily(
            "kbwiki_lane_claimed_rows", "Rows of a KB's lane claimed by a worker.", labels=["kb", "lane"]
        )
        for lane in self.repo.lanes(t):
            if lane.knowledge_base_id in names:
                labels = [names[lane.knowledge_base_id], lane.task_type]
                rows.add_metric(labels, lane.rows)
                age.add_metric(labels, lane.oldest_age_s)
                claimed.add_metric(labels, lane.claimed)
        docs = GaugeMetricFamily("kbwiki_documents", "Documents of a KB per status.", labels=["kb", "status"])
        for kb_id, counts in self.repo.documents_by_status(t).items():
            for status, n in counts.items():
                if kb_id in names:
                    docs.add_metric([names[kb_id], status], n)
        pages = GaugeMetricFamily("kbwiki_pages", "Live pages of a KB per page type.", labels=["kb", "page_type"])
        for kb_id, counts in self.repo.pages_by_type(t).items():
            for page_type, n in counts.items():
                if kb_id in names:
                    pages.add_metric([names[kb_id], page_type], n)
        dead = GaugeMetricFamily(
            "kbwiki_dead_letters", "Open dead letters of the tenant per task type.", labels=["task_type"]
        )
        for task_type, n in self.repo.dead_letters_by_type(t).items():
            dead.add_metric([task_type], n)
        kbs = GaugeMetricFamily("kbwiki_knowledge_bases", "Live KBs of the tenant.", value=len(names))
        took = GaugeMetricFamily(
            "kbwiki_metrics_read_seconds",
            "Time the last read of these gauges took.",
            value=time.perf_counter() - started,
        )
        return [rows, claimed, age, docs, pages, dead, kbs, took]
