-- hookd schema version 15: two indexes fewer on the delivery path.
--  * idx_queue_next (status, next_attempt_at) for waiting rows goes: every
--    enqueue inserted into it and every claim deleted from it, and every
--    statement that changes a row's status opened it and tested its
--    condition, for the stats' counts and oldest waiting message alone
--    (measured: 7.0k instructions an enqueue, 7.0k a claimed row and 2.3k
--    a settled one, about a tenth of hookd's work per message).
--  * idx_queue_due (endpoint_id, next_attempt_at), which the claims need
--    anyway, holds the same rows and answers those counts: all waiting
--    rows and the ones due later, each a scan of it alone.
--  * idx_queue_failed: the waiting rows that have failed (retries), small
--    while deliveries succeed, and the rows a successful delivery never
--    enters. Pending = waiting - failed; the oldest message waiting is the
--    smallest id among the due rows and the failed ones.
DROP INDEX idx_queue_next;
CREATE INDEX idx_queue_failed ON webhook_queue (next_attempt_at) WHERE status = 'failed';
--  * idx_queue_delivered and idx_queue_payload, both on delivered_at for
--    delivered rows (payload: the ones not erased yet), become one index
--    on (erased_at IS NOT NULL, delivered_at): a delivery inserts one
--    entry instead of two (measured: 3.4k instructions a settled row,
--    1.3k an enqueue, 1.6k a claimed row). [retention] payload reads the
--    rows not erased yet (0) oldest first, as from idx_queue_payload;
--    the counts and the retention of delivered rows read both parts
--    (IN (0, 1)). Erasing a row moves its entry to the second part,
--    where it had only left idx_queue_payload.
DROP INDEX idx_queue_payload;
DROP INDEX idx_queue_delivered;
CREATE INDEX idx_queue_delivered ON webhook_queue (erased_at IS NOT NULL, delivered_at) WHERE status = 'delivered';
