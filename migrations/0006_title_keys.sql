-- Dedup and link-repair candidates come from a narrow table of title and alias keys with a GIN
-- trigram index, queried with a high similarity threshold (see repos.pages.TRGM_THRESHOLD).
-- Measured on 1k/10k/40k-document KBs (bench/scale.py): the GiST KNN walk of 0005 grew from
-- 2.5 ms to 96 ms per lookup, and the GIN `%` filter on the wide page rows to 89 ms (the planner
-- picked the GiST index); this table answers in ~3 ms at every size.
-- depends: 0005_title_knn

DROP INDEX IF EXISTS idx_wiki_pages_title_knn;

CREATE TABLE IF NOT EXISTS wiki_title_keys (
    knowledge_base_id VARCHAR(64) NOT NULL,
    slug              VARCHAR(255) NOT NULL,
    key               TEXT NOT NULL
);
COMMENT ON TABLE wiki_title_keys IS 'lower(title) and lower(alias) of every live, non-archived entity and concept page; rewritten with the page in one transaction.';

-- fastupdate off: no pending list for every lookup to scan after bulk writes.
CREATE INDEX IF NOT EXISTS idx_wiki_title_keys_trgm ON wiki_title_keys USING GIN (key gin_trgm_ops)
    WITH (fastupdate = off);
-- Rewrites find a page's keys by slug. A hash index serves only that equality: any B-tree that
-- holds knowledge_base_id tempted the planner into scanning the whole KB instead of using the GIN.
CREATE INDEX IF NOT EXISTS idx_wiki_title_keys_slug ON wiki_title_keys USING HASH (slug);

INSERT INTO wiki_title_keys (knowledge_base_id, slug, key)
SELECT DISTINCT p.knowledge_base_id, p.slug, lower(k.key)
FROM wiki_pages p, LATERAL (SELECT p.title UNION SELECT jsonb_array_elements_text(p.aliases)) AS k(key)
WHERE p.deleted_at IS NULL AND p.page_type IN ('entity', 'concept') AND p.status <> 'archived';
