-- The workload of every pod any replica saw, as its owner chain resolved while the pod lived (issue 18: one row per
-- workload across rollouts). A pod deleted with its ReplicaSet after a rollout still attributes to its Deployment
-- (or CronJob, StatefulSet, DaemonSet) for as long as its evidence can be in a window: rows are kept 25 h after
-- they were last refreshed (a living pod's row is refreshed hourly), longer than the widest window (24 h).
CREATE TABLE runtime_pod_owners (
  namespace text NOT NULL,
  name text NOT NULL,
  kind text NOT NULL,
  workload text NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (namespace, name)
);
CREATE INDEX runtime_pod_owners_last_seen ON runtime_pod_owners (last_seen_at);
