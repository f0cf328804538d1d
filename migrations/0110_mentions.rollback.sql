DELETE FROM wiki_pages WHERE page_type = 'disambiguation';
ALTER TABLE wiki_pages DROP CONSTRAINT IF EXISTS wiki_pages_page_type_check;
ALTER TABLE wiki_pages ADD CONSTRAINT wiki_pages_page_type_check
    CHECK (page_type IN ('summary', 'entity', 'concept', 'index'));
DROP TABLE IF EXISTS wiki_mention_names;
DROP TABLE IF EXISTS wiki_mention_keys;
DROP TABLE IF EXISTS wiki_mentions;
