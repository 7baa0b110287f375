/**
 * Tier propagation across replicas: two server instances on one PostgreSQL database. A tier set through
 * one is in the other's cache within 2 s (NOTIFY), and the periodic re-read converges when NOTIFY is not
 * delivered. Also: replicas starting together bootstrap one admin and apply each migration once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { listMigrations } from '../../../src/store/migrate.js';
import { ADMIN_TOKEN, Client, enc, openTestStore, startTestReplica, waitFor, type TestStore, WAIT_MS } from '../../helpers/harness.js';
import { postgresReachable, storeKinds } from '../../helpers/stores.js';

describe('two replicas on one PostgreSQL', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let store: TestStore;
  let a: Replica;
  let b: Replica;
  let quiet: Replica;
  let adminA: Client;

  before(async () => {
    store = await openTestStore('postgres');
    // Started together: migrations and the bootstrap admin must still happen exactly once.
    [a, b] = await Promise.all([startTestReplica(store), startTestReplica(store)]);
    // A replica that never hears NOTIFY and re-reads every second: only the periodic re-read can update it.
    quiet = await startTestReplica(store, { identity: { tierRefreshSeconds: 1 } }, { listen: false });
    adminA = new Client(a.url, ADMIN_TOKEN);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close(), quiet?.close()]);
    await store?.close();
  });

  test('replicas started together bootstrap exactly one admin and apply migrations once', async () => {
    const admins = await a.db.query<{ id: string }>(`SELECT id FROM identities WHERE role = 'admin'`);
    assert.deepEqual(admins.rows.map((r) => r.id), ['default/admin']);
    const tokens = await a.db.query(`SELECT id FROM tokens WHERE name = 'bootstrap'`);
    assert.equal(tokens.rows.length, 1);
    const applied = await a.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
    assert.deepEqual(applied.rows.map((r) => r.version), listMigrations().map((m) => m.version));
  });

  test('a tier set through replica A is in replica B\'s cache within 2 s', async () => {
    await adminA.post('/api/v1/identities', { id: 'eng/fleet', kind: 'agent' });
    for (const tier of ['T4', 'T1', ''] as const) {
      const r = await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/fleet')}`, { tier });
      assert.equal(r.status, 200);
      const expected = tier || 'T2';
      const elapsed = await waitFor(() => b.tiers.resolve('eng/fleet')?.autonomyTier === expected && b.tiers.resolve('eng/fleet')?.explicit === (tier !== ''), WAIT_MS, 5);
      assert.ok(elapsed >= 0, `replica B did not see ${expected} within ${WAIT_MS / 1000} s`);
    }
  });

  test('without NOTIFY, the periodic re-read brings the change', async () => {
    await adminA.post('/api/v1/identities', { id: 'eng/quiet', kind: 'agent' });
    await waitFor(() => quiet.tiers.resolve('eng/quiet') !== null, WAIT_MS);
    const before = quiet.tiers.lastReloadAt;
    await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/quiet')}`, { tier: 'T3' });
    const elapsed = await waitFor(() => quiet.tiers.resolve('eng/quiet')?.autonomyTier === 'T3', WAIT_MS, 20);
    assert.ok(elapsed >= 0, 'the re-read did not pick up the change');
    assert.ok(quiet.tiers.lastReloadAt > before, 'the change arrived by a re-read, not by NOTIFY');
  });

  test('a deleted agent disappears from the other replica\'s cache', async () => {
    await adminA.post('/api/v1/identities', { id: 'eng/gone', kind: 'agent' });
    assert.ok((await waitFor(() => b.tiers.resolve('eng/gone') !== null, WAIT_MS)) >= 0);
    await adminA.delete(`/api/v1/identities?id=${enc('eng/gone')}`);
    assert.ok((await waitFor(() => b.tiers.resolve('eng/gone') === null, WAIT_MS)) >= 0);
  });

  test('owners set through A bind on B at once (NOTIFY) and on a replica without NOTIFY by its re-read; a deleted developer unbinds', async () => {
    await adminA.post('/api/v1/identities', { id: 'eng/owned', kind: 'agent' });
    await adminA.post('/api/v1/identities', { id: 'eng/olga', kind: 'developer' });
    assert.equal((await adminA.put(`/api/v1/identities/owners?id=${enc('eng/owned')}`, { owners: ['eng/olga', 'qa/*'] })).status, 200);
    for (const replica of [b, quiet]) {
      const seen = await waitFor(() => replica.tiers.isBound('eng/owned', 'eng/olga') && replica.tiers.isBound('eng/owned', 'qa/anyone'), WAIT_MS, 10);
      assert.ok(seen >= 0, 'the binding did not arrive');
    }
    assert.equal(b.tiers.isBound('eng/owned', 'eng/other'), false);
    assert.equal((await adminA.delete(`/api/v1/identities?id=${enc('eng/olga')}`)).status, 200);
    for (const replica of [b, quiet]) {
      const gone = await waitFor(() => !replica.tiers.isBound('eng/owned', 'eng/olga'), WAIT_MS, 10);
      assert.ok(gone >= 0, 'the deleted developer still counts');
    }
    assert.ok(b.tiers.isBound('eng/owned', 'qa/anyone'));
  });

  test('a token revoked through A is refused by B on the next request', async () => {
    const adminB = new Client(b.url, ADMIN_TOKEN);
    await adminA.post('/api/v1/identities', { id: 'eng/rev', kind: 'developer', role: 'viewer' });
    const minted = await adminA.post('/api/v1/tokens', { identityId: 'eng/rev', name: 't' });
    assert.equal((await adminB.with(minted.body.token).get('/api/v1/identities')).status, 200);
    assert.equal((await adminA.delete(`/api/v1/tokens/${minted.body.id}`)).status, 200);
    assert.equal((await adminB.with(minted.body.token).get('/api/v1/identities')).status, 401);
  });

  test('concurrent tier changes through both replicas leave every cache on the last committed value', async () => {
    await adminA.post('/api/v1/identities', { id: 'eng/race', kind: 'agent' });
    const adminB = new Client(b.url, ADMIN_TOKEN);
    const tiers = ['T1', 'T2', 'T3', 'T4'];
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? adminA : adminB).put(`/api/v1/identities/autonomy-tier?id=${enc('eng/race')}`, { tier: tiers[i % 4] })),
    );
    const stored = await a.db.query<{ autonomy_tier: string }>('SELECT autonomy_tier FROM identities WHERE id = $1', ['eng/race']);
    const final = stored.rows[0]!.autonomy_tier;
    for (const r of [a, b]) {
      assert.ok((await waitFor(() => r.tiers.resolve('eng/race')?.autonomyTier === final, WAIT_MS)) >= 0, 'cache diverged from the store');
    }
  });
});
