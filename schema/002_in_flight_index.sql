-- hookd schema version 2: count in-flight rows (stats, health summary,
-- metrics) without scanning the queue.
CREATE INDEX idx_queue_in_flight ON webhook_queue (endpoint_id) WHERE status = 'in_flight';
