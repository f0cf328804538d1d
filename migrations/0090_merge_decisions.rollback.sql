DROP TABLE IF EXISTS wiki_merge_decisions;
