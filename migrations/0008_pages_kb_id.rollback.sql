DROP INDEX IF EXISTS idx_wiki_pages_kb_id;
