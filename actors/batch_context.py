"""Lazy, cached lookups one reduce batch shares between its planner and its threads.

A batch asks PostgreSQL only about the slugs, documents and names it handles; each answer is
kept for the rest of the batch (the pages it reads do not change until the batch writes), so a
name five documents of the batch share costs one similar-title lookup, not five. Caches are
guarded by one lock; a miss is fetched outside it (two threads missing the same key at once
both fetch it, and the answers are equal).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from repos.pages import WikiPageRepository
from wiki.models import PageLite


class BatchContext:
    """Per-batch lookups on one KB's pages.

    Memory is bounded by what the batch touches: a few lite rows per extracted item and the
    slugs of the batch's documents, never the KB.
    """

    def __init__(self, pages: WikiPageRepository, kb_id: str, similar_k: int):
        self.pages, self.kb_id, self.similar_k = pages, kb_id, similar_k
        self._lock = threading.Lock()
        self._lite: dict[str, PageLite | None] = {}  # slug -> live page, None when there is none
        self._citing: dict[str, list[str]] = {}  # knowledge id -> slugs of the live pages citing it
        self._similar: dict[str, list[PageLite]] = {}  # lowercased text -> top-K similar item pages

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
        return next((s for s, p in sorted(pages.items()) if p.page_type == "summary"), None)

    def similar(self, text: str) -> list[PageLite]:
        """Top-K live entity/concept pages trigram-similar to ``text`` (:meth:`similar_many`)."""
        return self.similar_many([text])[text.lower()]

    def similar_many(self, texts: Iterable[str]) -> dict[str, list[PageLite]]:
        """Top-K live entity/concept pages trigram-similar to each text, keyed by the lowercased
        text: one ``similar_titles_many`` statement for the texts not asked before."""
        keys = {t.lower() for t in texts}
        with self._lock:
            missing = keys - self._similar.keys()
        if missing:
            found = self.pages.similar_titles_many(self.kb_id, missing, k=self.similar_k)
            with self._lock:
                self._similar.update(found)
        with self._lock:
            return {k: self._similar[k] for k in keys}
