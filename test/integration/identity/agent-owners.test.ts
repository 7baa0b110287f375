/**
 * Agent owners over HTTP: PUT /api/v1/identities/owners replaces the list (audited identity.owners_set), POST
 * /api/v1/identities takes owners for agents, listings and details carry them for agents only; validation names
 * the field; deleting the agent or a named developer removes the entries.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, enc, startTestReplica } from '../../helpers/harness.js';

describeEachStore('agent owners', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  const putOwners = (id: string, owners: unknown) => admin.put(`/api/v1/identities/owners?id=${enc(id)}`, { owners });

  before(async () => {
    replica = await startTestReplica(store());
    admin = new Client(replica.url, ADMIN_TOKEN);
    await developerWithToken(admin, 'eng/alice', 'developer');
    await developerWithToken(admin, 'eng/bob', 'developer');
    assert.equal((await admin.post('/api/v1/identities', { id: 'eng/bot', kind: 'agent' })).status, 201);
  });
  after(() => replica.close());

  test('PUT replaces the list (deduplicated, sorted), audited; details and listings carry it for agents only', async () => {
    const r = await putOwners('eng/bot', ['eng/bob', 'qa/*', 'eng/alice', 'eng/bob']);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { status: 'ok', id: 'eng/bot', owners: ['eng/alice', 'eng/bob', 'qa/*'] });
    assert.deepEqual((await admin.get(`/api/v1/identities/detail?id=${enc('eng/bot')}`)).body.owners, ['eng/alice', 'eng/bob', 'qa/*']);
    const items = (await admin.get('/api/v1/identities')).body.items;
    assert.deepEqual(items.find((i: any) => i.id === 'eng/bot').owners, ['eng/alice', 'eng/bob', 'qa/*']);
    assert.equal('owners' in items.find((i: any) => i.id === 'eng/alice'), false, 'developers have no owners');
    assert.ok(replica.tiers.isBound('eng/bot', 'eng/alice'));
    assert.ok(replica.tiers.isBound('eng/bot', 'qa/anyone'));
    assert.equal(replica.tiers.isBound('eng/bot', 'ops/someone'), false);

    const replaced = await putOwners('eng/bot', ['eng/alice']);
    assert.deepEqual(replaced.body.owners, ['eng/alice']);
    assert.equal(replica.tiers.isBound('eng/bot', 'eng/bob'), false, 'applied at once on the replica that made the change');
    const audit = (await admin.get('/api/v1/audit-events?action=identity.owners_set')).body.items;
    const last = audit.find((e: any) => e.subject === 'eng/bot' && e.data.newOwners.length === 1);
    assert.deepEqual(last.data, { oldOwners: ['eng/alice', 'eng/bob', 'qa/*'], newOwners: ['eng/alice'] });
    assert.equal(last.actor.id, 'default/admin');
    assert.deepEqual((await putOwners('eng/bot', [])).body.owners, []);
  });

  test('POST creates an agent with owners; owners on a developer is a 400 naming the field', async () => {
    const created = await admin.post('/api/v1/identities', { id: 'eng/team-bot', kind: 'agent', owners: ['eng/*'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.owners, ['eng/*']);
    assert.ok(replica.tiers.isBound('eng/team-bot', 'eng/anyone'));
    const plain = await admin.post('/api/v1/identities', { id: 'eng/plain-bot', kind: 'agent' });
    assert.deepEqual(plain.body.owners, []);
    const dev = await admin.post('/api/v1/identities', { id: 'eng/carl', kind: 'developer', owners: ['eng/*'] });
    assert.equal(dev.status, 400);
    assert.match(dev.body.error.message, /^owners/);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('eng/carl')}`)).status, 404, 'nothing was created');
    const bad = await admin.post('/api/v1/identities', { id: 'eng/bad-bot', kind: 'agent', owners: ['eng/nobody'] });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /owners/);
    assert.equal((await admin.get(`/api/v1/identities/detail?id=${enc('eng/bad-bot')}`)).status, 404, 'nothing was created');
  });

  for (const [what, owners] of [
    ['not an array', 'eng/alice'],
    ['a non-string entry', [1]],
    ['a malformed id', ['Eng/Alice']],
    ['a bare namespace', ['eng']],
    ['a wildcard name', ['eng/a*']],
    ['a global wildcard', ['*']],
    ['an unknown developer', ['eng/nobody']],
    ['an agent identity', ['eng/bot']],
    ['more than 20 entries', Array.from({ length: 21 }, (_, i) => `ns${i}/*`)],
  ] as const) {
    test(`${what} is a 400 naming owners, and the list stays`, async () => {
      await putOwners('eng/bot', ['eng/alice']);
      const r = await putOwners('eng/bot', owners);
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(r.body.error.message, /owners/);
      assert.deepEqual((await admin.get(`/api/v1/identities/detail?id=${enc('eng/bot')}`)).body.owners, ['eng/alice']);
    });
  }

  test('the longest list of the longest ids is announced and applied (it fits a NOTIFY payload)', async () => {
    const long = (ns: string, i: number) => `${ns}/${String(i).padStart(3, '0')}${'n'.repeat(250)}`;
    const ns = 'n'.repeat(63);
    const agent = long(ns, 999);
    assert.equal(agent.length, 317);
    assert.equal((await admin.post('/api/v1/identities', { id: agent, kind: 'agent' })).status, 201);
    const owners = Array.from({ length: 20 }, (_, i) => long(ns, i));
    for (const id of owners) assert.equal((await admin.post('/api/v1/identities', { id, kind: 'developer' })).status, 201);
    const r = await putOwners(agent, owners);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.ok(owners.every((o) => replica.tiers.isBound(agent, o)));
  });

  test('a developer identity: 400 not_an_agent; an unknown agent: 404; missing or malformed id: 400', async () => {
    const dev = await putOwners('eng/alice', ['eng/bob']);
    assert.equal(dev.status, 400);
    assert.equal(dev.body.error.code, 'not_an_agent');
    assert.equal((await putOwners('eng/ghost', ['eng/bob'])).status, 404);
    assert.equal((await admin.put('/api/v1/identities/owners', { owners: [] })).status, 400);
    assert.equal((await admin.put('/api/v1/identities/owners?id=no-slash', { owners: [] })).status, 400);
    const noBody = await admin.put(`/api/v1/identities/owners?id=${enc('eng/bot')}`, {});
    assert.equal(noBody.status, 400);
    assert.match(noBody.body.error.message, /owners/);
  });

  test('deleting an agent removes its owners; deleting a developer removes the entries naming them', async () => {
    await developerWithToken(admin, 'eng/dana', 'developer');
    assert.equal((await admin.post('/api/v1/identities', { id: 'eng/temp-bot', kind: 'agent', owners: ['eng/dana', 'eng/alice'] })).status, 201);
    assert.equal((await admin.delete(`/api/v1/identities?id=${enc('eng/dana')}`)).status, 200);
    assert.deepEqual((await admin.get(`/api/v1/identities/detail?id=${enc('eng/temp-bot')}`)).body.owners, ['eng/alice']);
    assert.equal((await admin.delete(`/api/v1/identities?id=${enc('eng/temp-bot')}`)).status, 200);
    const left = await replica.db.query(`SELECT 1 FROM agent_owners WHERE agent_id = 'eng/temp-bot' OR developer_id = 'eng/dana'`);
    assert.equal(left.rows.length, 0);
    // A new developer with the deleted one's id is not an owner of anything.
    await developerWithToken(admin, 'eng/dana', 'developer');
    assert.equal(replica.tiers.isBound('eng/temp-bot', 'eng/dana'), false);
  });
});
