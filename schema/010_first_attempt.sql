-- hookd schema version 10: a first attempt that delivers is kept in its
-- message's row, not in a row of the attempt log.
--  * Why: the log is keyed by message id, and with many endpoints their
--    heads move through the interleaved ids at different speeds, so the
--    log rows one round writes land one per page (measured at 4ad9a8b:
--    0.69 of the 2.00 pages written per message with 100 endpoints).
--    The round updates the message's row anyway: most messages deliver
--    at their first attempt and now cost no log write at all.
--  * webhook_queue.first_method, first_url, first_response: the method,
--    the URL as sent and the start of the response of attempt 1 when it
--    delivered (NULL otherwise); its time, status and duration are the
--    row's delivered_at, last_status_code and last_response_ms.
--  * The log table is renamed attempt_rows; delivery_attempts is now a
--    view over both with the same columns, so hookd get and SQL against
--    delivery_attempts see every attempt as before. A folded attempt 1
--    hides a logged one (left from before a requeue), as the log's own
--    upsert replaced it before.

ALTER TABLE webhook_queue ADD COLUMN first_method TEXT;
ALTER TABLE webhook_queue ADD COLUMN first_url TEXT;
ALTER TABLE webhook_queue ADD COLUMN first_response TEXT;

DROP TRIGGER delivery_attempts_follow;
ALTER TABLE delivery_attempts RENAME TO attempt_rows;
CREATE TRIGGER attempt_rows_follow AFTER DELETE ON webhook_queue
BEGIN
    DELETE FROM attempt_rows WHERE message_id = old.id;
END;

CREATE VIEW delivery_attempts AS
    SELECT a.message_id, a.attempt, a.endpoint_id, a.at, a.response_ms, a.status_code, a.error_class,
           a.detail, a.method, a.url, a.response
    FROM attempt_rows a
    WHERE a.attempt <> 1 OR NOT EXISTS (SELECT 1 FROM webhook_queue f
                                        WHERE f.id = a.message_id AND f.first_method IS NOT NULL)
    UNION ALL
    SELECT q.id, 1, q.endpoint_id, q.delivered_at, q.last_response_ms, q.last_status_code, NULL, NULL,
           q.first_method, q.first_url, q.first_response
    FROM webhook_queue q
    WHERE q.first_method IS NOT NULL;
