-- The audit log at fleet scale (docs/audit.md), after the 20-million-event benchmark (bench/audit-scale):
--
-- 1. An (action, id) index, so that `GET /audit-events?action=…` walks the action's own events newest first in
--    each day partition. Without it a rare action (a policy change among millions of governed calls) read the
--    whole log through the primary key before it found a page. Built on every partition in this migration: on a
--    large log writes wait for the build (bench/results/audit-scale.json: `migration019Seconds`).
CREATE INDEX audit_events_action ON audit_events (action, id);

-- 2. The append-only rule, narrowed to what retention needs. Migration 017 let a DELETE through in any partition
--    for events before a cutoff the transaction declared; retention only ever deletes from the default partition
--    (day partitions go whole, by DROP), and never inside the last day (audit.retentionDays is at least 1). So a
--    DELETE now passes only in audit_events_default, only for events before the declared cutoff, and only when
--    that cutoff is at least a day old: no path can delete an event from a day partition or a recent one.
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  before_text text := current_setting('reins.audit_retention_before', true);
BEGIN
  IF TG_OP = 'DELETE' AND TG_TABLE_NAME = 'audit_events_default' AND before_text IS NOT NULL AND before_text <> ''
     AND before_text::timestamptz <= now() - interval '1 day' AND OLD.at < before_text::timestamptz THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only';
END;
$$;
