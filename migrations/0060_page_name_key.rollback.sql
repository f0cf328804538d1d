DROP INDEX IF EXISTS idx_wiki_pages_name_key;
ALTER TABLE wiki_pages DROP COLUMN IF EXISTS name_key;
