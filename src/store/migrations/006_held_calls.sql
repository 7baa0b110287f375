-- Held calls: live LLM requests and MCP tool calls parked by an approve policy until a person decides.

CREATE TABLE held_calls (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('llm', 'mcp')),
  state text NOT NULL CHECK (state IN ('pending', 'released', 'stopped', 'timed_out')),
  timeout_outcome text CHECK (timeout_outcome IN ('deny', 'allow')),
  -- The developer of a personal access token's call; null for an agent key (no requester to compare).
  requester text,
  agent_id text NOT NULL DEFAULT '',
  session_id text,
  tool text,
  model text,
  policy_name text NOT NULL,
  policy_message text NOT NULL,
  -- LLM requests: a short excerpt of the prompt, credentials redacted before storage.
  prompt_excerpt text,
  dedupe_key text NOT NULL,
  attached_calls integer NOT NULL DEFAULT 1,
  -- The replica whose callers wait on this entry (for resolving entries of a replica that died).
  replica_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  decided_by text,
  decided_at timestamptz,
  note text
);
-- One pending entry per identical call: the next identical call attaches to it.
CREATE UNIQUE INDEX held_calls_pending_key ON held_calls (dedupe_key) WHERE state = 'pending';
CREATE INDEX held_calls_state ON held_calls (state, created_at);

CREATE TABLE settings (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Replicas with calls parked announce they are alive; entries of a replica whose heartbeat lapsed are resolved.
CREATE TABLE replica_heartbeats (
  replica_id text PRIMARY KEY,
  seen_at timestamptz NOT NULL DEFAULT now()
);
