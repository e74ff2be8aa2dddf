-- hookd schema version 12: erasure (hookd erase, [retention] payload).
--  * webhook_queue.erased_at: when the message's payload, its response
--    excerpts and the URLs as sent were removed (NULL: not erased). The
--    row keeps its ids, statuses and times. An erased payload is empty.
--    A waiting row erased is never delivered: it is a dead letter of class
--    erased. A row in flight keeps its delivery (hookd cannot recall a
--    request on the wire); its result is stored without URL or response,
--    and a failure dead-letters it.

ALTER TABLE webhook_queue ADD COLUMN erased_at INTEGER;
