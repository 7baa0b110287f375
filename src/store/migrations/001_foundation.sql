-- Foundation: identities with autonomy tiers, credentials, console sessions, the audit log.

-- Every change to an identity takes the next revision, so a replica's tier cache can tell a newer value
-- (from NOTIFY) from an older one (from a periodic re-read that started earlier).
CREATE SEQUENCE identity_revision_seq;

CREATE TABLE identities (
  id text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('agent', 'developer')),
  role text CHECK (role IN ('admin', 'viewer', 'developer')),
  autonomy_tier text CHECK (autonomy_tier IN ('T1', 'T2', 'T3', 'T4')),
  display_name text NOT NULL DEFAULT '',
  revision bigint NOT NULL DEFAULT nextval('identity_revision_seq'),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  -- Only developers have a role; only agents have a tier.
  CHECK ((kind = 'developer' AND role IS NOT NULL AND autonomy_tier IS NULL) OR (kind = 'agent' AND role IS NULL))
);
CREATE INDEX identities_admins ON identities (role) WHERE role = 'admin';

CREATE TABLE tokens (
  id text PRIMARY KEY,
  -- personal: a developer's personal access token; agent: an agent key; sensor: a runtime sensor's token.
  kind text NOT NULL CHECK (kind IN ('personal', 'agent', 'sensor')),
  identity_id text REFERENCES identities (id) ON DELETE CASCADE,
  name text NOT NULL,
  secret_hash text NOT NULL UNIQUE,
  display_prefix text NOT NULL,
  created_by text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz,
  revoked_at timestamptz,
  revoked_by text,
  last_used_at timestamptz,
  CHECK ((kind = 'sensor') = (identity_id IS NULL))
);
CREATE INDEX tokens_identity ON tokens (identity_id);

CREATE TABLE console_sessions (
  id text PRIMARY KEY,
  secret_hash text NOT NULL UNIQUE,
  csrf_token text NOT NULL,
  identity_id text NOT NULL REFERENCES identities (id) ON DELETE CASCADE,
  -- The personal access token that signed in: revoking it ends the session too.
  token_id text NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  ended_at timestamptz
);

CREATE TABLE audit_events (
  id bigserial PRIMARY KEY,
  at timestamptz NOT NULL DEFAULT now(),
  -- The request type for gateway events (llm, mcp, egress); 'control' for control-plane changes.
  type text NOT NULL,
  -- {entity}.{verb}, e.g. identity.tier_set, token.create, session.create.
  action text NOT NULL,
  outcome text NOT NULL DEFAULT 'ok',
  actor_kind text NOT NULL,
  actor_id text,
  -- The identity the event is about (the agent of a call, the identity whose tier changed).
  subject text,
  -- Destination host: egress events only.
  host text,
  data jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_type ON audit_events (type, id);
CREATE INDEX audit_events_subject ON audit_events (subject, id);
CREATE INDEX audit_events_actor ON audit_events (actor_id, id);

-- Append-only: past events keep the values they were recorded with.
CREATE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_events is append-only';
END;
$$;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE OR DELETE ON audit_events
  FOR EACH ROW EXECUTE FUNCTION audit_events_append_only();
