-- Rate limits (issue 21): requests and tokens per minute, per identity in a rule's scope, for the models its pattern
-- matches on one upstream (by name) or every upstream ('*'). The most specific scope binds, as for budget rules.
CREATE TABLE rate_limit_rules (
  id text PRIMARY KEY,
  name text NOT NULL,
  scope text NOT NULL,
  pattern text NOT NULL,
  upstream text NOT NULL DEFAULT '*',
  requests_per_minute integer,
  tokens_per_minute bigint,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  CHECK (requests_per_minute IS NOT NULL OR tokens_per_minute IS NOT NULL)
);

-- One row per rule, identity and UTC minute (the store's clock, so replicas agree on the minute): the requests
-- admitted and the tokens their answers reported. A request is admitted by one conditional upsert while the
-- minute's requests are under the limit and its tokens so far are under the token limit: racing calls on any
-- replica serialise on the row, so the count is exact; tokens arrive with the answers (drift: calls in flight).
CREATE TABLE rate_limit_counters (
  rule_id text NOT NULL REFERENCES rate_limit_rules (id) ON DELETE CASCADE,
  identity_id text NOT NULL,
  window_start timestamptz NOT NULL,
  requests integer NOT NULL DEFAULT 0,
  tokens bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (rule_id, identity_id, window_start)
);
CREATE INDEX rate_limit_counters_window ON rate_limit_counters (window_start);
