-- The lint walk's keyset cursor: a KB's live pages in id order, without reading other KBs' rows.
-- depends: 0007_links_to_index

CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_id
    ON wiki_pages (knowledge_base_id, id) WHERE deleted_at IS NULL;
