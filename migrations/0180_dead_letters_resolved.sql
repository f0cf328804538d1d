-- Issue 27: a dead letter whose document later finished is kept as history, not counted as open.
-- resolved_at: when it was resolved (NULL: open); resolution: why ('document_done',
-- 'document_deleted'; repos/dead_letters.py Resolution). Resolved where a document reaches done or
-- deleted (stages/reduce.py, in that transaction) and when a letter is written for a document
-- already there (a letter spooled in Redis during an outage and drained later).
-- The partial index finds the open letters of a batch's knowledge ids; it holds open rows only.
-- Letters already written for documents now done or deleted are resolved here, once.
-- depends: 0160_llm_estimates_probes

ALTER TABLE task_dead_letters ADD COLUMN IF NOT EXISTS resolved_at TIMESTAMPTZ;
ALTER TABLE task_dead_letters ADD COLUMN IF NOT EXISTS resolution VARCHAR(32) NOT NULL DEFAULT '';
COMMENT ON COLUMN task_dead_letters.resolved_at IS 'When the document it names (related_id) reached done or was deleted; NULL while the letter is open.';
COMMENT ON COLUMN task_dead_letters.resolution IS 'Why it was resolved: document_done or document_deleted; empty while open.';

CREATE INDEX IF NOT EXISTS idx_task_dead_letters_open_related
    ON task_dead_letters (related_id) WHERE resolved_at IS NULL AND related_id <> '';

UPDATE task_dead_letters d
   SET resolved_at = now(),
       resolution = CASE k.status WHEN 'done' THEN 'document_done' ELSE 'document_deleted' END
  FROM knowledges k
 WHERE d.resolved_at IS NULL AND d.related_id <> ''
   AND k.id = d.related_id AND k.tenant_id = d.tenant_id AND k.status IN ('done', 'deleted');
