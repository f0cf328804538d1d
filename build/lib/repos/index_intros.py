"""The model-written introduction of a KB's index page (``wiki_index_intros``): one row per KB."""

from __future__ import annotations

from psycopg_pool import ConnectionPool
from pydantic import BaseModel


class IndexIntro(BaseModel):
    """The ``intro`` ``model`` wrote from the summaries ``slugs`` (at most ``RECENT_SUMMARIES``)."""

    model: str
    slugs: list[str]
    intro: str


class IndexIntroRepository:
    """Read and replace a KB's index introduction."""

    def __init__(self, pool: ConnectionPool) -> None:
        self.pool = pool

    def get(self, kb_id: str) -> IndexIntro | None:
        """The KB's stored introduction, or None."""
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT model, slugs, intro FROM wiki_index_intros WHERE knowledge_base_id = %s", (kb_id,)
            ).fetchone()
        return IndexIntro.model_validate(row) if row else None

    def put(self, kb_id: str, intro: IndexIntro) -> None:
        """Store ``intro`` as the KB's introduction (replacing any)."""
        with self.pool.connection() as conn:
            conn.execute(
                "INSERT INTO wiki_index_intros (knowledge_base_id, model, slugs, intro) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (knowledge_base_id) DO UPDATE SET model = EXCLUDED.model, slugs = EXCLUDED.slugs,"
                " intro = EXCLUDED.intro, updated_at = now()",
                (kb_id, intro.model, intro.slugs, intro.intro),
            )
