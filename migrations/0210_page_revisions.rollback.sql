DROP TABLE IF EXISTS wiki_page_revisions;
ALTER TABLE wiki_pages DROP COLUMN IF EXISTS written_by;
