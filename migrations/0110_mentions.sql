-- The mention index (issue 23): every name a document names that may have a page, one row per
-- (KB, document, name key), written by reduce from the document's extraction in the batch's
-- transaction. A page of a name key is made from its key's rows (wiki.coverage): whether it exists,
-- its lead (the best sentence of every document naming it) and its quotes (from many documents),
-- each a bounded walk of idx_wiki_mentions_best; "Mentioned in" lists the rows.
-- depends: 0100_page_leads

CREATE TABLE IF NOT EXISTS wiki_mentions (
    knowledge_base_id VARCHAR(64) NOT NULL,
    knowledge_id      VARCHAR(64) NOT NULL,
    key               TEXT NOT NULL,
    name              TEXT NOT NULL,
    kind              VARCHAR(16) NOT NULL,
    earned            BOOLEAN NOT NULL,
    named             BOOLEAN NOT NULL,
    titled            BOOLEAN NOT NULL,
    sentences         SMALLINT NOT NULL,
    subject           SMALLINT NOT NULL,
    rank              SMALLINT NOT NULL,
    score             INT NOT NULL,
    lead              TEXT NOT NULL DEFAULT '',
    quotes            JSONB NOT NULL DEFAULT '[]'::JSONB,
    aliases           JSONB NOT NULL DEFAULT '[]'::JSONB,
    parent            TEXT NOT NULL DEFAULT '',
    summary_slug      VARCHAR(255) NOT NULL,
    PRIMARY KEY (knowledge_base_id, knowledge_id, key)
);
COMMENT ON TABLE wiki_mentions IS 'One row per (KB, document, name key) the document names (wiki.coverage.MentionRow): the mention index pages are made from.';
COMMENT ON COLUMN wiki_mentions.earned IS 'The document alone makes the name a page (it was among the extraction''s items).';
COMMENT ON COLUMN wiki_mentions.score IS 'wiki.coverage.score: the row''s place among its key''s rows, higher first.';
CREATE INDEX IF NOT EXISTS idx_wiki_mentions_best
    ON wiki_mentions (knowledge_base_id, key, score DESC, summary_slug, knowledge_id);
CREATE INDEX IF NOT EXISTS idx_wiki_mentions_parent
    ON wiki_mentions (knowledge_base_id, parent, key) WHERE parent <> '';

-- Counters of each key's rows (wiki.coverage.KeyStats), kept by every batch in its transaction, so
-- whether a key has a page, and how many documents name it, is one row's read however many name it.
CREATE TABLE IF NOT EXISTS wiki_mention_keys (
    knowledge_base_id VARCHAR(64) NOT NULL,
    key               TEXT NOT NULL,
    docs              INT NOT NULL,
    earned            INT NOT NULL,
    named             INT NOT NULL,
    discussed         INT NOT NULL,
    defined           INT NOT NULL,
    described         INT NOT NULL,
    entity            INT NOT NULL,
    titled            INT NOT NULL,
    subjects          INT NOT NULL,
    PRIMARY KEY (knowledge_base_id, key)
);
CREATE INDEX IF NOT EXISTS idx_wiki_mention_keys_docs ON wiki_mention_keys (knowledge_base_id, docs DESC, key);

-- The names (and aliases) each key's rows give, with how many documents give each: a page's title
-- and aliases are read from here, a few rows per key, not from every row naming it.
CREATE TABLE IF NOT EXISTS wiki_mention_names (
    knowledge_base_id VARCHAR(64) NOT NULL,
    key               TEXT NOT NULL,
    name              TEXT NOT NULL,
    alias             BOOLEAN NOT NULL,
    docs              INT NOT NULL,
    PRIMARY KEY (knowledge_base_id, key, alias, name)
);
CREATE INDEX IF NOT EXISTS idx_wiki_mention_names_alias ON wiki_mention_names (knowledge_base_id, name) WHERE alias;

-- A bare name several code pages go by ("Queue" of queue.Queue and asyncio.queues.Queue) has a
-- disambiguation page listing them.
ALTER TABLE wiki_pages DROP CONSTRAINT IF EXISTS wiki_pages_page_type_check;
ALTER TABLE wiki_pages ADD CONSTRAINT wiki_pages_page_type_check
    CHECK (page_type IN ('summary', 'entity', 'concept', 'index', 'disambiguation'));
