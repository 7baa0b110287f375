/** The OIDC mapping rules (docs/sign-in.md): claim -> identity id, groups -> role, returnTo -> console path. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupsOf, identityIdFor, roleFor } from '../../../src/identity/oidc-mapping.js';
import { consoleReturnPath } from '../../../src/identity/oidc-routes.js';
import { AppError } from '../../../src/shared/errors.js';

const people = { claim: 'email', namespace: 'people' };

test('an e-mail address maps to its local part, lowercased, in the namespace', () => {
  assert.deepEqual(identityIdFor({ email: 'alice@example.com' }, people), { ok: true, value: 'people/alice' });
  assert.deepEqual(identityIdFor({ email: 'Alice.Smith@Example.com' }, people), { ok: true, value: 'people/alice.smith' });
  assert.deepEqual(identityIdFor({ preferred_username: 'bob_k' }, { claim: 'preferred_username', namespace: 'staff' }), { ok: true, value: 'staff/bob_k' });
});

test('a value that makes no valid name is refused, never rewritten; so is a missing claim or an unverified address', () => {
  for (const email of ['alice+x@example.com', '-alice@example.com', 'al ice@example.com', 'élise@example.com']) {
    const r = identityIdFor({ email }, people);
    assert.equal(r.ok, false, email);
  }
  assert.match((identityIdFor({}, people) as { reason: string }).reason, /no "email" claim/);
  assert.match((identityIdFor({ email: 'a@example.com', email_verified: false }, people) as { reason: string }).reason, /not verified/);
});

test('roles: admin, then viewer, then developer; "*" matches anyone', () => {
  const roles = { admin: ['reins-admins'], viewer: ['security-auditors'], developer: ['*'] };
  assert.deepEqual(roleFor(['reins-admins', 'security-auditors'], roles), { role: 'admin', group: 'reins-admins' });
  assert.deepEqual(roleFor(['security-auditors'], roles), { role: 'viewer', group: 'security-auditors' });
  assert.deepEqual(roleFor([], roles), { role: 'developer', group: '*' });
  assert.equal(roleFor(['marketing'], { admin: ['reins-admins'], viewer: [], developer: ['devs'] }), null);
  assert.deepEqual(groupsOf({ groups: 'one' }, 'groups'), ['one']);
  assert.deepEqual(groupsOf({ groups: ['a', 3, 'b'] }, 'groups'), ['a', 'b']);
  assert.deepEqual(groupsOf({}, 'groups'), []);
});

test('returnTo is a console path or a 400 naming it', () => {
  assert.equal(consoleReturnPath(undefined), '/');
  assert.equal(consoleReturnPath('/approvals?tab=held'), '/approvals?tab=held');
  assert.equal(consoleReturnPath('/audit/../approvals'), '/approvals', 'sent as the browser would resolve it');
  for (const bad of ['//evil.example.com', 'https://evil.example.com/', '/\\evil.example.com', '/api/v1/identities', '/auth/oidc/login', 'approvals', '/a\nb', '/.//evil.example.com', '/a/..//evil.example.com', '/%2e%2e//evil.example.com', '/./api/v1/identities']) {
    assert.throws(() => consoleReturnPath(bad), (e: unknown) => e instanceof AppError && e.code === 'invalid_request' && e.message.startsWith('returnTo'), bad);
  }
});
