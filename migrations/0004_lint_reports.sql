-- Lint: the latest report per KB, and the index behind "pages whose aliases contain X".
-- depends: 0003_wiki

CREATE TABLE IF NOT EXISTS wiki_lint_reports (
    knowledge_base_id VARCHAR(64) PRIMARY KEY,
    report            JSONB NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
COMMENT ON TABLE wiki_lint_reports IS 'The latest lint report of each KB (wiki.lint.LintReport as JSON); a new run replaces the row.';

-- Duplicate detection looks up pages whose aliases contain a title, case-insensitively:
-- lower(aliases::text)::jsonb @> '["acme corp"]'. Nothing indexed aliases before; without this
-- index every lint window would scan the KB's pages.
CREATE INDEX IF NOT EXISTS idx_wiki_pages_aliases_lower
    ON wiki_pages USING GIN ((lower(aliases::text)::jsonb) jsonb_path_ops) WHERE deleted_at IS NULL;
