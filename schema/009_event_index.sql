-- hookd schema version 9: the dedup key is indexed event id first.
-- Version 5's UNIQUE (endpoint_id, event_id) put each endpoint's new rows
-- in a place of their own in that index: with 10,000 endpoints a group
-- commit of 1,000 enqueues dirtied about one index page per row (measured:
-- 1,283 bytes written per enqueue against 498 with one endpoint). Indexed
-- (event_id, endpoint_id), ids that grow (order-1234, most applications)
-- land together whatever the endpoint, and random ones (UUIDs) are no
-- worse. A duplicate is the same pair as before. The table is rebuilt
-- (a constraint cannot be dropped in place), ids and the AUTOINCREMENT
-- counter carried over.

CREATE TABLE webhook_queue_v9 (
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
    ordering_key     TEXT
);
INSERT INTO webhook_queue_v9 (id, endpoint_id, event_id, event_type, payload, status, attempt_count,
                              max_attempts, created_at, next_attempt_at, claimed_at, delivered_at,
                              last_error, last_status_code, last_response_ms, last_error_class, ordering_key)
    SELECT id, endpoint_id, event_id, event_type, payload, status, attempt_count,
           max_attempts, created_at, next_attempt_at, claimed_at, delivered_at,
           last_error, last_status_code, last_response_ms, last_error_class, ordering_key
    FROM webhook_queue;
DELETE FROM sqlite_sequence WHERE name = 'webhook_queue_v9';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'webhook_queue_v9', seq FROM sqlite_sequence WHERE name = 'webhook_queue';
DROP TABLE webhook_queue;
ALTER TABLE webhook_queue_v9 RENAME TO webhook_queue;

CREATE UNIQUE INDEX idx_queue_event ON webhook_queue (event_id, endpoint_id);
CREATE INDEX idx_queue_next ON webhook_queue (status, next_attempt_at)
    WHERE status IN ('pending', 'failed');
CREATE INDEX idx_queue_due ON webhook_queue (endpoint_id, next_attempt_at)
    WHERE status IN ('pending', 'failed');
CREATE INDEX idx_queue_dead ON webhook_queue (status, created_at)
    WHERE status = 'dead_letter';
CREATE INDEX idx_queue_delivered ON webhook_queue (delivered_at)
    WHERE status = 'delivered';
CREATE INDEX idx_queue_in_flight ON webhook_queue (endpoint_id) WHERE status = 'in_flight';
CREATE INDEX idx_queue_order ON webhook_queue (endpoint_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL AND (status = 'pending' OR status = 'failed' OR status = 'in_flight');
CREATE TRIGGER delivery_attempts_follow AFTER DELETE ON webhook_queue
BEGIN
    DELETE FROM delivery_attempts WHERE message_id = old.id;
END;
