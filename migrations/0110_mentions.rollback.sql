DROP TABLE IF EXISTS wiki_mention_names;
DROP TABLE IF EXISTS wiki_mention_keys;
DROP TABLE IF EXISTS wiki_mentions;
