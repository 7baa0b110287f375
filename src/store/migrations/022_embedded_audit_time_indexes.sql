-- The embedded store's audit writes, made cheaper: PGlite drops the two time indexes, (at) and (type, at). Its
-- store thread writes every governed call's two audit events inside the gateway's own process, and the seven audit
-- indexes were half of what an event cost it (bench/audit-scale/row-cost.ts, bench/results/audit-row-cost.md, on
-- this project's 2-core machine: 74 µs an event, 38 with the primary key alone, 64 without these two). On a log
-- partitioned by day the two are nearly redundant: a since/until window reads only its days anyway, and the list's pages walk the primary key (id, at) or a filter's (…, id) index whatever the window
-- (bench/results/audit-scale-plans.md: no page plan uses either). What used them reads the window's day partitions
-- instead: the spend report (a sum over every LLM event of its window, which it reads whole either way), the runtime
-- guard's one look-up of where its last day starts (the primary key, whose second column is `at`), and retention's
-- batches in the default partition (empty unless the partition chore fell a week behind).
--
-- PGlite only. The embedded store is one process (the data directory's lock, store/data-dir-lock.ts), so no
-- previous version runs beside this one during an update, and one that is rolled back to reads the same rows with
-- the same queries (no query names an index). PostgreSQL keeps every index: its replicas roll over side by side, and
-- migrations there only add (test/unit/store/migrations-additive.test.ts).
DO $$
BEGIN
  IF version() LIKE '%PGlite%' THEN
    DROP INDEX audit_events_at;
    DROP INDEX audit_events_type_at;
  END IF;
END;
$$;
