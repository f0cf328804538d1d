-- A claim names the Dramatiq message responsible for it ("<queue>/<redis message id>"), so a claim
-- whose message is no longer in Redis (lost in an outage, never sent, acked after a failed release)
-- is given back within seconds by its worker's heartbeat, not after stale_claim_s (issue 27).
-- The worker's check finds its claims by claimed_by (idx_task_pending_ops_claimed_by, 0020).
ALTER TABLE task_pending_ops ADD COLUMN IF NOT EXISTS claimed_msg VARCHAR(255);
COMMENT ON COLUMN task_pending_ops.claimed_msg IS 'Dramatiq message ("<queue>/<redis message id>") the claim is for; NULL for a claim made outside a worker''s message, which only goes stale by age.';
