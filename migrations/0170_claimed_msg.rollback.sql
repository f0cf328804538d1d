ALTER TABLE task_pending_ops DROP COLUMN IF EXISTS claimed_msg;
