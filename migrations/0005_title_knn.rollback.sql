DROP INDEX IF EXISTS idx_wiki_pages_title_knn;
