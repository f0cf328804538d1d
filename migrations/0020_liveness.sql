-- Liveness and fencing in PostgreSQL: worker heartbeats, the owner and not-before time of a claim,
-- and the fencing token of a lane's batch (Redis only says "someone is on it"; these decide).
-- depends: 0009_title_keys_exact

CREATE TABLE IF NOT EXISTS task_workers (
    worker_id   VARCHAR(128) PRIMARY KEY,
    hostname    VARCHAR(255) NOT NULL DEFAULT '',
    pid         INT NOT NULL DEFAULT 0,
    started_at  TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    beat_at     TIMESTAMPTZ NOT NULL DEFAULT NOW()
);

COMMENT ON TABLE task_workers IS 'One row per worker process, its heartbeat refreshed every few seconds; a worker whose beat is older than the worker TTL is dead and its claims and batch locks are taken back.';

ALTER TABLE task_pending_ops ADD COLUMN IF NOT EXISTS claimed_by VARCHAR(128);
ALTER TABLE task_pending_ops ADD COLUMN IF NOT EXISTS not_before TIMESTAMPTZ;

COMMENT ON COLUMN task_pending_ops.claimed_by IS 'Worker id (task_workers) holding the claim; NULL for a claim made outside a worker, which only goes stale by age.';
COMMENT ON COLUMN task_pending_ops.not_before IS 'A failed op is not claimed again before this time (exponential backoff with jitter); NULL = at once.';

CREATE INDEX IF NOT EXISTS idx_task_pending_ops_claimed_by
    ON task_pending_ops (claimed_by) WHERE claimed_by IS NOT NULL;

CREATE TABLE IF NOT EXISTS task_lane_fences (
    task_type   VARCHAR(64) NOT NULL,
    scope       VARCHAR(32) NOT NULL,
    scope_id    VARCHAR(64) NOT NULL,
    token       BIGINT NOT NULL DEFAULT 0,
    holder      VARCHAR(128),
    lock_token  VARCHAR(128),
    taken_at    TIMESTAMPTZ NOT NULL DEFAULT NOW(),
    PRIMARY KEY (task_type, scope, scope_id)
);

COMMENT ON TABLE task_lane_fences IS 'Fencing token of the one batch allowed to write a lane''s results: each batch takes a new token as it starts and checks it, row locked, in its write transaction; a batch whose token is no longer current writes nothing.';
COMMENT ON COLUMN task_lane_fences.holder IS 'Worker id of the current batch (NULL once it ended), so a dead worker''s Redis batch lock can be removed.';
COMMENT ON COLUMN task_lane_fences.lock_token IS 'Value of the batch''s Redis lock key, for a compare-and-delete when its worker dies.';
