-- The read API's and web view's A-Z list of a KB's pages (issue 29): keyset pages in
-- (lower(title), slug) order, of every type or of one, each page of rows a range of one index.
-- depends: 0200_web_sessions

CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_az
    ON wiki_pages (knowledge_base_id, lower(title), slug) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_type_az
    ON wiki_pages (knowledge_base_id, page_type, lower(title), slug) WHERE deleted_at IS NULL;
