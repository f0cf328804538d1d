DROP TABLE IF EXISTS task_lane_fences;
DROP INDEX IF EXISTS idx_task_pending_ops_claimed_by;
ALTER TABLE task_pending_ops DROP COLUMN IF EXISTS not_before;
ALTER TABLE task_pending_ops DROP COLUMN IF EXISTS claimed_by;
DROP TABLE IF EXISTS task_workers;
