-- Policies, budget rules, model access and budget counters: what the gateway reads on every call.

-- Every change to the policy set takes a new revision; replicas reload on NOTIFY reins_policy.
CREATE SEQUENCE policy_revision_seq;

CREATE TABLE policies (
  name text PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('allow', 'deny', 'approve', 'audit')),
  applies_to text[] NOT NULL,
  match text NOT NULL,
  message text NOT NULL,
  approval_window_seconds integer,
  enabled boolean NOT NULL DEFAULT true,
  -- Built-in policies ship with Reins: they can be edited and disabled, never deleted.
  built_in boolean NOT NULL DEFAULT false,
  -- Evaluation order (the first matching policy of the winning kind decides): creation order.
  position bigserial NOT NULL,
  revision bigint NOT NULL DEFAULT nextval('policy_revision_seq'),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE budget_rules (
  id text PRIMARY KEY,
  name text NOT NULL,
  -- A namespace (eng), an identity id (eng/alice) or *.
  scope text NOT NULL,
  -- A model glob: *, claude-*.
  pattern text NOT NULL,
  limit_usd numeric(20, 9) NOT NULL CHECK (limit_usd >= 0),
  period text NOT NULL CHECK (period IN ('session', 'day', 'month')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Spend against one rule by one identity in one period (session id, UTC day or month). `reserved_usd` is
-- what calls in flight have set aside; a call is admitted only while spent + reserved is below the limit,
-- in one conditional statement, so racing calls on any replica cannot all pass the check.
CREATE TABLE budget_counters (
  rule_id text NOT NULL REFERENCES budget_rules (id) ON DELETE CASCADE,
  identity_id text NOT NULL,
  period_key text NOT NULL,
  spent_usd numeric(20, 9) NOT NULL DEFAULT 0,
  reserved_usd numeric(20, 9) NOT NULL DEFAULT 0,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (rule_id, identity_id, period_key)
);

-- Which models an identity or a namespace may use. Callers no rule covers may use any model.
CREATE TABLE model_access_rules (
  id text PRIMARY KEY,
  -- A namespace (eng), an identity id (eng/alice) or *.
  scope text NOT NULL,
  -- Model globs.
  models text[] NOT NULL,
  description text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Spend reports read gateway events by identity and time.
CREATE INDEX audit_events_type_at ON audit_events (type, at);
