-- The read API's and web view's lists (issue 29): a KB's pages A-Z, keyset pages in
-- (lower(title), slug) order, of every type or of one; a page's backlinks by linking slug. Each
-- page of rows is a range of one index, however many rows the whole list has (a hub's in-links).
-- depends: 0200_web_sessions

CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_az
    ON wiki_pages (knowledge_base_id, lower(title), slug) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_type_az
    ON wiki_pages (knowledge_base_id, page_type, lower(title), slug) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_wiki_links_kb_to_from
    ON wiki_links (knowledge_base_id, to_slug, from_slug);
