-- hookd schema version 4: cheaper bookkeeping per attempt.
--  * delivery_attempts: the attempt log of each message (hookd get), one
--    row per attempt keyed by (message_id, attempt), deleted with its
--    message by a trigger (retention, purge).
--  * endpoint_latency becomes a true ring: a fixed number of slots per
--    endpoint ([latency] samples, 10000 by default), one upsert per
--    sample and no cleanup; the rollup still reads only the samples of
--    the window. Only attempts that reached the endpoint are samples.
--    The seed's columns (endpoint_id, response_ms, status_code,
--    measured_at) stay, so its percentile query still runs.
--  * endpoint_health keeps the ring's next slot and the endpoint's
--    adaptive concurrency limit (shown by hookd endpoints).

CREATE TABLE delivery_attempts (
    message_id  INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,   -- 1, 2, ...
    endpoint_id INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    response_ms INTEGER,            -- NULL: never reached the endpoint
    status_code INTEGER,
    error_class TEXT,
    detail      TEXT,
    PRIMARY KEY (message_id, attempt)
) WITHOUT ROWID;
INSERT INTO delivery_attempts (message_id, attempt, endpoint_id, at, response_ms, status_code, error_class, detail)
    SELECT message_id, row_number() OVER (PARTITION BY message_id ORDER BY id), endpoint_id, measured_at,
           response_ms, status_code, error_class, detail
    FROM endpoint_latency WHERE message_id IS NOT NULL;
CREATE TRIGGER delivery_attempts_follow AFTER DELETE ON webhook_queue
BEGIN
    DELETE FROM delivery_attempts WHERE message_id = old.id;
END;

CREATE TABLE endpoint_latency_v4 (
    endpoint_id INTEGER NOT NULL,
    slot        INTEGER NOT NULL,
    message_id  INTEGER,
    response_ms INTEGER NOT NULL,
    status_code INTEGER,
    measured_at INTEGER NOT NULL,
    PRIMARY KEY (endpoint_id, slot)
) WITHOUT ROWID;
-- the newest 10000 samples of each endpoint, oldest in slot 0
INSERT INTO endpoint_latency_v4 (endpoint_id, slot, message_id, response_ms, status_code, measured_at)
    SELECT endpoint_id, kept - rn, message_id, response_ms, status_code, measured_at FROM (
        SELECT l.*, row_number() OVER (PARTITION BY endpoint_id ORDER BY id DESC) AS rn,
               min(count(*) OVER (PARTITION BY endpoint_id), 10000) AS kept
        FROM endpoint_latency l WHERE response_ms IS NOT NULL)
    WHERE rn <= 10000;
DROP TABLE endpoint_latency;
ALTER TABLE endpoint_latency_v4 RENAME TO endpoint_latency;

ALTER TABLE endpoint_health ADD COLUMN ring_next INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoint_health ADD COLUMN concurrency_limit INTEGER;
UPDATE endpoint_health SET ring_next =
    (SELECT count(*) FROM endpoint_latency l WHERE l.endpoint_id = endpoint_health.endpoint_id) % 10000;
