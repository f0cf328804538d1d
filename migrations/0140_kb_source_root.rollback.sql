ALTER TABLE knowledge_bases DROP COLUMN IF EXISTS source_root;
