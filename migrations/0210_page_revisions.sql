-- Issue 29, part 3: page revisions. Every page write that changes a page's content or sources keeps
-- the version it replaces in wiki_page_revisions, in the same statement as the write
-- (repos/pages.py, WikiPageRepository.save_many), at most KBWIKI_PAGE_REVISIONS_KEEP (20) of them
-- per page row: the oldest go in the same statement.
-- A revision holds the whole content (bounded by the renderers) but not the whole source refs: a
-- hub page may cite thousands of documents. It holds how many there were and the refs that differ
-- from the next version, both ways, so the sources of any kept version are the current ones with
-- the changes of the newer revisions undone (wiki/revisions.py). More than 1,000 changed refs in one
-- write are not kept (NULL): that version's sources, and older ones', are then unknown.
-- wiki_pages.written_by says who wrote the current version ('batch:<reduce fencing token>',
-- 'document:<knowledge id>', 'crosslink', 'lead', 'index', 'lint', 'revert:<version>'; '' unknown).
-- A revision belongs to a page row: a page moved to another slug starts a new row and history, a
-- soft-deleted row keeps its revisions, and deleting a KB deletes them with its pages. Deleting a
-- document deletes the revisions that cite it (the reduce batch that retracts it).
-- depends: 0200_web_sessions

ALTER TABLE wiki_pages ADD COLUMN IF NOT EXISTS written_by VARCHAR(100) NOT NULL DEFAULT '';
COMMENT ON COLUMN wiki_pages.written_by IS 'Who wrote this version: batch:<token>, document:<knowledge id>, crosslink, lead, index, lint, revert:<version>; empty: unknown (written before revisions were kept, or by an import).';

CREATE TABLE IF NOT EXISTS wiki_page_revisions (
    id                BIGSERIAL PRIMARY KEY,
    tenant_id         BIGINT NOT NULL,
    knowledge_base_id VARCHAR(64) NOT NULL,
    page_id           BIGINT NOT NULL REFERENCES wiki_pages (id) ON DELETE CASCADE,
    version           INT NOT NULL,
    slug              VARCHAR(255) NOT NULL,
    content           TEXT NOT NULL,
    sources           INT NOT NULL,
    refs_only_here    JSONB,
    refs_only_next    JSONB,
    written_at        TIMESTAMPTZ NOT NULL,
    written_by        VARCHAR(100) NOT NULL DEFAULT '',
    replaced_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (page_id, version)
);
-- The revisions that stop citing a document: how a document's delete finds the earlier versions
-- quoting it (repos/revisions.py, FORGET_CANDIDATES_SQL).
CREATE INDEX IF NOT EXISTS idx_wiki_page_revisions_refs_only_here
    ON wiki_page_revisions USING GIN (refs_only_here jsonb_path_ops);
COMMENT ON TABLE wiki_page_revisions IS 'Earlier versions of a page row (content and a delta of its source refs), the newest KBWIKI_PAGE_REVISIONS_KEEP per page.';
COMMENT ON COLUMN wiki_page_revisions.sources IS 'How many source refs the page had at this version.';
COMMENT ON COLUMN wiki_page_revisions.refs_only_here IS '[[position, ref], ...]: refs this version had (at that position) that the next version lacks; NULL: not kept (too many).';
COMMENT ON COLUMN wiki_page_revisions.refs_only_next IS '[ref, ...]: refs the next version has that this one lacked; NULL: not kept (too many).';
COMMENT ON COLUMN wiki_page_revisions.written_at IS 'When this version was written (the page''s updated_at then); replaced_at: when a later one replaced it.';
