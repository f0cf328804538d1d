DROP TABLE IF EXISTS wiki_title_keys;
CREATE INDEX IF NOT EXISTS idx_wiki_pages_title_knn
    ON wiki_pages USING GIST (knowledge_base_id, lower(title) gist_trgm_ops)
    WHERE deleted_at IS NULL;
