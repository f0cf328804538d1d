"""Lazy, cached lookups one reduce batch shares between its planner and its threads.

A batch asks PostgreSQL only about the slugs, documents and names it handles; each answer is
kept for the rest of the batch (the pages it reads do not change until the batch writes), so a
name five documents of the batch share costs one name-key lookup, not five. Caches are
guarded by one lock; a miss is fetched outside it (two threads missing the same key at once
both fetch it, and the answers are equal).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from repos.pages import WikiPageRepository
from wiki.models import PageLite, PageType


class BatchContext:
    """Per-batch lookups on one KB's pages.

    Memory is bounded by what the batch touches: a few lite rows per extracted item and the
    slugs of the batch's documents, never the KB.
    """

    def __init__(self, pages: WikiPageRepository, kb_id: str):
        self.pages, self.kb_id = pages, kb_id
        self._lock = threading.Lock()
        self._lite: dict[str, PageLite | None] = {}  # slug -> live page, None when there is none
        self._citing: dict[str, list[str]] = {}  # knowledge id -> slugs of the live pages citing it
        self._by_key: dict[str, list[PageLite]] = {}  # name key -> live item pages of that key

    def lite(self, slugs: Iterable[str]) -> dict[str, PageLite]:
        """Live pages among ``slugs`` (narrow rows), keyed by slug: one query for the misses."""
        slugs = set(slugs)
        with self._lock:
            missing = slugs - self._lite.keys()
        if missing:
            found = self.pages.lite_by_slugs(self.kb_id, missing)
            with self._lock:
                self._lite.update({s: found.get(s) for s in missing})
        with self._lock:
            return {s: self._lite[s] for s in slugs if self._lite.get(s) is not None}

    def slugs_citing(self, knowledge_id: str) -> list[str]:
        """Slugs of the live pages citing the document (:meth:`slugs_citing_many`)."""
        return self.slugs_citing_many([knowledge_id])[knowledge_id]

    def slugs_citing_many(self, knowledge_ids: Iterable[str]) -> dict[str, list[str]]:
        """Slugs of the live pages citing each document: one source-ref GIN lookup for the misses."""
        ids = set(knowledge_ids)
        with self._lock:
            missing = ids - self._citing.keys()
        if missing:
            found = self.pages.slugs_by_sources(self.kb_id, missing)
            with self._lock:
                self._citing.update(found)
        with self._lock:
            return {kid: self._citing[kid] for kid in ids}

    def summary_of(self, knowledge_id: str) -> str | None:
        """The slug of the document's summary page, or None when it has none yet."""
        pages = self.lite(self.slugs_citing(knowledge_id))
        return next((s for s, p in sorted(pages.items()) if p.page_type == PageType.summary), None)

    def by_name_keys(self, keys: Iterable[str]) -> dict[str, list[PageLite]]:
        """The live entity/concept pages of each ``wiki.dedup.name_key`` (smallest slug first, []
        when there is none): one ``by_name_keys`` statement for the keys not asked before."""
        keys = set(keys)
        with self._lock:
            missing = keys - self._by_key.keys()
        if missing:
            found = self.pages.by_name_keys(self.kb_id, missing)
            with self._lock:
                self._by_key.update({k: found.get(k, []) for k in missing})
        with self._lock:
            return {k: self._by_key[k] for k in keys}
