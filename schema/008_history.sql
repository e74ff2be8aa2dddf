-- hookd schema version 8: a small time series per endpoint for the HTML
-- health report (hookd report --html).
--  * endpoint_history: one row per endpoint and [history] bucket (5 min):
--    attempts delivered and failed, breaker openings, and p50/p95/p99
--    over the latency samples of that bucket. Counts are added by the
--    writer about once a minute (a crash loses at most that much of the
--    counts, never a message); percentiles are set by the rollup. Rows
--    older than [history] keep (7 days) are deleted by retention.
--  * idx_history_at serves retention and the report's period.

CREATE TABLE endpoint_history (
    endpoint_id   INTEGER NOT NULL,
    bucket_at     INTEGER NOT NULL,
    delivered     INTEGER NOT NULL DEFAULT 0,
    failed        INTEGER NOT NULL DEFAULT 0,
    breaker_opens INTEGER NOT NULL DEFAULT 0,
    p50_ms        INTEGER,
    p95_ms        INTEGER,
    p99_ms        INTEGER,
    sample_count  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (endpoint_id, bucket_at)
) WITHOUT ROWID;
CREATE INDEX idx_history_at ON endpoint_history (bucket_at);
