-- When a page first appears (or gains a title or alias), the pages that already mention it get
-- the link: they are found through a full-text index of page content, never a scan of the KB.
-- The 'simple' configuration keeps every word as written (lowercased, no stemming, no stop
-- words), so a title's words as a phrase query find the pages holding them in that order. CJK
-- text has no spaces: wiki_mention_text puts one around each CJK character, so a CJK title is a
-- phrase of characters and is found inside a longer run. Both the index and the lookup call the
-- same function, which is what lets the planner use the index.
-- depends: 0050_slug_keys

CREATE OR REPLACE FUNCTION wiki_mention_text(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    AS $$ SELECT regexp_replace($1, '([\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3100-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f])', ' \1 ', 'g') $$;

CREATE INDEX IF NOT EXISTS idx_wiki_pages_mentions
    ON wiki_pages USING GIN (knowledge_base_id, to_tsvector('simple'::regconfig, wiki_mention_text(content)))
    WHERE deleted_at IS NULL;
