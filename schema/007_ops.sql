-- hookd schema version 7: the operator's surface.
--  * endpoints.pause_reason: why a paused endpoint is paused ("operator",
--    "410 Gone", "disabled: no successful delivery for 72h", "config").
--    NULL while it is not paused. hookd resume clears it.
--  * endpoint_health.failing_since: when the current run of failures
--    began (NULL: the last attempt succeeded, or none yet). Auto-disable
--    ([delivery] disable_after) compares it with now, across restarts.

ALTER TABLE endpoints ADD COLUMN pause_reason TEXT;
ALTER TABLE endpoint_health ADD COLUMN failing_since INTEGER;
