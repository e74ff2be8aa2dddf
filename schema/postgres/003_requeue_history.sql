-- Schema version 3: a requeue keeps the attempt log (SQLite's version 11).
--  * hookd_queue.generation: how many times the message was requeued.
--  * delivery_attempts is keyed by (message_id, generation, attempt);
--    attempt 0 of a generation is the requeue that began it (its at is
--    when, its detail 'requeued'). Before, a requeued message's new
--    attempt 1 replaced the old one.

ALTER TABLE hookd_queue ADD COLUMN generation integer NOT NULL DEFAULT 0;
ALTER TABLE delivery_attempts ADD COLUMN generation integer NOT NULL DEFAULT 0;
ALTER TABLE delivery_attempts DROP CONSTRAINT delivery_attempts_pkey;
ALTER TABLE delivery_attempts ADD PRIMARY KEY (message_id, generation, attempt);
