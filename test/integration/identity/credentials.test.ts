/** Tokens (shown once, stored hashed, expiry, revocation at once) and console sessions (cookie, CSRF). */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { adminWithToken, ADMIN_TOKEN, Client, describeEachStore, developerWithToken, startTestReplica, waitFor, WAIT_MS } from '../../helpers/harness.js';

describeEachStore('credentials and console sessions', ({ store }) => {
  let replica: Replica;
  let admin: Client;

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    await admin.post('/api/v1/identities', { id: 'eng/bot', kind: 'agent' });
  });
  after(() => replica.close());

  test('a minted secret is shown once and stored only as its hash', async () => {
    const token = await developerWithToken(admin, 'eng/alice', 'developer');
    assert.match(token, /^reins_pat_[A-Za-z0-9_-]{43}$/);
    const listed = (await admin.get('/api/v1/tokens?identityId=eng/alice')).body.items;
    assert.equal(listed.length, 1);
    assert.equal(JSON.stringify(listed).includes(token), false, 'listing never shows the secret');
    assert.equal(listed[0].prefix, token.slice(0, 14));
    const rows = await replica.db.query<{ secret_hash: string }>('SELECT secret_hash FROM tokens WHERE identity_id = $1', ['eng/alice']);
    assert.equal(rows.rows[0]!.secret_hash, createHash('sha256').update(token).digest('hex'));
    const all = await replica.db.query<{ t: string }>('SELECT row_to_json(tokens)::text AS t FROM tokens');
    assert.equal(all.rows.some((r) => r.t.includes(token)), false);
  });

  test('a token records when it was last used', async () => {
    const token = await developerWithToken(admin, 'eng/used', 'viewer');
    const before = (await admin.get('/api/v1/tokens?identityId=eng/used')).body.items[0];
    assert.equal(before.lastUsedAt, null);
    await admin.with(token).get('/api/v1/identities');
    const seen = await waitFor(async () => (await admin.get('/api/v1/tokens?identityId=eng/used')).body.items[0].lastUsedAt !== null, WAIT_MS, 20);
    assert.ok(seen >= 0);
  });

  test('an agent identity gets an agent key, which cannot call the control plane', async () => {
    const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/bot', name: 'ci' });
    assert.equal(minted.status, 201);
    assert.equal(minted.body.kind, 'agent');
    assert.match(minted.body.token, /^reins_agent_/);
    const r = await admin.with(minted.body.token).get('/api/v1/auth/me');
    assert.equal(r.status, 403);
  });

  test('revocation takes effect on the very next request', async () => {
    const token = await developerWithToken(admin, 'eng/bob', 'viewer');
    const bob = admin.with(token);
    assert.equal((await bob.get('/api/v1/identities')).status, 200);
    const id = (await admin.get('/api/v1/tokens?identityId=eng/bob')).body.items[0].id;
    const revoked = await admin.delete(`/api/v1/tokens/${id}`);
    assert.equal(revoked.status, 200);
    assert.ok(revoked.body.revokedAt);
    assert.equal((await bob.get('/api/v1/identities')).status, 401);
    const again = await admin.delete(`/api/v1/tokens/${id}`);
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'already_revoked');
  });

  test('a developer revokes their own token but not someone else\'s', async () => {
    const token = await developerWithToken(admin, 'eng/carol', 'developer');
    const carol = admin.with(token);
    const second = await carol.post('/api/v1/tokens', { identityId: 'eng/carol', name: 'laptop' });
    assert.equal(second.status, 201);
    const adminTokens = (await admin.get('/api/v1/tokens?identityId=default/admin')).body.items;
    assert.equal((await carol.delete(`/api/v1/tokens/${adminTokens[0].id}`)).status, 404);
    assert.equal((await carol.delete(`/api/v1/tokens/${second.body.id}`)).status, 200);
    assert.equal((await admin.with(second.body.token).get('/api/v1/auth/me')).status, 401);
    assert.equal((await carol.get('/api/v1/auth/me')).status, 200);
  });

  test('an expired token is refused', async () => {
    await admin.post('/api/v1/identities', { id: 'eng/dora', kind: 'developer', role: 'viewer' });
    const soon = new Date(Date.now() + 1500).toISOString();
    const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/dora', name: 'short', expiresAt: soon });
    assert.equal(minted.status, 201);
    const dora = admin.with(minted.body.token);
    assert.equal((await dora.get('/api/v1/identities')).status, 200);
    assert.ok((await waitFor(async () => (await dora.get('/api/v1/identities')).status === 401, WAIT_MS, 100)) >= 0);
  });

  test('expiry must be a future ISO date', async () => {
    const past = await admin.post('/api/v1/tokens', { identityId: 'eng/bot', name: 'x', expiresAt: '2001-01-01T00:00:00Z' });
    assert.equal(past.status, 400);
    assert.match(past.body.error.message, /expiresAt/);
    const junk = await admin.post('/api/v1/tokens', { identityId: 'eng/bot', name: 'x', expiresAt: 'tomorrow' });
    assert.equal(junk.status, 400);
    assert.match(junk.body.error.message, /expiresAt/);
  });

  test('token mint and revoke are audited without the secret', async () => {
    const minted = await admin.post('/api/v1/tokens', { identityId: 'eng/bot', name: 'audited' });
    await admin.delete(`/api/v1/tokens/${minted.body.id}`);
    const events = (await admin.get('/api/v1/audit-events?identity=eng/bot&type=control')).body.items;
    const actions = events.filter((e: { data: { tokenId?: string } }) => e.data.tokenId === minted.body.id).map((e: { action: string }) => e.action);
    assert.deepEqual(actions, ['token.revoke', 'token.create']);
    assert.equal(JSON.stringify(events).includes(minted.body.token), false);
  });

  test('console sign-in sets an HttpOnly SameSite=Strict cookie; state changes need the CSRF header', async () => {
    const token = await adminWithToken(replica.db, 'ops/erin');
    const signIn = await admin.with(null).post('/api/v1/auth/session', { token });
    assert.equal(signIn.status, 200);
    const setCookie = signIn.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^reins_session=reins_sess_[^;]+/);
    assert.match(setCookie, /HttpOnly/i);
    assert.match(setCookie, /SameSite=Strict/i);
    const cookie = setCookie.split(';')[0]!;
    const csrf = signIn.body.csrfToken as string;
    const viaCookie = admin.with(null);

    const me = await viaCookie.get('/api/v1/auth/me', { headers: { cookie } });
    assert.equal(me.status, 200);
    assert.deepEqual({ id: me.body.id, role: me.body.role, via: me.body.via, csrf: me.body.csrfToken }, { id: 'ops/erin', role: 'admin', via: 'session', csrf });

    await admin.post('/api/v1/identities', { id: 'eng/csrf-target', kind: 'agent' });
    const path = `/api/v1/identities/autonomy-tier?id=${encodeURIComponent('eng/csrf-target')}`;
    const without = await viaCookie.put(path, { tier: 'T1' }, { headers: { cookie } });
    assert.equal(without.status, 403);
    assert.equal(without.body.error.code, 'csrf_required');
    const wrong = await viaCookie.put(path, { tier: 'T1' }, { headers: { cookie, 'x-csrf-token': 'nope' } });
    assert.equal(wrong.status, 403);
    const right = await viaCookie.put(path, { tier: 'T1' }, { headers: { cookie, 'x-csrf-token': csrf } });
    assert.equal(right.status, 200);

    const out = await viaCookie.delete('/api/v1/auth/session', { headers: { cookie, 'x-csrf-token': csrf } });
    assert.equal(out.status, 200);
    assert.match(out.headers.get('set-cookie') ?? '', /reins_session=;/);
    assert.equal((await viaCookie.get('/api/v1/auth/me', { headers: { cookie } })).status, 401);

    const actions = (await admin.get('/api/v1/audit-events?identity=ops/erin')).body.items.map((e: { action: string }) => e.action);
    assert.ok(actions.includes('session.create') && actions.includes('session.end'));
  });

  test('revoking the token that signed in ends its console sessions', async () => {
    const token = await developerWithToken(admin, 'ops/finn', 'viewer');
    const signIn = await admin.with(null).post('/api/v1/auth/session', { token });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    assert.equal((await admin.with(null).get('/api/v1/identities', { headers: { cookie } })).status, 200);
    const id = (await admin.get('/api/v1/tokens?identityId=ops/finn')).body.items[0].id;
    await admin.delete(`/api/v1/tokens/${id}`);
    assert.equal((await admin.with(null).get('/api/v1/identities', { headers: { cookie } })).status, 401);
  });

  test('a failed sign-in is audited as refused (auth.failed, aggregated per address)', async () => {
    const r = await admin.with(null).post('/api/v1/auth/session', { token: 'reins_pat_not-a-real-token-000000000' });
    assert.equal(r.status, 401);
    let events: { outcome: string; data: { plane?: string } }[] = [];
    const found = await waitFor(async () => {
      events = (await admin.get('/api/v1/audit-events?action=auth.failed')).body.items;
      return events.some((e) => e.outcome === 'refused');
    }, 5000);
    assert.notEqual(found, -1, 'the failure is audited');
  });

  test('the last admin cannot be deleted', async () => {
    const r = await admin.get('/api/v1/identities?kind=developer');
    const others = r.body.items.filter((i: { role: string; id: string }) => i.role === 'admin' && i.id !== 'default/admin');
    for (const other of others) assert.equal((await admin.delete(`/api/v1/identities?id=${encodeURIComponent(other.id)}`)).status, 200);
    const last = await admin.delete(`/api/v1/identities?id=${encodeURIComponent('default/admin')}`);
    assert.equal(last.status, 409);
    assert.match(last.body.error.message, /last admin/);
    assert.equal((await admin.get('/api/v1/auth/me')).status, 200);
  });
});
