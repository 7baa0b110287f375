/**
 * The authorization table of authorization.test.ts, with its developer, viewer and admin callers signed in to the
 * console through a real OpenID provider (`oidc-provider`, test/helpers/oidc-provider.ts): every control-plane
 * operation, reads and state changes, must answer an OIDC session (its cookie and CSRF token) exactly as the table
 * says it answers a personal access token of the same role. The callers that hold no session (none, unknown, agent,
 * sensor) are the token table's and are not run again. A row that ends the caller's session (sign-out) is made from a
 * session of its own, so the rows after it keep theirs.
 */
process.env.REINS_AUTHZ_CALLERS = 'oidc-sessions';
await import('./authorization.test.js');
