-- hookd schema version 14: an enqueue's absolute deliver_at keeps its
-- wall-clock time when the clock steps.
--  * webhook_queue.deliver_at: the time an enqueue asked for with
--    "deliver_at" (epoch ms; NULL: the row's due time is relative, from a
--    "delay", an endpoint's delay or a retry's backoff). When the wall
--    clock steps, hookd moves every waiting row's next_attempt_at by the
--    step so that waits keep their length, except a row whose
--    next_attempt_at is still its deliver_at and that has had no attempt:
--    the client named a time on the clock, not an interval. Anything that
--    rewrites next_attempt_at (a retry, a requeue, a recovery) ends the
--    exception by itself, with no statement of its own.
--  * Written once at enqueue and never indexed: enqueue binds one more
--    value, delivery pays nothing. A clock step is rare and reads the
--    waiting rows anyway.

ALTER TABLE webhook_queue ADD COLUMN deliver_at INTEGER;
