-- Schema version 6: one event id's rows found by index (hookd messages,
-- get, attempts, requeue and erase by --event-id). The dedup key
-- UNIQUE (endpoint_id, event_id) leads with the endpoint, so a search by
-- event id alone read the whole table; SQLite's dedup key leads with the
-- event id since its version 9. Ids that grow (order-1234) are added at
-- the index's right edge.
CREATE INDEX idx_queue_event ON hookd_queue (event_id);
