-- The owners of an agent identity: the developers whose personal access tokens may name it in X-Reins-Agent and
-- so act with its tier. An entry is a developer identity id (`eng/alice`) or a namespace rule (`eng/*`: every
-- developer identity in that namespace). Admin-managed.
CREATE TABLE agent_owners (
  agent_id text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  -- The entry as the admin wrote it: `<namespace>/<name>` or `<namespace>/*`.
  owner text NOT NULL,
  -- Set for a developer entry: deleting that developer deletes the entry in the same statement, so a developer
  -- created later with the same id does not inherit the binding. Null for a namespace rule.
  developer_id text REFERENCES identities (id) ON DELETE CASCADE,
  PRIMARY KEY (agent_id, owner),
  CHECK ((developer_id IS NULL) = (owner LIKE '%/*')),
  CHECK (developer_id IS NULL OR developer_id = owner)
);
CREATE INDEX agent_owners_developer ON agent_owners (developer_id) WHERE developer_id IS NOT NULL;
