-- Durable pending-op queue and dead-letter archive, shared by every actor.
-- depends:

CREATE TABLE IF NOT EXISTS task_pending_ops (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL,
    task_type   VARCHAR(64) NOT NULL,
    scope       VARCHAR(32) NOT NULL,
    scope_id    VARCHAR(64) NOT NULL,
    op          VARCHAR(32) NOT NULL,
    dedup_key   VARCHAR(128) NOT NULL DEFAULT '',
    payload     JSONB NOT NULL DEFAULT '{}'::JSONB,
    fail_count  INT NOT NULL DEFAULT 0,
    enqueued_at TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    claimed_at  TIMESTAMPTZ
);

COMMENT ON TABLE task_pending_ops IS 'Durable pending-op queue; a lane is (task_type, scope, scope_id). Redis messages only trigger draining a lane, so losing them loses no work.';
COMMENT ON COLUMN task_pending_ops.task_type IS 'Lane name, e.g. "wiki:ingest", "wiki:reduce", "wiki:finalize".';
COMMENT ON COLUMN task_pending_ops.scope IS 'Logical scope, e.g. "knowledge_base"; read together with scope_id.';
COMMENT ON COLUMN task_pending_ops.dedup_key IS 'Consumer-defined key (the knowledge id for wiki ops): a claim takes all rows of a key, and the last op of a key wins within a batch. Empty means no de-dup.';
COMMENT ON COLUMN task_pending_ops.fail_count IS 'In-batch retry counter, incremented with UPDATE ... RETURNING; past the cap the op moves to task_dead_letters.';
COMMENT ON COLUMN task_pending_ops.claimed_at IS 'Claim marker set with SELECT ... FOR UPDATE SKIP LOCKED. NULL = unclaimed; older than the stale threshold = abandoned and reclaimable. A fresh claim blocks its whole dedup_key.';

CREATE INDEX IF NOT EXISTS idx_task_pending_ops_scope
    ON task_pending_ops (task_type, scope, scope_id, id);
CREATE INDEX IF NOT EXISTS idx_task_pending_ops_tenant
    ON task_pending_ops (tenant_id);
CREATE INDEX IF NOT EXISTS idx_task_pending_ops_dedup
    ON task_pending_ops (task_type, scope, scope_id, dedup_key);

CREATE TABLE IF NOT EXISTS task_dead_letters (
    id          BIGSERIAL PRIMARY KEY,
    tenant_id   BIGINT NOT NULL,
    task_type   VARCHAR(64) NOT NULL,
    scope       VARCHAR(32) NOT NULL,
    scope_id    VARCHAR(64) NOT NULL,
    related_id  VARCHAR(64) NOT NULL DEFAULT '',
    payload     JSONB NOT NULL,
    last_error  TEXT NOT NULL DEFAULT '',
    fail_count  INT NOT NULL,
    failed_at   TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

COMMENT ON TABLE task_dead_letters IS 'Permanent archive of work that failed for good: written by the dead-letter middleware (retries exhausted) and by the wiki batch when one document op passes its in-batch retry budget.';
COMMENT ON COLUMN task_dead_letters.related_id IS 'Secondary identifier; the wiki puts the knowledge id here so a document''s dead letters cluster together.';
COMMENT ON COLUMN task_dead_letters.payload IS 'The whole message (or op) at the time of failure, so it can be re-sent.';
COMMENT ON COLUMN task_dead_letters.last_error IS 'Error and traceback of the final attempt, truncated to 8 KiB.';

CREATE INDEX IF NOT EXISTS idx_task_dead_letters_scope
    ON task_dead_letters (scope, scope_id, failed_at DESC);
CREATE INDEX IF NOT EXISTS idx_task_dead_letters_tenant
    ON task_dead_letters (tenant_id, failed_at DESC);
CREATE INDEX IF NOT EXISTS idx_task_dead_letters_task_type
    ON task_dead_letters (task_type, failed_at DESC);
