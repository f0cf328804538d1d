-- A page's model-written lead (issue 16): the paragraph and the key of the contributions it was
-- written from (wiki.render.lead_key), so a page shows it only while those contributions stand.
-- depends: 0095_index_intros

ALTER TABLE wiki_pages ADD COLUMN IF NOT EXISTS lead TEXT NOT NULL DEFAULT '';
ALTER TABLE wiki_pages ADD COLUMN IF NOT EXISTS lead_key TEXT NOT NULL DEFAULT '';
COMMENT ON COLUMN wiki_pages.lead IS 'The lead paragraph a model wrote from the page''s first contributions; empty: chosen among them.';
COMMENT ON COLUMN wiki_pages.lead_key IS 'wiki.render.lead_key of the contributions the lead was written from.';
