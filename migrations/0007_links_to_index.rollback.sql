DROP INDEX IF EXISTS idx_wiki_links_to_slug;
CREATE INDEX IF NOT EXISTS idx_wiki_links_to ON wiki_links (knowledge_base_id, to_slug);
