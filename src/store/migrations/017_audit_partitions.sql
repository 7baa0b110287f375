-- The audit log at fleet scale (docs/audit.md): audit_events becomes a table partitioned by day on `at`, so that
-- retention drops whole expired days (no row-by-row delete, no vacuum storm) and a since/until window reads only
-- its days. One partition a day: at 1,000 calls/s a day is about 45 GB, a week would be 300 GB that retention could
-- only drop a week late; 90 days of retention is 90 partitions, few enough for the planner.
--
-- The table keeps its name, columns, defaults and sequence: a replica of the previous version reads and writes
-- it unchanged during a rolling update (test/unit/store/migrations-additive.test.ts allows this one replacement).
-- Every event is copied as it is (same id, same at, same values); the copy holds the table for its duration.

-- Who runs the fleet-wide chores (partitions ahead, retention): one replica at a time holds a named lease.
CREATE TABLE leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);

ALTER TABLE audit_events RENAME TO audit_events_unpartitioned;
ALTER TABLE audit_events_unpartitioned RENAME CONSTRAINT audit_events_pkey TO audit_events_unpartitioned_pkey;
DROP INDEX audit_events_at;
DROP INDEX audit_events_type;
DROP INDEX audit_events_subject;
DROP INDEX audit_events_actor;
DROP INDEX audit_events_type_at;
DROP INDEX audit_events_call_id;
ALTER SEQUENCE audit_events_id_seq OWNED BY NONE;

CREATE TABLE audit_events (
  id bigint NOT NULL DEFAULT nextval('audit_events_id_seq'),
  at timestamptz NOT NULL DEFAULT now(),
  type text NOT NULL,
  action text NOT NULL,
  outcome text NOT NULL DEFAULT 'ok',
  actor_kind text NOT NULL,
  actor_id text,
  subject text,
  host text,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- A key on a partitioned table includes the partition key; ids stay unique (one sequence).
  PRIMARY KEY (id, at)
) PARTITION BY RANGE (at);
ALTER SEQUENCE audit_events_id_seq OWNED BY audit_events.id;

-- Catches an event no day partition holds (the leader fell behind creating them): an insert never fails for want
-- of a partition. Retention deletes its expired rows in small batches.
CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT;

-- Creates the missing day partitions (UTC days) from `first_day` to `last_day`, both included; returns how many.
-- A day whose events already sit in the default partition is skipped: attaching it would fail.
CREATE FUNCTION audit_events_ensure_partitions(first_day date, last_day date) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  d date := first_day;
  made integer := 0;
  lo timestamptz;
  hi timestamptz;
  part text;
BEGIN
  WHILE d <= last_day LOOP
    part := 'audit_events_p' || to_char(d, 'YYYYMMDD');
    lo := d::timestamp AT TIME ZONE 'UTC';
    hi := (d + 1)::timestamp AT TIME ZONE 'UTC';
    IF to_regclass(part) IS NULL AND NOT EXISTS (SELECT 1 FROM audit_events_default WHERE at >= lo AND at < hi) THEN
      EXECUTE format('CREATE TABLE %I PARTITION OF audit_events FOR VALUES FROM (%L) TO (%L)', part, lo, hi);
      made := made + 1;
    END IF;
    d := d + 1;
  END LOOP;
  RETURN made;
END;
$$;

SELECT audit_events_ensure_partitions(
  (coalesce((SELECT min(at) FROM audit_events_unpartitioned), now()) AT TIME ZONE 'UTC')::date,
  ((now() AT TIME ZONE 'UTC') + interval '7 days')::date
);

INSERT INTO audit_events (id, at, type, action, outcome, actor_kind, actor_id, subject, host, data)
  SELECT id, at, type, action, outcome, actor_kind, actor_id, subject, host, data FROM audit_events_unpartitioned;
DROP TABLE audit_events_unpartitioned;

CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_type ON audit_events (type, id);
CREATE INDEX audit_events_subject ON audit_events (subject, id);
CREATE INDEX audit_events_actor ON audit_events (actor_id, id);
CREATE INDEX audit_events_type_at ON audit_events (type, at);
CREATE INDEX audit_events_call_id ON audit_events ((data->>'callId')) WHERE data ? 'callId';

-- Append-only, as before: no UPDATE of any event, no DELETE of a single event. The one exception is retention
-- (audit/retention.ts), which sets reins.audit_retention_before in its own transaction and may then delete only
-- events recorded before it: nothing inside the retention window can be deleted, by any path.
CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  before_text text := current_setting('reins.audit_retention_before', true);
BEGIN
  IF TG_OP = 'DELETE' AND before_text IS NOT NULL AND before_text <> '' AND OLD.at < before_text::timestamptz THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION 'audit_events is append-only';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
