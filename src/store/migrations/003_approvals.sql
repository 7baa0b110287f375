-- The approval workflow: access requests and their decisions, grants, exception rules, notifications.

CREATE TABLE exception_rules (
  id text PRIMARY KEY,
  name text NOT NULL,
  policy_name text NOT NULL,
  max_duration_seconds integer NOT NULL CHECK (max_duration_seconds > 0),
  required_approvers text[] NOT NULL DEFAULT '{}',
  project_scope text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE access_requests (
  id text PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('exception', 'model_access', 'budget_topup')),
  state text NOT NULL CHECK (state IN ('pending', 'under_review', 'approved', 'denied')),
  -- The developer identity behind the credential or session; never a body field.
  requester text NOT NULL,
  -- Stored verbatim; always returned as data.
  justification text NOT NULL,
  target_policy text,
  requested_model text,
  requested_amount_usd numeric(20, 9),
  required_approvers text[] NOT NULL DEFAULT '{}',
  duration_seconds integer,
  project_scope text NOT NULL DEFAULT '',
  decision_count integer NOT NULL DEFAULT 0,
  grant_id text,
  denial_reason text,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX access_requests_requester ON access_requests (requester, created_at);
CREATE INDEX access_requests_state ON access_requests (state, created_at);

-- One decision per approver and request: racing votes of one approver cannot both count.
CREATE TABLE request_decisions (
  request_id text NOT NULL REFERENCES access_requests (id),
  approver text NOT NULL,
  decision text NOT NULL CHECK (decision IN ('approve', 'deny')),
  reason text,
  at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (request_id, approver)
);

CREATE TABLE grants (
  id text PRIMARY KEY,
  type text NOT NULL CHECK (type IN ('exception', 'model_access', 'budget_topup')),
  -- active or revoked as stored; an active grant past expires_at is expired, computed at read time.
  state text NOT NULL CHECK (state IN ('active', 'revoked', 'expired')),
  developer_id text NOT NULL,
  policy_name text,
  model text,
  amount_usd numeric(20, 9),
  project_scope text NOT NULL DEFAULT '',
  approvers text[] NOT NULL DEFAULT '{}',
  request_id text NOT NULL REFERENCES access_requests (id),
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  revoked_by text,
  -- Set once by the sweeper when it announced the expiry (the announcement happens exactly once).
  expiry_announced_at timestamptz
);
CREATE INDEX grants_developer ON grants (developer_id, state, expires_at);

CREATE TABLE notifications (
  id bigserial PRIMARY KEY,
  recipient text NOT NULL,
  kind text NOT NULL,
  message text NOT NULL,
  request_id text,
  grant_id text,
  data jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  read_at timestamptz
);
CREATE INDEX notifications_recipient ON notifications (recipient, id);
