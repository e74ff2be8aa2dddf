-- hookd schema version 13: dead letters found by index (hookd messages,
-- requeue and purge by filter: "what failed for partner X?").
--  * idx_queue_dead_id: every dead letter, newest first by id (the order
--    and keyset of a search); idx_queue_dead_ep: one endpoint's.
--  * Rows enter them only when they become dead letters, which is rare:
--    enqueue and delivery do not pay for them. Other searches walk the
--    table newest first (bounded, hookd(8)), or the event id's index.

CREATE INDEX idx_queue_dead_id ON webhook_queue (id) WHERE status = 'dead_letter';
CREATE INDEX idx_queue_dead_ep ON webhook_queue (endpoint_id, id) WHERE status = 'dead_letter';
