-- The index page lists the entities and concepts cited by the most documents: a top-N walk of
-- this index per page type, whatever the KB's size.
-- depends: 0051_mention_search

CREATE INDEX IF NOT EXISTS idx_wiki_pages_most_cited
    ON wiki_pages (knowledge_base_id, page_type, jsonb_array_length(source_refs) DESC, slug)
    WHERE deleted_at IS NULL;
