-- The budget rule a top-up request matched when it was submitted: a rule renamed or removed since is reported
-- at approval instead of silently raising another one.
ALTER TABLE access_requests ADD COLUMN budget_rule_id text;
ALTER TABLE access_requests ADD COLUMN budget_rule_name text;
