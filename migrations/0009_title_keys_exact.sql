-- Cross-link looks up the phrases of a page (up to 2,000) by exact title or alias key. Through the
-- GIN trigram index or the wide page rows this was the hot spot of linux-doc ingestion (dozens of
-- concurrent lookups holding page locks); a B-tree on (key, knowledge_base_id) answers each
-- phrase with one probe, and cannot serve a KB-only scan.
-- depends: 0008_pages_kb_id

CREATE INDEX IF NOT EXISTS idx_wiki_title_keys_key ON wiki_title_keys (key, knowledge_base_id);
