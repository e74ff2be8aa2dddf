-- hookd schema version 5: the same CHECK constraints, written as ORs.
-- SQLite evaluates `status IN (five constants)` by building a temporary
-- index on every INSERT and on every UPDATE of the column (OpenEphemeral
-- in EXPLAIN): for webhook_queue that was three temporary B-trees per
-- message (insert, claim, result). Lists of one or two constants are
-- compared directly, so endpoints.source stays as it is. SQLite cannot
-- alter a constraint: both tables are rebuilt under their own names, the
-- queue's AUTOINCREMENT counter carried over (ids are never reused).

CREATE TABLE webhook_queue_v5 (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,  -- ids are never reused
    endpoint_id      INTEGER NOT NULL,
    event_id         TEXT NOT NULL,
    event_type       TEXT,
    payload          TEXT NOT NULL,   -- the exact JSON bytes that are sent
    status           TEXT NOT NULL DEFAULT 'pending'
                     -- one line: SQLite quotes it in its error message
                     CHECK (status = 'pending' OR status = 'in_flight' OR status = 'delivered' OR status = 'failed' OR status = 'dead_letter'),
    attempt_count    INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL DEFAULT 5,
    created_at       INTEGER NOT NULL,
    next_attempt_at  INTEGER NOT NULL,
    claimed_at       INTEGER,
    delivered_at     INTEGER,
    last_error       TEXT,
    last_status_code INTEGER,
    last_response_ms INTEGER,
    last_error_class TEXT,
    UNIQUE (endpoint_id, event_id)
);
INSERT INTO webhook_queue_v5 (id, endpoint_id, event_id, event_type, payload, status, attempt_count,
                              max_attempts, created_at, next_attempt_at, claimed_at, delivered_at,
                              last_error, last_status_code, last_response_ms, last_error_class)
    SELECT id, endpoint_id, event_id, event_type, payload, status, attempt_count,
           max_attempts, created_at, next_attempt_at, claimed_at, delivered_at,
           last_error, last_status_code, last_response_ms, last_error_class
    FROM webhook_queue;
DELETE FROM sqlite_sequence WHERE name = 'webhook_queue_v5';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'webhook_queue_v5', seq FROM sqlite_sequence WHERE name = 'webhook_queue';
DROP TABLE webhook_queue;
ALTER TABLE webhook_queue_v5 RENAME TO webhook_queue;

CREATE INDEX idx_queue_next ON webhook_queue (status, next_attempt_at)
    WHERE status IN ('pending', 'failed');
CREATE INDEX idx_queue_due ON webhook_queue (endpoint_id, next_attempt_at)
    WHERE status IN ('pending', 'failed');
CREATE INDEX idx_queue_dead ON webhook_queue (status, created_at)
    WHERE status = 'dead_letter';
CREATE INDEX idx_queue_delivered ON webhook_queue (delivered_at)
    WHERE status = 'delivered';
CREATE INDEX idx_queue_in_flight ON webhook_queue (endpoint_id) WHERE status = 'in_flight';
CREATE TRIGGER delivery_attempts_follow AFTER DELETE ON webhook_queue
BEGIN
    DELETE FROM delivery_attempts WHERE message_id = old.id;
END;

CREATE TABLE endpoint_health_v5 (
    endpoint_id          INTEGER PRIMARY KEY,
    endpoint_url         TEXT NOT NULL,
    state                TEXT NOT NULL DEFAULT 'closed'
                         CHECK (state = 'closed' OR state = 'open' OR state = 'half_open'),
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
    rolled_up_at         INTEGER,
    slow_since           INTEGER,
    ring_next            INTEGER NOT NULL DEFAULT 0,
    concurrency_limit    INTEGER
);
INSERT INTO endpoint_health_v5 (endpoint_id, endpoint_url, state, consecutive_failures, failure_threshold,
                                last_failure_at, last_success_at, opened_at, cooldown_ms, p50_ms, p95_ms,
                                p99_ms, sample_count, rolled_up_at, slow_since, ring_next, concurrency_limit)
    SELECT endpoint_id, endpoint_url, state, consecutive_failures, failure_threshold,
           last_failure_at, last_success_at, opened_at, cooldown_ms, p50_ms, p95_ms,
           p99_ms, sample_count, rolled_up_at, slow_since, ring_next, concurrency_limit
    FROM endpoint_health;
DROP TABLE endpoint_health;
ALTER TABLE endpoint_health_v5 RENAME TO endpoint_health;
