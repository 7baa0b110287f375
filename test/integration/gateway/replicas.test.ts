/**
 * The gateway on two replicas of one PostgreSQL database: a tier change, a policy change and a revocation
 * made through replica A change the outcome of the next request on replica B within 2 s; a replica that
 * hears no NOTIFY converges through its periodic re-read.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { Replica } from '../../../src/app/server.js';
import { startFakeProviders, type FakeProviders } from '../../fakes/fake-providers.js';
import { ADMIN_TOKEN, agentWithKey, Client, enc, openTestStore, startTestReplica, type TestStore } from '../../helpers/harness.js';
import { anthropic, openai, providersAt } from '../../helpers/gateway.js';
import { postgresReachable, storeKinds } from '../../helpers/stores.js';

/** Retries `attempt` until it stops throwing or 2 s pass; returns the milliseconds it took. */
async function within2s(attempt: () => Promise<unknown>, limitMs = 2000): Promise<number> {
  const start = Date.now();
  for (;;) {
    try {
      await attempt();
      return Date.now() - start;
    } catch (err) {
      if (Date.now() - start > limitMs) throw err;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

const premium = (client: Anthropic) => client.messages.create({ model: 'o3-pro', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] });

describe('gateway on two replicas of one PostgreSQL', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let store: TestStore;
  let fake: FakeProviders;
  let a: Replica;
  let b: Replica;
  let quiet: Replica;
  let adminA: Client;
  let key: string;

  before(async () => {
    store = await openTestStore('postgres');
    fake = await startFakeProviders();
    const providers = providersAt(fake.origin);
    [a, b] = await Promise.all([startTestReplica(store, { providers }), startTestReplica(store, { providers })]);
    quiet = await startTestReplica(
      store,
      { providers, identity: { tierRefreshSeconds: 1 }, gateway: { auditQueue: 1000, rulesRefreshSeconds: 1, hideDeniedTools: false, heldKeepAliveSeconds: 10, mcpAllowedOrigins: [], mcpHeldAnswerSeconds: 45 } },
      { listen: false },
    );
    adminA = new Client(a.url, ADMIN_TOKEN);
    key = await agentWithKey(adminA, 'ops/deployer');
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close(), quiet?.close()]);
    await fake?.close();
    await store?.close();
  });

  test('a tier change through A changes the outcome of the next request on B within 2 s, both ways', async () => {
    const onB = anthropic(b.url, key);
    await assert.rejects(premium(onB), Anthropic.PermissionDeniedError, 'T2 is below the model ceiling');
    assert.equal((await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('ops/deployer')}`, { tier: 'T3' })).status, 200);
    const up = await within2s(() => premium(onB));
    assert.equal((await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('ops/deployer')}`, { tier: 'T1' })).status, 200);
    const down = await within2s(() => assert.rejects(premium(onB), /autonomy-model-ceiling/));
    assert.ok(up <= 2000 && down <= 2000, `took ${up} ms and ${down} ms`);
  });

  test('without NOTIFY, the periodic re-read brings a tier change to a third replica', async () => {
    await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('ops/deployer')}`, { tier: 'T4' });
    await within2s(() => premium(anthropic(quiet.url, key)), 3000);
    await adminA.put(`/api/v1/identities/autonomy-tier?id=${enc('ops/deployer')}`, { tier: 'T1' });
    await within2s(() => assert.rejects(premium(anthropic(quiet.url, key))), 3000);
  });

  test('a policy created through A applies on B within 2 s, and its removal too', async () => {
    const onB = openai(b.url, key);
    const ask = () => onB.chat.completions.create({ model: 'gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] });
    await ask();
    const created = await adminA.post('/api/v1/policies', {
      name: 'freeze-gpt-41',
      kind: 'deny',
      appliesTo: ['llm'],
      match: "object.llm.model.startsWith('gpt-4.1')",
      message: 'GPT-4.1 is frozen during the migration.',
    });
    assert.equal(created.status, 201);
    await within2s(() => assert.rejects(ask(), (err: unknown) => err instanceof OpenAI.PermissionDeniedError && /freeze-gpt-41/.test(err.message)));
    await adminA.delete('/api/v1/policies/freeze-gpt-41');
    await within2s(() => ask());
  });

  test('a key revoked through A is refused on B within 2 s', async () => {
    const other = await agentWithKey(adminA, 'ops/short');
    const onB = openai(b.url, other);
    await onB.models.list();
    const id = (await adminA.get('/api/v1/tokens')).body.items.find((t: any) => t.identityId === 'ops/short').id;
    assert.equal((await adminA.delete(`/api/v1/tokens/${id}`)).status, 200);
    await within2s(() => assert.rejects(onB.models.list(), OpenAI.AuthenticationError));
  });
});
