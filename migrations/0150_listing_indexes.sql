-- The list commands (issue 25): `kbwiki kbs`, `kbwiki documents` and the names an unknown KB name
-- is compared with. Each page of results is a bounded walk of these indexes (repos/listing.py).
-- depends: 0140_kb_source_root

-- A KB's documents in source URI order (`kbwiki documents`, keyset on (source_uri, id)): every
-- status but `deleted` (a `deleting` one is still shown), source-less documents included, which
-- uq_knowledges_kb_source leaves out.
CREATE INDEX IF NOT EXISTS idx_knowledges_kb_listed
    ON knowledges (knowledge_base_id, source_uri, id) WHERE status <> 'deleted';
-- The same for one status (`--status failed` walks the failed documents only).
CREATE INDEX IF NOT EXISTS idx_knowledges_kb_status_listed
    ON knowledges (knowledge_base_id, status, source_uri, id) WHERE status <> 'deleted';
-- `kbwiki kbs`: a KB's documents by status and their latest change in one index-only pass over
-- narrow entries (about 40 index pages for 40,000 documents).
CREATE INDEX IF NOT EXISTS idx_knowledges_kb_status_updated
    ON knowledges (knowledge_base_id, status, updated_at) WHERE status <> 'deleted';
-- The tenant's KB names around a mistyped one, case-insensitively ("did you mean ...?").
CREATE INDEX IF NOT EXISTS idx_knowledge_bases_tenant_lower_name
    ON knowledge_bases (tenant_id, lower(name)) WHERE deleted_at IS NULL;
