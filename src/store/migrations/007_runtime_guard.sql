-- Runtime guard, store side: sensor observations (evidence, kept about a day), node status, the per-node count
-- of stored items and the last ingest-lag scrape.

-- One row per observation item of a sensor report. Evidence, not the audit log: rows older than a day (plus a
-- margin) are swept. Replicas read new rows by id into their in-memory index (see src/runtime-guard/README.md).
CREATE TABLE runtime_observations (
  id bigserial PRIMARY KEY,
  node text NOT NULL,
  family text NOT NULL CHECK (family IN ('dns', 'network', 'open', 'exec', 'other')),
  rule text NOT NULL,
  behavior text NOT NULL,
  subject text NOT NULL,
  dest_ip text NOT NULL,
  dest_name text NOT NULL,
  count integer NOT NULL CHECK (count >= 1),
  pod_name text NOT NULL,
  pod_ip text NOT NULL,
  namespace text NOT NULL,
  result text NOT NULL,
  mode text NOT NULL,
  -- Unix seconds, the sensor's clock: the last of the identical events aggregated into this item.
  observed_at bigint NOT NULL
);
-- The retention sweep: rows arrive roughly in time order, so a BRIN index finds old ones at almost no cost to
-- ingest.
CREATE INDEX runtime_observations_observed_at ON runtime_observations USING brin (observed_at);

-- Items stored per node since the node's first report, raised in the same statement as the insert. The lag
-- compares it with the sensor's own counter of items recorded.
CREATE TABLE runtime_node_items (
  node text PRIMARY KEY,
  stored_items bigint NOT NULL DEFAULT 0
);

-- The last status each node's sensor sent (about every 30 s); older than 2 minutes reads as unknown.
CREATE TABLE runtime_node_status (
  node text PRIMARY KEY,
  sensor_alive boolean NOT NULL,
  bpf_lsm text NOT NULL CHECK (bpf_lsm IN ('available', 'unavailable', 'unknown')),
  reason text NOT NULL,
  reported_at_unix bigint NOT NULL
);

-- The leader's last scrape of the sensors' counters, so that every replica answers the same lag. One row.
CREATE TABLE runtime_ingest_lag (
  id integer PRIMARY KEY CHECK (id = 1),
  -- 0 = never scraped (unknown).
  scraped_at_unix bigint NOT NULL,
  lag bigint NOT NULL,
  -- The figure per node read by that scrape: [{node, recorded, stored, lag}].
  per_node jsonb NOT NULL,
  -- What the next scrape compares with, read or not this time: [{node, recorded, storedTotal, offset, …}];
  -- offset re-baselines a node whose sensor restarted.
  nodes jsonb NOT NULL,
  scrape_error text NOT NULL
);
