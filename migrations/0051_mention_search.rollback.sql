DROP INDEX IF EXISTS idx_wiki_pages_mentions;
DROP FUNCTION IF EXISTS wiki_mention_text(text);
