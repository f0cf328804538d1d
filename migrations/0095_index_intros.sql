-- The index page's introduction a model wrote (issue 16): one row per KB, with the summary slugs it
-- was written from, so a rebuild asks the model again only when the recent summaries changed enough.
-- depends: 0090_merge_decisions

CREATE TABLE IF NOT EXISTS wiki_index_intros (
    knowledge_base_id VARCHAR(64) PRIMARY KEY,
    model             VARCHAR(255) NOT NULL,
    slugs             TEXT[] NOT NULL,
    intro             TEXT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
COMMENT ON TABLE wiki_index_intros IS 'The model-written introduction of a KB''s index page and the summary slugs it was written from.';
