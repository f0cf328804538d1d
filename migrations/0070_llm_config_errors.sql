-- A KB whose model endpoint refused the request itself (400 in every output mode, 401, 403, 404,
-- 422): recorded once, shown by `kbwiki status`, and the KB's model work waits until the
-- configuration's fingerprint (endpoint, model, key, request fields) differs from the one refused.
-- depends: 0061_page_name_key_backfill

CREATE TABLE IF NOT EXISTS wiki_llm_config_errors (
    knowledge_base_id VARCHAR(64) PRIMARY KEY,
    fingerprint       VARCHAR(32) NOT NULL,
    status            INTEGER NOT NULL,
    message           TEXT NOT NULL,
    base_url          TEXT,
    model             TEXT NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    last_seen_at      TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
COMMENT ON TABLE wiki_llm_config_errors IS 'The configuration error that paused a KB''s model work, until its LLM configuration changes.';
