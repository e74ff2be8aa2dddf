-- hookd schema version 3.
--  * webhook_queue.last_error_class: a stable failure class (http_503,
--    timeout, connect_failed, ssrf_blocked, ...). The dead-letter analysis
--    groups by it: last_error keeps a body excerpt, and two 503s with
--    different bodies are one failure.
--  * endpoint_latency: response_ms is NULL for an attempt that never
--    reached the endpoint (refused by the SSRF guard, DNS, connect): such
--    an attempt is no latency sample, and a 0 there dragged p50 down
--    exactly when an endpoint was broken. detail keeps the attempt's
--    sanitised error text or body excerpt. SQLite cannot drop a NOT NULL,
--    so the table is rebuilt under its own name.
--  * endpoint_health.slow_since: the slow scan lowered this endpoint's
--    failure threshold (kept across restarts, as the seed keeps it in
--    failure_threshold).

ALTER TABLE webhook_queue ADD COLUMN last_error_class TEXT;
UPDATE webhook_queue SET last_error_class = CASE
    WHEN last_status_code IS NOT NULL AND status <> 'delivered' THEN 'http_' || last_status_code
    WHEN last_error = 'endpoint deleted' THEN 'endpoint_deleted'
    WHEN last_error LIKE 'connect:%' THEN 'connect_failed'
    WHEN last_error LIKE 'blocked:%' THEN 'ssrf_blocked'
    WHEN instr(last_error, ':') > 0 THEN substr(last_error, 1, instr(last_error, ':') - 1)
    ELSE NULL END
WHERE last_error IS NOT NULL;

CREATE TABLE endpoint_latency_v3 (
    id          INTEGER PRIMARY KEY,
    endpoint_id INTEGER NOT NULL,
    message_id  INTEGER,
    response_ms INTEGER,            -- NULL: the request never reached the endpoint
    status_code INTEGER,
    error_class TEXT,
    detail      TEXT,
    measured_at INTEGER NOT NULL
);
INSERT INTO endpoint_latency_v3 (id, endpoint_id, message_id, response_ms, status_code, error_class, measured_at)
    SELECT id, endpoint_id, message_id,
           CASE WHEN status_code IS NULL AND error_class IN ('dns', 'connect', 'blocked') THEN NULL
                ELSE response_ms END,
           status_code,
           CASE error_class WHEN 'connect' THEN 'connect_failed' WHEN 'blocked' THEN 'ssrf_blocked'
                WHEN '' THEN NULL ELSE error_class END,
           measured_at
    FROM endpoint_latency;
DROP TABLE endpoint_latency;
ALTER TABLE endpoint_latency_v3 RENAME TO endpoint_latency;
-- covering: the percentile rollup reads response_ms from the index alone
CREATE INDEX idx_latency_endpoint ON endpoint_latency (endpoint_id, measured_at, response_ms);
CREATE INDEX idx_latency_time ON endpoint_latency (measured_at);

ALTER TABLE endpoint_health ADD COLUMN slow_since INTEGER;
