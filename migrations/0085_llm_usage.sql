-- What a KB's model work cost, and its pauses for credit and budget.
-- wiki_llm_usage: per KB and model, counters added to once per document extraction (one upsert:
-- never a whole-KB scan); cache_hits counts documents served from wiki_extractions (no call).
-- wiki_llm_budget: the KB's spent tokens when `kbwiki resume --reset-budget` last ran; the token
-- budget (llm token_budget) counts the tokens above it.
-- wiki_llm_config_errors.kind: why the KB's model work waits: 'config' (the endpoint refused the
-- configuration), 'credit' (the provider says the account is out of credit) or 'budget' (the KB
-- spent its token budget).
-- depends: 0070_llm_config_errors

CREATE TABLE IF NOT EXISTS wiki_llm_usage (
    knowledge_base_id VARCHAR(64) NOT NULL,
    model             TEXT NOT NULL,
    extractions       BIGINT NOT NULL DEFAULT 0,
    calls             BIGINT NOT NULL DEFAULT 0,
    prompt_tokens     BIGINT NOT NULL DEFAULT 0,
    completion_tokens BIGINT NOT NULL DEFAULT 0,
    cache_hits        BIGINT NOT NULL DEFAULT 0,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (knowledge_base_id, model)
);
COMMENT ON TABLE wiki_llm_usage IS 'Model calls, tokens and extraction-cache hits per KB and model (one upsert per document).';

CREATE TABLE IF NOT EXISTS wiki_llm_budget (
    knowledge_base_id VARCHAR(64) PRIMARY KEY,
    tokens_at_reset   BIGINT NOT NULL DEFAULT 0,
    reset_at          TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
COMMENT ON TABLE wiki_llm_budget IS 'Tokens the KB had spent when its token budget was last reset.';

ALTER TABLE wiki_llm_config_errors ADD COLUMN IF NOT EXISTS kind VARCHAR(16) NOT NULL DEFAULT 'config';
