-- The pump counts a lane's claimed rows under its KB's lock, after every map (issue 24): with the
-- whole lane submitted at once that count scanned all of the lane's rows, 14 ms a call at 40,000,
-- and the pumps queued behind each other on the lock (236 ms a wait). Claimed rows are a few.
CREATE INDEX IF NOT EXISTS idx_task_pending_ops_claimed
    ON task_pending_ops (task_type, scope, scope_id, claimed_at) WHERE claimed_at IS NOT NULL;
