DROP INDEX IF EXISTS idx_knowledge_bases_tenant_lower_name;
DROP INDEX IF EXISTS idx_knowledges_kb_status_updated;
DROP INDEX IF EXISTS idx_knowledges_kb_status_listed;
DROP INDEX IF EXISTS idx_knowledges_kb_listed;
