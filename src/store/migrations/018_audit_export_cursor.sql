-- The OTLP audit exporter's outbox cursor (audit/otlp-export.ts): the id of the last event the Collector took.
-- Moved only after a successful export, by a conditional update, so a restart or a Collector outage resumes
-- where delivery stopped (at-least-once: a batch sent but not yet recorded is sent again).
CREATE TABLE audit_export_cursors (
  name text PRIMARY KEY,
  last_id bigint NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now()
);
