/** Every row of the spec's autonomy-tier state table, through HTTP, plus docs/api.md's 400/404 cases. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, enc } from '../../helpers/harness.js';
import { startTestReplica } from '../../helpers/harness.js';

describeEachStore('autonomy tier', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let n = 0;
  const newAgent = async (): Promise<string> => {
    const id = `eng/agent-${++n}`;
    const r = await admin.post('/api/v1/identities', { id, kind: 'agent' });
    assert.equal(r.status, 201);
    return id;
  };
  const putTier = (id: string, tier: unknown, client = admin) => client.put(`/api/v1/identities/autonomy-tier?id=${enc(id)}`, { tier });

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
  });
  after(() => replica.close());

  test('a new agent has no explicit tier and resolves to T2', async () => {
    const id = await newAgent();
    const detail = await admin.get(`/api/v1/identities/detail?id=${enc(id)}`);
    assert.equal(detail.body.autonomyTier, '');
    assert.equal(detail.body.effectiveTier, 'T2');
    assert.deepEqual(replica.tiers.resolve(id), { autonomyTier: 'T2', autonomyLevel: 2, explicit: false });
  });

  for (const [tier, level] of [['T1', 1], ['T2', 2], ['T3', 3], ['T4', 4]] as const) {
    test(`no explicit tier -> PUT ${tier} by an admin -> ${tier}`, async () => {
      const id = await newAgent();
      const r = await putTier(id, tier);
      assert.equal(r.status, 200);
      assert.deepEqual(r.body, { status: 'ok', tier, effectiveTier: tier });
      assert.deepEqual(replica.tiers.resolve(id), { autonomyTier: tier, autonomyLevel: level, explicit: true });
      assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc(id)}`)).body.autonomyTier, tier);
    });
  }

  test('any explicit tier -> PUT "" by an admin -> no explicit tier (resolves T2)', async () => {
    const id = await newAgent();
    await putTier(id, 'T4');
    const r = await putTier(id, '');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body, { status: 'ok', tier: '', effectiveTier: 'T2' });
    assert.deepEqual(replica.tiers.resolve(id), { autonomyTier: 'T2', autonomyLevel: 2, explicit: false });
    const listed = (await admin.get('/api/v1/identities?kind=agent')).body.items.find((i: { id: string }) => i.id === id);
    assert.equal(listed.autonomyTier, '');
    assert.equal(listed.effectiveTier, 'T2');
  });

  test('an explicit T2 is still an assignment, distinct from the default', async () => {
    const id = await newAgent();
    await putTier(id, 'T2');
    assert.equal(replica.tiers.resolve(id)?.explicit, true);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc(id)}`)).body.autonomyTier, 'T2');
  });

  test('any explicit tier -> PUT another tier by an admin -> that tier', async () => {
    const id = await newAgent();
    await putTier(id, 'T1');
    const r = await putTier(id, 'T3');
    assert.deepEqual(r.body, { status: 'ok', tier: 'T3', effectiveTier: 'T3' });
    assert.equal(replica.tiers.resolve(id)?.autonomyTier, 'T3');
  });

  test('clearing an agent that has no tier is accepted and stays unassigned', async () => {
    const id = await newAgent();
    const r = await putTier(id, '');
    assert.deepEqual(r.body, { status: 'ok', tier: '', effectiveTier: 'T2' });
  });

  test('viewers and developers cannot set a tier, and the tier stays', async () => {
    const id = await newAgent();
    await putTier(id, 'T1');
    const viewer = admin.with(await developerWithToken(admin, `ops/viewer-${n}`, 'viewer'));
    const dev = admin.with(await developerWithToken(admin, `eng/dev-${n}`, 'developer'));
    assert.equal((await putTier(id, 'T4', viewer)).status, 403);
    assert.equal((await putTier(id, 'T4', dev)).status, 403);
    assert.equal((await putTier(id, 'T4', admin.with(null))).status, 401);
    assert.equal(replica.tiers.resolve(id)?.autonomyTier, 'T1');
  });

  for (const bad of ['T0', 'T5', 't1', ' T1', 'T1 ', 'high', 'null']) {
    test(`tier ${JSON.stringify(bad)} is refused with 400 invalid_tier`, async () => {
      const id = await newAgent();
      const r = await putTier(id, bad);
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, 'invalid_tier');
      assert.match(r.body.error.message, /tier/);
    });
  }

  for (const bad of [null, 1, true, ['T1'], { t: 'T1' }]) {
    test(`a non-string tier ${JSON.stringify(bad)} is a 400 invalid_tier, as a wrong string is`, async () => {
      const id = await newAgent();
      const r = await putTier(id, bad);
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, 'invalid_tier');
      assert.match(r.body.error.message, /^tier:/);
    });
  }

  test('a body without tier is a 400 naming the field', async () => {
    const id = await newAgent();
    const r = await admin.put(`/api/v1/identities/autonomy-tier?id=${enc(id)}`, {});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /body\.tier: is required/);
  });

  test('a developer identity has no tier: 400 not_an_agent', async () => {
    await developerWithToken(admin, 'eng/not-an-agent', 'developer');
    const r = await putTier('eng/not-an-agent', 'T1');
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'not_an_agent');
  });

  test('an unknown id is 404; a missing id is 400; a malformed id is 400', async () => {
    assert.equal((await putTier('eng/nobody', 'T1')).status, 404);
    const missing = await admin.put('/api/v1/identities/autonomy-tier', { tier: 'T1' });
    assert.equal(missing.status, 400);
    assert.match(missing.body.error.message, /id/);
    const malformed = await putTier('no-slash', 'T1');
    assert.equal(malformed.status, 400);
    assert.equal(malformed.body.error.code, 'invalid_identity_id');
  });

  test('the id travels URL-encoded in the query, never as a path segment', async () => {
    const id = await newAgent();
    const r = await admin.put(`/api/v1/identities/autonomy-tier/${id}`, { tier: 'T1' });
    assert.equal(r.status, 404);
    assert.equal((await admin.put(`/api/v1/identities/autonomy-tier?id=${id}`, { tier: 'T1' })).status, 200, 'an unencoded slash still parses');
  });

  test('each change is audited with actor, old and new tier; past events keep their values', async () => {
    const id = await newAgent();
    await putTier(id, 'T1');
    await putTier(id, 'T4');
    await putTier(id, '');
    const events = (await admin.get(`/api/v1/audit-events?action=identity.tier_set&identity=${enc(id)}`)).body.items;
    assert.deepEqual(
      events.map((e: { data: { oldTier: string; newTier: string } }) => [e.data.oldTier, e.data.newTier]),
      [['T4', ''], ['T1', 'T4'], ['', 'T1']],
    );
    for (const e of events) assert.deepEqual(e.actor, { kind: 'developer', id: 'default/admin' });
    assert.equal(events[0].data.effectiveTier, 'T2');
  });
});
