DROP TABLE IF EXISTS wiki_index_intros;
