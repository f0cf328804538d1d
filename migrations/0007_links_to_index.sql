-- In-links are found by target slug. The old (knowledge_base_id, to_slug) index also matched a
-- KB-only prefix, and the planner used it for "DELETE ... WHERE knowledge_base_id AND from_slug"
-- (every page save), scanning all of a KB's links: 37 ms at 3k documents and growing with the KB.
-- Leading with to_slug, this index can only serve lookups by target; the primary key serves
-- (knowledge_base_id, from_slug).
-- depends: 0006_title_keys

DROP INDEX IF EXISTS idx_wiki_links_to;
CREATE INDEX IF NOT EXISTS idx_wiki_links_to_slug ON wiki_links (to_slug, knowledge_base_id);
