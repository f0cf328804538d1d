-- An entity or concept page is the page of one name key (wiki.dedup.name_key of its title): reduce
-- finds the page an item belongs to by that key exactly, one B-tree probe per key, whichever page
-- existed first. NULL for summaries and the index. Rows written before this column are filled by
-- 0061 (the key needs the Python lexicon, so SQL cannot compute it).
-- depends: 0052_most_cited

ALTER TABLE wiki_pages ADD COLUMN IF NOT EXISTS name_key text;

CREATE INDEX IF NOT EXISTS idx_wiki_pages_name_key
    ON wiki_pages (knowledge_base_id, name_key)
    WHERE deleted_at IS NULL AND name_key IS NOT NULL;
