-- Schema version 5: dead letters found by index (SQLite's version 13):
-- every dead letter newest first by id, and one endpoint's. Rows enter
-- them only when they become dead letters.
CREATE INDEX idx_queue_dead_id ON hookd_queue (id) WHERE status = 'dead_letter';
CREATE INDEX idx_queue_dead_ep ON hookd_queue (endpoint_id, id) WHERE status = 'dead_letter';
