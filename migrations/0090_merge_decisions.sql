-- Merges the model decided (issue 16): per KB, decider (merge prompt version and model), item name
-- key and candidate set (a hash of the candidate slugs), the page slug chosen or NULL for "a new
-- page". The cache that makes a re-ingest or a retry ask the model nothing, like wiki_extractions.
-- depends: 0070_llm_config_errors

CREATE TABLE IF NOT EXISTS wiki_merge_decisions (
    knowledge_base_id VARCHAR(64) NOT NULL,
    decider           VARCHAR(64) NOT NULL,
    name_key          TEXT NOT NULL,
    candidate_set     VARCHAR(16) NOT NULL,
    merge_into        VARCHAR(255),
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (knowledge_base_id, decider, name_key, candidate_set)
);
COMMENT ON TABLE wiki_merge_decisions IS 'The model''s merge decisions (slug or NULL for new) by KB, decider, item name key and candidate set.';
