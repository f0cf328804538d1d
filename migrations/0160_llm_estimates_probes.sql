-- Issue 26: model costs that hold without the server's usage, and a paused KB that resumes itself.
-- wiki_llm_usage.estimated_tokens: of the counted tokens, those kbwiki counted itself (the server
-- gave no usage, or one larger than the request could be); `kbwiki status` says how many.
-- wiki_llm_usage.failures: extraction tries that failed (their calls and tokens are counted too);
-- `extractions` counts only the ones that succeeded.
-- wiki_llm_config_errors.probes / next_probe_at: a KB paused on a refused configuration or credit
-- lets one document through as a probe when next_probe_at has passed (the interval doubling per
-- failed probe, stages/llm_gate.py); a probe that succeeds ends the pause.
-- depends: 0150_listing_indexes

ALTER TABLE wiki_llm_usage ADD COLUMN IF NOT EXISTS estimated_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE wiki_llm_usage ADD COLUMN IF NOT EXISTS failures BIGINT NOT NULL DEFAULT 0;
ALTER TABLE wiki_llm_config_errors ADD COLUMN IF NOT EXISTS probes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE wiki_llm_config_errors ADD COLUMN IF NOT EXISTS next_probe_at TIMESTAMPTZ;
