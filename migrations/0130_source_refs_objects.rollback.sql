CREATE INDEX IF NOT EXISTS idx_wiki_pages_source_refs_text
    ON wiki_pages USING GIN (to_tsvector('simple', source_refs::text));
