-- Schema version 4: erasure (SQLite's version 12). hookd_queue.erased_at:
-- when the payload, response excerpts and URLs as sent were removed (NULL:
-- not erased); the payload is then empty. A waiting row erased is a dead
-- letter of class erased; a row in flight settles without URL or response
-- and is not retried.

ALTER TABLE hookd_queue ADD COLUMN erased_at timestamptz;
-- idx_queue_payload: [retention] payload erases delivered rows by
-- delivery time; erased rows leave the index.
CREATE INDEX idx_queue_payload ON hookd_queue (delivered_at) WHERE status = 'delivered' AND erased_at IS NULL;
