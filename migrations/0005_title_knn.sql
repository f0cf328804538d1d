-- Nearest-title lookups for dedup and link repair: a GiST trigram index ordered by distance
-- (KNN), per KB thanks to btree_gist. A top-K `ORDER BY lower(title) <-> q LIMIT k` walks the
-- index in distance order and stops after k rows, where a `%` filter on the GIN index rechecks
-- every candidate row (and the planner often preferred a sequential scan at 10k pages).
-- depends: 0003_wiki

CREATE EXTENSION IF NOT EXISTS btree_gist;

CREATE INDEX IF NOT EXISTS idx_wiki_pages_title_knn
    ON wiki_pages USING GIST (knowledge_base_id, lower(title) gist_trgm_ops)
    WHERE deleted_at IS NULL;
