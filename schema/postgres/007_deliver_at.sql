-- Schema version 7: an enqueue's absolute deliver_at keeps its wall-clock
-- time when the clock steps (SQLite's version 14 says why).
--  * hookd_queue.deliver_at: the time an enqueue asked for with
--    "deliver_at" (NULL: the due time is relative). A clock step moves a
--    waiting row's next_attempt_at unless it is still its deliver_at and
--    the row has had no attempt. No default to fill: adding the column
--    rewrites nothing.

ALTER TABLE hookd_queue ADD COLUMN deliver_at timestamptz;
