-- The folder a KB's source URIs are relative to (issue 25): `kbwiki ingest` of a folder under it
-- names each file by its path relative to this folder, so ingesting a subfolder finds the same
-- documents. An absolute real path (symbolic links resolved); NULL until the KB's first ingest
-- after this migration, which sets it to the folder it reads (docs/decisions.md).
ALTER TABLE knowledge_bases ADD COLUMN IF NOT EXISTS source_root TEXT;
COMMENT ON COLUMN knowledge_bases.source_root IS 'The real path of the folder the KB''s source URIs are relative to; set by its first ingest (kbwiki ingest --set-root changes it).';
