DROP INDEX IF EXISTS idx_task_pending_ops_claimed;
