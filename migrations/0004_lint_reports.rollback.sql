DROP INDEX IF EXISTS idx_wiki_pages_aliases_lower;
DROP TABLE IF EXISTS wiki_lint_reports;
