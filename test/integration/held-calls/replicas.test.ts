/**
 * Held calls across two replicas of one PostgreSQL: parked on A, released or denied on B (A's caller wakes on the
 * decision's NOTIFY), and an entry of a replica that died is stopped by the other once its heartbeat lapses.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import type { Replica } from '../../../src/app/server.js';
import { startFakeProviders, type FakeProviders } from '../../fakes/fake-providers.js';
import { ADMIN_TOKEN, agentWithKey, Client, openTestStore, startTestReplica, waitFor, type TestStore, WAIT_MS } from '../../helpers/harness.js';
import { openai, providersAt } from '../../helpers/gateway.js';
import { postgresReachable, storeKinds } from '../../helpers/stores.js';

describe('held calls on two replicas of one PostgreSQL', { skip: !storeKinds().includes('postgres') }, async () => {
  if (!(await postgresReachable())) return;
  let store: TestStore;
  let fake: FakeProviders;
  let a: Replica;
  let b: Replica;
  let adminB: Client;
  let key: string;
  before(async () => {
    store = await openTestStore('postgres');
    fake = await startFakeProviders();
    [a, b] = await Promise.all([startTestReplica(store, { providers: providersAt(fake.origin) }), startTestReplica(store, { providers: providersAt(fake.origin) })]);
    adminB = new Client(b.url, ADMIN_TOKEN);
    key = await agentWithKey(adminB, 'eng/far-bot');
    await adminB.post('/api/v1/policies', { name: 'review-all-4o', kind: 'approve', appliesTo: ['llm'], match: "object.llm.model == 'gpt-4o'", message: 'Reviewed.' });
    await waitFor(() => a.gateway.policies.policies.some((p) => p.policy.name === 'review-all-4o'), WAIT_MS);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await fake?.close();
    await store?.close();
  });

  const parkOnA = (content: string) => openai(a.url, key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
  async function pending(content: string): Promise<any> {
    let entry: any;
    await waitFor(async () => {
      entry = (await adminB.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.promptExcerpt === content);
      return entry !== undefined;
    }, 5000);
    return entry;
  }

  // The release-latency target (p99 under 200 ms) is measured by bench/held-calls on a quiet machine; here the
  // point is the mechanism: B's decision wakes A through NOTIFY, not A's periodic re-check (every 5 s).
  test('parked on A, released on B: A\'s caller completes on the decision\'s notification', async () => {
    const latencies: number[] = [];
    for (let i = 0; i < 10; i++) {
      let done = 0;
      const call = parkOnA(`cross ${i}`).then((r) => {
        done = performance.now();
        return r;
      });
      const entry = await pending(`cross ${i}`);
      const decided = performance.now();
      assert.equal((await adminB.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
      await call;
      latencies.push(done - decided);
    }
    latencies.sort((x, y) => x - y);
    assert.ok(latencies.at(-1)! < 2500, `release latencies ${latencies.map((l) => l.toFixed(0)).join(', ')} ms`);
  });

  test('parked on A, denied on B: A\'s caller gets the note', async () => {
    const call = parkOnA('cross deny');
    call.catch(() => undefined);
    const entry = await pending('cross deny');
    await adminB.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'from B' });
    await assert.rejects(call, (err: unknown) => err instanceof OpenAI.PermissionDeniedError && /"from B"/.test(err.message));
  });

  test('an entry of a replica that died (no heartbeat) is stopped by the other, with a reason, and audited', async () => {
    await b.db.query(
      `INSERT INTO held_calls (id, kind, state, agent_id, policy_name, policy_message, dedupe_key, replica_id, expires_at)
       VALUES ('hc_orphan_1', 'llm', 'pending', 'eng/far-bot', 'review-all-4o', 'Reviewed.', 'orphan-key-1', 'r_dead_replica', now() + interval '5 minutes')`,
    );
    await b.gateway.held.resolveOrphans();
    const entry = (await adminB.get('/api/v1/held-calls/hc_orphan_1')).body;
    assert.equal(entry.state, 'stopped');
    assert.match(entry.note, /replica holding this call stopped/);
    const audit = (await adminB.get('/api/v1/audit-events?action=held_call.orphaned')).body.items;
    assert.ok(audit.some((e: any) => e.data.heldCallId === 'hc_orphan_1'));
  });
});
