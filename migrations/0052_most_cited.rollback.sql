DROP INDEX IF EXISTS idx_wiki_pages_most_cited;
