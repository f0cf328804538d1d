-- Issue 28: the operations page's sign-ins as server-side sessions. The browser holds a random
-- value; the row holds its SHA-256 (a reader of this table cannot sign in with it), the tenant the
-- server serves, a fingerprint of the ops token it was opened with (a changed token ends every
-- session) and when it expires. Signing out deletes the row, so an old cookie no longer acts.
-- depends: 0160_llm_estimates_probes

CREATE TABLE IF NOT EXISTS web_sessions (
    id_hash BYTEA PRIMARY KEY,
    tenant_id BIGINT NOT NULL,
    token_fingerprint BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS idx_web_sessions_expires_at ON web_sessions (expires_at);
