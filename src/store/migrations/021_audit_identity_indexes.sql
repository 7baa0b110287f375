-- The audit list's identity filter combined with an action or a type (docs/audit.md), after the 20-million-event
-- benchmark (bench/audit-scale): `identity=X&action=Y` walked X's (actor_id, id) and (subject, id) indexes newest
-- first and read each event to check its action, so when X had few or no events of that action the page read all of
-- X's events in every day partition (100,000 events: 2.4-6 s, p95 20 s under load). With the action (or the type)
-- inside the index key, each walk reads only X's events of that action, in id order, and stops after a page.
--
-- PostgreSQL only. The embedded store (PGlite, one node, a small log) reads such a page in milliseconds anyway,
-- while building four more indexes on each of its day partitions made every fresh embedded store 16 s slower to
-- start on this project's 2-core machine (each index of each partition is a relation PGlite creates slowly).
DO $$
BEGIN
  IF version() NOT LIKE '%PGlite%' THEN
    CREATE INDEX audit_events_actor_action ON audit_events (actor_id, action, id);
    CREATE INDEX audit_events_subject_action ON audit_events (subject, action, id);
    CREATE INDEX audit_events_actor_type ON audit_events (actor_id, type, id);
    CREATE INDEX audit_events_subject_type ON audit_events (subject, type, id);
  END IF;
END;
$$;
