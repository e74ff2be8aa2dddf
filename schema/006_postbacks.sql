-- hookd schema version 6: affiliate postbacks.
--  * webhook_queue.ordering_key: the expanded ordering_key template of
--    an endpoint that has one (NULL otherwise). A keyed row is claimed
--    only when no older row of the same endpoint and key is waiting or
--    in flight; idx_queue_order answers that question from the rows
--    still undelivered alone (delivered ones leave the index).
--  * delivery_attempts keeps what a partner asks about: the method, the
--    URL as sent (secrets and mask_params values replaced by ***) and
--    the first KiB of the response, control characters escaped.
-- The status test is written with ORs, as in version 5, and repeated
-- word for word by the claim query so that SQLite uses the index.

ALTER TABLE webhook_queue ADD COLUMN ordering_key TEXT;
CREATE INDEX idx_queue_order ON webhook_queue (endpoint_id, ordering_key, id)
    WHERE ordering_key IS NOT NULL AND (status = 'pending' OR status = 'failed' OR status = 'in_flight');

ALTER TABLE delivery_attempts ADD COLUMN method TEXT;
ALTER TABLE delivery_attempts ADD COLUMN url TEXT;
ALTER TABLE delivery_attempts ADD COLUMN response TEXT;
