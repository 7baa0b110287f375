-- OpenID Connect sign-in for the console (src/identity/oidc-*.ts, docs/sign-in.md).

-- A console session signed in through the identity provider has no personal access token behind it.
ALTER TABLE console_sessions ALTER COLUMN token_id DROP NOT NULL;
-- How the session signed in: 'token' (a personal access token) or 'oidc' (the identity provider).
ALTER TABLE console_sessions ADD COLUMN via text NOT NULL DEFAULT 'token';

-- A sign-in under way: kept in the store, not in a replica's memory, so that the provider's redirect may reach any
-- replica. Keyed by the SHA-256 of the random value of the browser's short-lived transaction cookie (the cookie
-- binds the flow to the browser that started it); taken once (DELETE ... RETURNING), so a callback replays nothing.
CREATE TABLE oidc_transactions (
  id_hash text PRIMARY KEY,
  state text NOT NULL,
  nonce text NOT NULL,
  code_verifier text NOT NULL,
  return_to text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_transactions_expiry ON oidc_transactions (expires_at);

-- Which person at which provider an identity is: the ID token's (iss, sub), never the mapped claim alone, so
-- that a reused e-mail address or a second account that maps to the same id cannot take over an identity.
CREATE TABLE oidc_links (
  issuer text NOT NULL,
  subject text NOT NULL,
  identity_id text NOT NULL UNIQUE REFERENCES identities (id) ON DELETE CASCADE,
  -- The groups of the last sign-in, as the provider sent them (shown to admins, audited on role changes).
  groups jsonb NOT NULL DEFAULT '[]',
  created_at timestamptz NOT NULL DEFAULT now(),
  last_sign_in_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (issuer, subject)
);
