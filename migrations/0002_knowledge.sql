-- Knowledge bases and their documents (knowledges).
-- depends: 0001_task_queue

CREATE TABLE IF NOT EXISTS knowledge_bases (
    id          VARCHAR(64) PRIMARY KEY,
    tenant_id   BIGINT NOT NULL,
    name        VARCHAR(255) NOT NULL,
    wiki_config JSONB NOT NULL DEFAULT '{}'::JSONB,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    deleted_at  TIMESTAMPTZ
);
COMMENT ON COLUMN knowledge_bases.wiki_config IS 'Per-KB overrides of the ingest tunables (batch size, map and reduce parallelism), validated by wiki.models.WikiConfig.';
CREATE UNIQUE INDEX IF NOT EXISTS uq_knowledge_bases_tenant_name
    ON knowledge_bases (tenant_id, name) WHERE deleted_at IS NULL;

CREATE TABLE IF NOT EXISTS knowledges (
    id                VARCHAR(64) PRIMARY KEY,
    tenant_id         BIGINT NOT NULL,
    knowledge_base_id VARCHAR(64) NOT NULL REFERENCES knowledge_bases (id) ON DELETE CASCADE,
    title             VARCHAR(512) NOT NULL,
    source_uri        TEXT NOT NULL DEFAULT '',
    content           TEXT NOT NULL DEFAULT '',
    content_hash      VARCHAR(64) NOT NULL DEFAULT '',
    status            VARCHAR(32) NOT NULL DEFAULT 'pending',
    error             TEXT NOT NULL DEFAULT '',
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    deleted_at        TIMESTAMPTZ
);
COMMENT ON COLUMN knowledges.status IS 'pending | mapped | done | skipped | failed | deleting | deleted.';
CREATE INDEX IF NOT EXISTS idx_knowledges_kb ON knowledges (knowledge_base_id, id);
CREATE UNIQUE INDEX IF NOT EXISTS uq_knowledges_kb_source
    ON knowledges (knowledge_base_id, source_uri) WHERE deleted_at IS NULL AND source_uri <> '';
