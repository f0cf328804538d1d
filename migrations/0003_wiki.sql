-- Wiki pages, the link graph and the map-stage extraction cache.
-- depends: 0002_knowledge

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE IF NOT EXISTS wiki_pages (
    id                BIGSERIAL PRIMARY KEY,
    tenant_id         BIGINT NOT NULL,
    knowledge_base_id VARCHAR(64) NOT NULL,
    slug              VARCHAR(255) NOT NULL,
    title             VARCHAR(512) NOT NULL,
    page_type         VARCHAR(16) NOT NULL CHECK (page_type IN ('summary', 'entity', 'concept', 'index')),
    status            VARCHAR(16) NOT NULL DEFAULT 'published' CHECK (status IN ('draft', 'published', 'archived')),
    content           TEXT NOT NULL DEFAULT '',
    summary           TEXT NOT NULL DEFAULT '',
    aliases           JSONB NOT NULL DEFAULT '[]'::JSONB,
    source_refs       JSONB NOT NULL DEFAULT '[]'::JSONB,
    facts             JSONB NOT NULL DEFAULT '{}'::JSONB,
    version           INT NOT NULL DEFAULT 1,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    deleted_at        TIMESTAMPTZ
);
COMMENT ON COLUMN wiki_pages.source_refs IS 'Documents the page cites: [{"knowledge_id": ..., "title": ...}]. Queried by containment on the jsonb_path_ops GIN index.';
COMMENT ON COLUMN wiki_pages.facts IS 'Per-source contribution {knowledge_id: {description, evidence[]}} so a page can be rewritten from its remaining sources when one is retracted.';

CREATE UNIQUE INDEX IF NOT EXISTS uq_wiki_pages_live_slug
    ON wiki_pages (knowledge_base_id, slug) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_wiki_pages_source_refs
    ON wiki_pages USING GIN (source_refs jsonb_path_ops);
CREATE INDEX IF NOT EXISTS idx_wiki_pages_source_refs_text
    ON wiki_pages USING GIN (to_tsvector('simple', source_refs::text));
CREATE INDEX IF NOT EXISTS idx_wiki_pages_title_trgm
    ON wiki_pages USING GIN (lower(title) gin_trgm_ops);
CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_type_updated
    ON wiki_pages (knowledge_base_id, page_type, updated_at DESC) WHERE deleted_at IS NULL;
CREATE INDEX IF NOT EXISTS idx_wiki_pages_kb_lower_title
    ON wiki_pages (knowledge_base_id, lower(title)) WHERE deleted_at IS NULL;

CREATE TABLE IF NOT EXISTS wiki_links (
    knowledge_base_id VARCHAR(64) NOT NULL,
    from_slug         VARCHAR(255) NOT NULL,
    to_slug           VARCHAR(255) NOT NULL,
    PRIMARY KEY (knowledge_base_id, from_slug, to_slug)
);
COMMENT ON TABLE wiki_links IS 'Out-links of each live page, rewritten with the page content in one transaction; in-links and orphans are queries over it.';
CREATE INDEX IF NOT EXISTS idx_wiki_links_to ON wiki_links (knowledge_base_id, to_slug);

CREATE TABLE IF NOT EXISTS wiki_extractions (
    knowledge_base_id VARCHAR(64) NOT NULL,
    knowledge_id      VARCHAR(64) NOT NULL,
    content_hash      VARCHAR(64) NOT NULL,
    extractor         VARCHAR(64) NOT NULL,
    result            JSONB NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (knowledge_base_id, knowledge_id, content_hash, extractor)
);
COMMENT ON TABLE wiki_extractions IS 'Map-stage results, validated before they are stored; also the cache that makes re-ingesting an unchanged document free.';
