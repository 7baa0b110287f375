-- The embedded store's (at) index, back (022 dropped it with (type, at)). Without it a since/until window narrower
-- than a day had no index to read it by: partition pruning stops at the day, and inside the day every page walked
-- the primary key (id, at) from the day's newest event back to the window, testing `at` on each. At 400,000 events
-- in one day a one-minute page cost 17-38 ms early in the day (2 ms late in it), and grew with the day's events; with
-- (at) it is 2 ms anywhere (bench/audit-scale/README.md, "The embedded store's time index"). Found by the gateway
-- benchmark, which counts its audit events by small time windows: on PGlite its count took 70 s instead of seconds.
-- (type, at) stays dropped: every query that filters on type and a window reads the window by (at) as well.
--
-- PGlite only, as 022: PostgreSQL never dropped it. IF NOT EXISTS: a store made before 022 still has it.
DO $$
BEGIN
  IF version() LIKE '%PGlite%' THEN
    CREATE INDEX IF NOT EXISTS audit_events_at ON audit_events (at);
  END IF;
END;
$$;
