/** `auth.oidc`: the example loads as written; each bad value stops start-up naming its key. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig, ownSecrets } from '../../../src/config/config.js';

const EXAMPLE = `
auth:
  oidc:
    issuer: "https://login.example.com"
    clientId: reins
    clientSecret: "\${OIDC_CLIENT_SECRET}"
    redirectUrl: "https://reins.example.com/auth/oidc/callback"
    scopes: [openid, email, profile, groups]
    identity: { claim: email, namespace: people }
    roles: { admin: [reins-admins], viewer: [security-auditors], developer: ["*"] }
    groupsClaim: groups
`;

const env = { REINS_DATA_DIR: 'memory', OIDC_CLIENT_SECRET: 'client-secret-from-env-0123' };

function rejects(yaml: string, key: string, message?: RegExp): void {
  assert.throws(
    () => loadConfig(env, yaml),
    (err: unknown) => err instanceof ConfigError && err.key === key && (!message || message.test(err.message)),
    `expected a ConfigError naming ${key}`,
  );
}

test("the issue's example loads, with the defaults for what it leaves out", () => {
  const c = loadConfig(env, EXAMPLE);
  assert.deepEqual(c.auth.oidc, {
    issuer: 'https://login.example.com',
    clientId: 'reins',
    clientSecret: 'client-secret-from-env-0123',
    redirectUrl: 'https://reins.example.com/auth/oidc/callback',
    scopes: ['openid', 'email', 'profile', 'groups'],
    identity: { claim: 'email', namespace: 'people' },
    roles: { admin: ['reins-admins'], viewer: ['security-auditors'], developer: ['*'] },
    groupsClaim: 'groups',
    maxSessionSeconds: 43200,
    displayName: 'login.example.com',
  });
  assert.ok(ownSecrets(c).includes('client-secret-from-env-0123'), 'the client secret is redacted like the other secrets');
  assert.equal(loadConfig(env, '').auth.oidc, null);
  assert.equal(c.auth.tokenSignIn, 'all');
  assert.equal(loadConfig(env, `${EXAMPLE}  tokenSignIn: admins\n`).auth.tokenSignIn, 'admins');
});

test('each bad value names its key', () => {
  const base = (extra: string) => `auth:\n  oidc:\n    clientId: reins\n    roles: { developer: ["*"] }\n${extra}`;
  rejects(base('    redirectUrl: "https://r.example.com/auth/oidc/callback"\n'), 'auth.oidc.issuer', /required/);
  rejects(base('    issuer: "http://login.example.com"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n'), 'auth.oidc.issuer', /https/);
  rejects(base('    issuer: "not a url"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n'), 'auth.oidc.issuer');
  rejects(base('    issuer: "https://login.example.com"\n    redirectUrl: "https://r.example.com/callback"\n'), 'auth.oidc.redirectUrl', /\/auth\/oidc\/callback/);
  rejects(base('    issuer: "https://login.example.com"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n    scopes: [email]\n'), 'auth.oidc.scopes', /openid/);
  rejects(base('    issuer: "https://login.example.com"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n    identity: { namespace: People }\n'), 'auth.oidc.identity.namespace');
  rejects(base('    issuer: "https://login.example.com"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n    grupsClaim: groups\n'), 'auth.oidc.grupsClaim', /unknown key/);
  rejects('auth:\n  oidc:\n    issuer: "https://login.example.com"\n    clientId: reins\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n    roles: { owner: [x] }\n', 'auth.oidc.roles.owner', /unknown key/);
  rejects('auth:\n  oidc:\n    issuer: "https://login.example.com"\n    clientId: reins\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n', 'auth.oidc.roles', /at least one group/);
  rejects(base('    issuer: "https://login.example.com"\n    redirectUrl: "https://r.example.com/auth/oidc/callback"\n    maxSessionSeconds: 10\n'), 'auth.oidc.maxSessionSeconds');
  rejects('auth:\n  saml: {}\n', 'auth.saml', /unknown key/);
  rejects('auth:\n  tokenSignIn: off\n', 'auth.tokenSignIn', /needs auth.oidc/);
  rejects('auth:\n  tokenSignIn: never\n', 'auth.tokenSignIn');
});

test('http:// is allowed for a provider on this machine only', () => {
  const c = loadConfig(
    env,
    'auth:\n  oidc:\n    issuer: "http://127.0.0.1:9000"\n    clientId: reins\n    redirectUrl: "http://localhost:8080/auth/oidc/callback"\n    roles: { developer: ["*"] }\n',
  );
  assert.equal(c.auth.oidc?.issuer, 'http://127.0.0.1:9000');
  assert.equal(c.auth.oidc?.clientSecret, undefined);
});
