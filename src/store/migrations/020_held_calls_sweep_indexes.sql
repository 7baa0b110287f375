-- Held calls: what a replica's periodic sweep asks, by index rather than by reading every pending entry (with
-- 50,000 parked, a sweep read them all twice every 5 s; bench/held-calls).
-- Which replicas own pending entries: a handful, found by skipping through this index (registry.ts `silentOwners`).
CREATE INDEX held_calls_pending_replica ON held_calls (replica_id) WHERE state = 'pending';
-- Which entries were decided lately: the safety net for a lost notification reads only those (registry.ts `recheckRecent`).
CREATE INDEX held_calls_decided_at ON held_calls (decided_at) WHERE decided_at IS NOT NULL;
