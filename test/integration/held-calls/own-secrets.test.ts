/**
 * Reins' own secrets (the bootstrap admin secret, the configured provider keys) never reach a held call's prompt
 * excerpt nor the audit log, whatever their format: the test provider key (`sk-provider-key-held-by-reins`) and
 * the bootstrap admin secret look like no known credential format, so only their exact text gives them away.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { agentWithKey, ADMIN_TOKEN, describeEachStore, waitFor } from '../../helpers/harness.js';
import { openai, PROVIDER_KEY, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

describeEachStore("held calls and Reins' own secrets", ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  before(async () => {
    w = await startGatewayWorld(store());
    key = await agentWithKey(w.admin, 'eng/leaky-bot');
    const created = await w.admin.post('/api/v1/policies', {
      name: 'review-everything',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model == 'gpt-4o'",
      message: 'Reviewed.',
    });
    assert.equal(created.status, 201);
  });
  after(async () => w.close());

  test('a held prompt holding the provider key and the bootstrap admin secret shows neither, in the entry or the audit log', async () => {
    const content = `own secrets: provider ${PROVIDER_KEY}, admin ${ADMIN_TOKEN}, "key": "${PROVIDER_KEY}".`;
    const call = openai(w.replica.url, key).chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] });
    let entry: { id: string; promptExcerpt: string } | undefined;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: { agentId: string }) => e.agentId === 'eng/leaky-bot');
      return entry !== undefined;
    }, 60_000);
    assert.ok(entry, 'the call was held');
    const one = (await w.admin.get(`/api/v1/held-calls/${entry.id}`)).body;
    // Released before any assertion, so that a failing one leaves no call waiting on a decision.
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
    await call;
    assert.equal(
      entry.promptExcerpt,
      'own secrets: provider [REDACTED:reins-secret], admin [REDACTED:reins-secret], "key": "[REDACTED:reins-secret]".',
    );
    assert.equal(one.promptExcerpt, entry.promptExcerpt);

    // Every audit event of the call (held, approved, completed) once written, all of it as JSON.
    let events: unknown[] = [];
    await waitFor(async () => {
      events = (await w.admin.get('/api/v1/audit-events?limit=200')).body.items;
      return events.some((e) => (e as { type: string; subject: string }).type === 'llm' && (e as { subject: string }).subject === 'eng/leaky-bot');
    }, 60_000);
    const text = JSON.stringify(events);
    assert.ok(text.includes('eng/leaky-bot'), 'the call was audited');
    assert.ok(!text.includes(PROVIDER_KEY), 'the provider key is in the audit log');
    assert.ok(!text.includes(ADMIN_TOKEN), 'the bootstrap admin secret is in the audit log');
  });
});
