DROP INDEX IF EXISTS idx_wiki_pages_slug_trgm;
DROP INDEX IF EXISTS idx_wiki_pages_slug_key;
