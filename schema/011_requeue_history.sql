-- hookd schema version 11: a requeue keeps the attempt log.
--  * Why: the log was keyed by (message_id, attempt) and requeue starts
--    attempt_count over, so the new attempt 1 replaced the old one, and
--    the view hid a logged attempt 1 once the row folded a new one. A
--    partner dispute needs every attempt ever made, in order.
--  * webhook_queue.generation: how many times the message was requeued
--    (0: never). Each requeue adds 1.
--  * attempt_rows is keyed by (message_id, generation, attempt). Attempt
--    0 of a generation is the requeue that began it: its at is when, its
--    detail 'requeued'; no request was sent.
--  * delivery_attempts gains the column generation (last, so the columns
--    before it keep their places); order by generation, attempt.
--  * Rows migrated: the log's rows keep generation 0. A message whose row
--    folds a delivered attempt 1 and that also has logged attempts was
--    requeued (the fold is always its generation's only attempt): its row
--    moves to generation 1 so both show.

ALTER TABLE webhook_queue ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

DROP VIEW delivery_attempts;
DROP TRIGGER attempt_rows_follow;
CREATE TABLE attempt_rows_v11 (
    message_id  INTEGER NOT NULL,
    generation  INTEGER NOT NULL DEFAULT 0,
    attempt     INTEGER NOT NULL,   -- 0: the requeue that began the generation
    endpoint_id INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    response_ms INTEGER,
    status_code INTEGER,
    error_class TEXT,
    detail      TEXT,
    method      TEXT,
    url         TEXT,
    response    TEXT,
    PRIMARY KEY (message_id, generation, attempt)
) WITHOUT ROWID;
INSERT INTO attempt_rows_v11 (message_id, generation, attempt, endpoint_id, at, response_ms, status_code,
                              error_class, detail, method, url, response)
    SELECT message_id, 0, attempt, endpoint_id, at, response_ms, status_code, error_class, detail, method, url,
           response
    FROM attempt_rows;
DROP TABLE attempt_rows;
ALTER TABLE attempt_rows_v11 RENAME TO attempt_rows;
CREATE TRIGGER attempt_rows_follow AFTER DELETE ON webhook_queue
BEGIN
    DELETE FROM attempt_rows WHERE message_id = old.id;
END;

UPDATE webhook_queue SET generation = 1
WHERE first_method IS NOT NULL AND EXISTS (SELECT 1 FROM attempt_rows a WHERE a.message_id = webhook_queue.id);

CREATE VIEW delivery_attempts AS
    SELECT a.message_id, a.attempt, a.endpoint_id, a.at, a.response_ms, a.status_code, a.error_class,
           a.detail, a.method, a.url, a.response, a.generation
    FROM attempt_rows a
    UNION ALL
    SELECT q.id, 1, q.endpoint_id, q.delivered_at, q.last_response_ms, q.last_status_code, NULL, NULL,
           q.first_method, q.first_url, q.first_response, q.generation
    FROM webhook_queue q
    WHERE q.first_method IS NOT NULL;
