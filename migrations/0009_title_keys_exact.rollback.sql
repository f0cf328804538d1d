DROP INDEX IF EXISTS idx_wiki_title_keys_key;
