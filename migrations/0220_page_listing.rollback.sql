DROP INDEX IF EXISTS idx_wiki_links_kb_to_from;
DROP INDEX IF EXISTS idx_wiki_pages_kb_type_az;
DROP INDEX IF EXISTS idx_wiki_pages_kb_az;
