ALTER TABLE wiki_llm_config_errors DROP COLUMN IF EXISTS next_probe_at;
ALTER TABLE wiki_llm_config_errors DROP COLUMN IF EXISTS probes;
ALTER TABLE wiki_llm_usage DROP COLUMN IF EXISTS failures;
ALTER TABLE wiki_llm_usage DROP COLUMN IF EXISTS estimated_tokens;
