-- hookd schema version 12: erasure (hookd erase, [retention] payload).
--  * webhook_queue.erased_at: when the message's payload, its response
--    excerpts and the URLs as sent were removed (NULL: not erased). The
--    row keeps its ids, statuses and times. An erased payload is empty.
--    A waiting row erased is never delivered: it is a dead letter of class
--    erased. A row in flight keeps its delivery (hookd cannot recall a
--    request on the wire); its result is stored without URL or response,
--    and a failure dead-letters it.

ALTER TABLE webhook_queue ADD COLUMN erased_at INTEGER;
--  * idx_queue_payload: [retention] payload erases delivered rows by
--    delivery time; erased rows leave this index, so each pass starts at
--    the first row still to erase (idx_queue_delivered would walk every
--    erased row again). Rows are added at its end, in delivery order.

CREATE INDEX idx_queue_payload ON webhook_queue (delivered_at) WHERE status = 'delivered' AND erased_at IS NULL;
