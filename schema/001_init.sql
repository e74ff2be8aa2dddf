-- hookd schema version 1. Times are UTC epoch milliseconds.
-- The seed design's three tables (webhook_queue, endpoint_latency,
-- endpoint_health) keep their column names; endpoints is hookd's own.

CREATE TABLE endpoints (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    url         TEXT NOT NULL,
    secrets     TEXT NOT NULL DEFAULT '[]',   -- JSON array, newest first
    headers     TEXT NOT NULL DEFAULT '[]',   -- JSON array of "Name: value"
    event_types TEXT,                         -- "a,b,c", "*" or NULL
    settings    TEXT NOT NULL DEFAULT '{}',   -- JSON object of overrides
    source      TEXT NOT NULL DEFAULT 'api' CHECK (source IN ('config', 'api')),
    paused      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE webhook_queue (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    endpoint_id      INTEGER NOT NULL,
    event_id         TEXT NOT NULL,
    event_type       TEXT,
    payload          TEXT NOT NULL,   -- the exact JSON bytes that are sent
    status           TEXT NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'in_flight', 'delivered', 'failed', 'dead_letter')),
    attempt_count    INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 5,
    created_at       INTEGER NOT NULL,
    next_attempt_at  INTEGER NOT NULL,
    claimed_at       INTEGER,
    delivered_at     INTEGER,
    last_error       TEXT,
    last_status_code INTEGER,
    last_response_ms INTEGER,
    UNIQUE (endpoint_id, event_id)
);
-- the seed's due-row index
CREATE INDEX idx_queue_next ON webhook_queue (status, next_attempt_at)
    WHERE status IN ('pending', 'failed');
-- per-endpoint claims (fair across endpoints) walk this one
CREATE INDEX idx_queue_due ON webhook_queue (endpoint_id, next_attempt_at)
    WHERE status IN ('pending', 'failed');
-- retention and dead-letter analysis
CREATE INDEX idx_queue_dead ON webhook_queue (status, created_at)
    WHERE status = 'dead_letter';
CREATE INDEX idx_queue_delivered ON webhook_queue (delivered_at)
    WHERE status = 'delivered';

-- Ring buffer of attempts; the scheduler deletes rows older than the window.
CREATE TABLE endpoint_latency (
    id          INTEGER PRIMARY KEY,
    endpoint_id INTEGER NOT NULL,
    message_id  INTEGER,
    response_ms INTEGER NOT NULL,
    status_code INTEGER,
    error_class TEXT,
    measured_at INTEGER NOT NULL
);
-- covering: the percentile rollup reads response_ms from the index alone
CREATE INDEX idx_latency_endpoint ON endpoint_latency (endpoint_id, measured_at, response_ms);
CREATE INDEX idx_latency_time ON endpoint_latency (measured_at);

CREATE TABLE endpoint_health (
    endpoint_id          INTEGER PRIMARY KEY,
    endpoint_url         TEXT NOT NULL,
    state                TEXT NOT NULL DEFAULT 'closed'
                         CHECK (state IN ('closed', 'open', 'half_open')),
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    failure_threshold    INTEGER NOT NULL DEFAULT 10,
    last_failure_at      INTEGER,
    last_success_at      INTEGER,
    opened_at            INTEGER,
    cooldown_ms          INTEGER NOT NULL DEFAULT 300000,
    p50_ms               INTEGER,
    p95_ms               INTEGER,
    p99_ms               INTEGER,
    sample_count         INTEGER NOT NULL DEFAULT 0,
    rolled_up_at         INTEGER
);
