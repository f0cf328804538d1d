ALTER TABLE wiki_llm_config_errors DROP COLUMN IF EXISTS kind;
DROP TABLE IF EXISTS wiki_llm_budget;
DROP TABLE IF EXISTS wiki_llm_usage;
