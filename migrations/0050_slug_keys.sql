-- Link repair looks for a dead link's page by its slug too, not only by its display text: a
-- `[[bei-jing-daxing|北京大兴]]` must find the live page `beijing-daxing`. Live slugs are already
-- lowercase, folded and free of underscores, so normalize_slug(slug) is the slug without hyphens:
-- a B-tree answers the equality stage, a GIN trigram index the bigram-Jaccard stage's candidates.
-- depends: 0009_title_keys_exact

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE INDEX IF NOT EXISTS idx_wiki_pages_slug_key
    ON wiki_pages (knowledge_base_id, replace(slug, '-', ''))
    WHERE deleted_at IS NULL;

CREATE INDEX IF NOT EXISTS idx_wiki_pages_slug_trgm
    ON wiki_pages USING GIN (knowledge_base_id, replace(slug, '-', '') gin_trgm_ops)
    WHERE deleted_at IS NULL;
