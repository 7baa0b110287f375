-- The service's own pods as any replica saw them: findings of the service's own pods, "including a previous pod of
-- the service", are dropped before counting, and a replica that started after a pod of the service went away never
-- saw it. Each replica writes the pods it sees (current ones at the time it saw them, previous ones at the time they
-- went); every replica's answer uses every row seen within the widest window, so all replicas answer alike.
CREATE TABLE runtime_self_pods (
  namespace text NOT NULL,
  name text NOT NULL,
  ip text NOT NULL,
  last_seen_at timestamptz NOT NULL,
  PRIMARY KEY (namespace, name, ip)
);
