DROP INDEX IF EXISTS idx_task_dead_letters_open_related;
ALTER TABLE task_dead_letters DROP COLUMN IF EXISTS resolution;
ALTER TABLE task_dead_letters DROP COLUMN IF EXISTS resolved_at;
