-- The audit log's subject indexes, without the events whose subject is their own actor. Most events are about the one
-- who did them: every governed call made with an agent key (actor and subject the agent), a developer's tool that is
-- its own agent, a sign-in. The identity filter finds those through the actor's indexes already, so since this
-- version its subject walk asks only for the events whose subject is someone else (`subject IS DISTINCT FROM
-- actor_id`, src/audit/audit.ts), and an index of just those serves it: it costs a write nothing when the subject is
-- the actor, which a full (subject, …) index never does (bench/audit-scale/row-cost.ts, bench/results/audit-row-cost.md:
-- on PostgreSQL, with the three full subject indexes gone, an event of a governed call costs the store 17% less).
--
-- The embedded store replaces its one subject index now: it is one process (store/data-dir-lock.ts), so no previous
-- version reads beside this one, and a version rolled back to still runs every query it has (no query names an index).
DO $$
BEGIN
  IF version() LIKE '%PGlite%' THEN
    DROP INDEX audit_events_subject;
    CREATE INDEX audit_events_subject_not_actor ON audit_events (subject, id) WHERE subject IS DISTINCT FROM actor_id;
  END IF;
END;
$$;

-- PostgreSQL only adds them (migrations there only add: the previous version, whose subject walk asks for every event
-- of the subject, runs beside this one during a rolling update and after a rollback, and needs the full indexes to
-- stay fast). The full ones are dropped by a later release, once no supported version reads through them; an operator
-- who runs no older version can drop them sooner (docs/audit.md, "Retiring the full subject indexes").
DO $$
BEGIN
  IF version() NOT LIKE '%PGlite%' THEN
    CREATE INDEX audit_events_subject_not_actor ON audit_events (subject, id) WHERE subject IS DISTINCT FROM actor_id;
    CREATE INDEX audit_events_subject_action_not_actor ON audit_events (subject, action, id) WHERE subject IS DISTINCT FROM actor_id;
    CREATE INDEX audit_events_subject_type_not_actor ON audit_events (subject, type, id) WHERE subject IS DISTINCT FROM actor_id;
  END IF;
END;
$$;
