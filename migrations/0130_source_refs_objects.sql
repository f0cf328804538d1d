-- Source refs are objects only (issue 24). Pages written before migration 0003's object form held
-- "<id>|<title>" strings, and every reduce batch looked each of its documents up in that form too,
-- through a to_tsvector GIN index: 2 ms a document at 40,000 pages, against 0.4 ms for the object
-- form, and every page write rebuilt the tsvector of its source refs. The strings become objects
-- (the id before the first "|", the title after it) and the index goes.
UPDATE wiki_pages SET source_refs = (
    SELECT jsonb_agg(
        CASE WHEN jsonb_typeof(e) = 'string' THEN jsonb_build_object(
            'knowledge_id', split_part(e #>> '{}', '|', 1),
            'title', substr(e #>> '{}', length(split_part(e #>> '{}', '|', 1)) + 2))
        ELSE e END ORDER BY n)
    FROM jsonb_array_elements(source_refs) WITH ORDINALITY AS a(e, n))
WHERE jsonb_path_exists(source_refs, '$[*] ? (@.type() == "string")');
DROP INDEX IF EXISTS idx_wiki_pages_source_refs_text;
