DROP TABLE IF EXISTS knowledges;
DROP TABLE IF EXISTS knowledge_bases;
