DROP TABLE IF EXISTS wiki_extractions;
DROP TABLE IF EXISTS wiki_links;
DROP TABLE IF EXISTS wiki_pages;
