/**
 * The governed LLM path end to end: real SDK clients -> Reins (credential, tier, policies, audit) -> fake
 * providers. Who the caller is comes from the Reins credential and the Reins headers only.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { FAKE_USAGE } from '../../fakes/fake-providers.js';
import { agentWithKey, Client, describeEachStore, developerWithToken, enc, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { anthropic, llmEvent, openai, PROVIDER_KEY, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

const chat = (model: string, extra: Record<string, unknown> = {}) => ({ model, messages: [{ role: 'user' as const, content: 'hi' }], ...extra });

describeEachStore('gateway: governed calls', ({ store }) => {
  let w: GatewayWorld;
  let agentKey: string;
  let pat: string;
  before(async () => {
    w = await startGatewayWorld(store());
    agentKey = await agentWithKey(w.admin, 'eng/builder');
    pat = await developerWithToken(w.admin, 'eng/alice', 'developer');
    await w.admin.post('/api/v1/identities', { id: 'eng/reviewer-bot', kind: 'agent' });
  });
  after(async () => w.close());

  test('an agent key call is forwarded with the provider key, and audited with tier, tokens and cost', async () => {
    const r = await openai(w.replica.url, agentKey).chat.completions.create(chat('gpt-4o-mini'));
    assert.equal(r.choices[0]?.message.content, 'Hello world');
    const hit = w.fake.hits.at(-1)!;
    assert.equal(hit.headers.authorization, `Bearer ${PROVIDER_KEY}`);
    const event = await llmEvent(w.admin, () => true, `&identity=${enc('eng/builder')}`);
    assert.equal(event.action, 'llm.request');
    assert.equal(event.outcome, 'ok');
    assert.deepEqual(event.actor, { kind: 'agent', id: 'eng/builder' });
    assert.equal(event.subject, 'eng/builder');
    assert.equal(event.data.agent.tier, 'T2');
    assert.equal(event.data.model, 'gpt-4o-mini');
    assert.equal(event.data.route, 'chat/completions');
    assert.equal(event.data.decision, 'allow');
    assert.equal(event.data.session, null);
    assert.deepEqual(event.data.usage, FAKE_USAGE.openaiChat);
    // gpt-4o-mini list price: $0.15 in / $0.60 out per million tokens.
    assert.ok(Math.abs(event.data.costUsd - (11 * 0.15 + 7 * 0.6) / 1e6) < 1e-12, String(event.data.costUsd));
    assert.equal(event.data.status, 200);
    assert.equal(event.host, null);
    // Two events joined by callId: the decision before the call went upstream, the outcome when it was over.
    assert.equal(event.decision.data.usage, undefined, 'the decision event holds no outcome');
    assert.equal(event.decision.callEnded, true);
    assert.equal(event.end.action, 'llm.request_end');
    assert.equal(event.end.data.callId, event.decision.data.callId);
    assert.equal(event.end.subject, 'eng/builder');
    assert.ok(Number(event.end.id) > Number(event.decision.id));
    const both = (await w.admin.get(`/api/v1/audit-events?callId=${event.decision.data.callId}`)).body.items;
    assert.deepEqual(both.map((e: any) => e.action), ['llm.request_end', 'llm.request']);
  });

  test('a streaming call is in the audit log while it streams (its decision), and its end follows when it is over', async () => {
    const abort = new AbortController();
    const r = await fetch(`${w.replica.url}/llm/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${agentKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'slow-stream', stream: true, max_tokens: 41, messages: [{ role: 'user', content: 'hi' }] }),
      signal: abort.signal,
    });
    const reader = r.body!.getReader();
    assert.match(new TextDecoder().decode((await reader.read()).value), /Hel/);
    const decisions = async () =>
      (await w.admin.get(`/api/v1/audit-events?action=llm.request&identity=${enc('eng/builder')}&limit=200`)).body.items.filter((e: any) => e.data.maxTokens === 41);
    let open: any[] = [];
    await waitFor(async () => (open = await decisions()).length > 0, WAIT_MS);
    assert.equal(open.length, 1, 'the decision is recorded while the stream is open');
    assert.equal(open[0].data.end, undefined);
    assert.equal(open[0].callEnded, false, 'no end yet: its outcome is not known');
    abort.abort();
    let ended: any[] = [];
    await waitFor(async () => (ended = (await w.admin.get(`/api/v1/audit-events?callId=${open[0].data.callId}`)).body.items).length === 2, WAIT_MS);
    assert.deepEqual(ended.map((e: any) => e.action), ['llm.request_end', 'llm.request']);
    assert.equal(ended[0].data.end, 'client_aborted');
    assert.equal(ended[1].callEnded, true);
    assert.equal((await decisions()).length, 1, 'still one decision: the end adds none');
  });

  test("the clients' defaults pass at the default tier: Claude Code's model and max_tokens, the AI SDK's 128,000, Codex's unset limit", async () => {
    const dev = anthropic(w.replica.url, pat);
    // The SDK insists on streaming at these limits, as Claude Code does anyway.
    const ask = (model: string, maxTokens: number) => dev.messages.stream({ model, max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] }).finalMessage();
    assert.ok((await ask('claude-opus-4-8', 64_000)).content.length > 0);
    assert.ok((await ask('claude-haiku-4-5-20251001', 32_000)).content.length > 0);
    assert.ok((await ask('claude-sonnet-4-5', 128_000)).content.length > 0);
    const codex = await openai(w.replica.url, pat).responses.create({ model: 'gpt-5.1-codex-max', input: 'hi' });
    assert.ok(codex.id);
  });

  test('the model ceiling refuses a premium model (o3-pro) at T2 and T1 in the client protocol, and allows it at T3', async () => {
    const client = anthropic(w.replica.url, agentKey);
    const ask = () => client.messages.create({ model: 'o3-pro', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    for (const tier of ['', 'T1']) {
      await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier });
      await assert.rejects(ask(), (err: unknown) => {
        assert.ok(err instanceof Anthropic.PermissionDeniedError, String(err));
        assert.match(err.message, /autonomy-model-ceiling/);
        assert.match(err.message, /request model access/);
        assert.equal(err.headers?.get('x-should-retry'), 'false');
        return true;
      });
    }
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier: 'T3' });
    const ok = await ask();
    assert.equal(ok.id, 'msg_fake');
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier: '' });
  });

  test('past audit events keep the tier they were recorded with after the tier changes', async () => {
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier: 'T1' });
    await openai(w.replica.url, agentKey).chat.completions.create(chat('gpt-4o-mini', { max_tokens: 5 }));
    const atT1 = await llmEvent(w.admin, (e) => e.data.maxTokens === 5, `&identity=${enc('eng/builder')}`);
    assert.equal(atT1.data.agent.tier, 'T1');
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier: 'T4' });
    await openai(w.replica.url, agentKey).chat.completions.create(chat('gpt-4o-mini', { max_tokens: 6 }));
    const later = await llmEvent(w.admin, (e) => e.data.maxTokens === 6, `&identity=${enc('eng/builder')}`);
    const earlier = await llmEvent(w.admin, (e) => e.id === atT1.id, `&identity=${enc('eng/builder')}`);
    assert.equal(later.data.agent.tier, 'T4');
    assert.equal(earlier.data.agent.tier, 'T1');
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/builder')}`, { tier: '' });
  });

  test('a personal access token call has the developer and a session: X-Reins-Session when sent, else one per token and day', async () => {
    await openai(w.replica.url, pat, { 'X-Reins-Session': 'claude-session-42' }).chat.completions.create(chat('gpt-4o-mini', { max_tokens: 7 }));
    await openai(w.replica.url, pat).chat.completions.create(chat('gpt-4o-mini', { max_tokens: 8 }));
    const named = await llmEvent(w.admin, (e) => e.data.maxTokens === 7, `&identity=${enc('eng/alice')}`);
    const daily = await llmEvent(w.admin, (e) => e.data.maxTokens === 8, `&identity=${enc('eng/alice')}`);
    assert.equal(named.data.session, 'claude-session-42');
    assert.equal(named.data.developer, 'eng/alice');
    assert.deepEqual(named.actor, { kind: 'developer', id: 'eng/alice' });
    assert.equal(named.data.agent.id, '', 'the tool itself is the agent');
    assert.equal(named.data.agent.tier, 'T2');
    const today = new Date().toISOString().slice(0, 10);
    assert.match(daily.data.session, new RegExp(`^tok_[^:]+:${today}$`));
  });

  test('X-Reins-Agent names the agent (its tier applies); an unknown agent is refused naming the header', async () => {
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/reviewer-bot')}`, { tier: 'T1' });
    assert.equal((await w.admin.put(`/api/v1/identities/owners?id=${enc('eng/reviewer-bot')}`, { owners: ['eng/alice'] })).status, 200);
    const asBot = anthropic(w.replica.url, pat, { 'X-Reins-Agent': 'eng/reviewer-bot' });
    await assert.rejects(
      asBot.messages.create({ model: 'gpt-5-pro', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
      /autonomy-model-ceiling/,
    );
    const refused = await llmEvent(w.admin, (e) => e.data.model === 'gpt-5-pro', `&identity=${enc('eng/reviewer-bot')}`);
    assert.equal(refused.data.agent.tier, 'T1');
    assert.equal(refused.outcome, 'refused');
    assert.equal(refused.data.developer, 'eng/alice');
    assert.equal(refused.data.policy, 'autonomy-model-ceiling');
    assert.equal(refused.end, null, 'refused at once: one event');
    assert.equal(refused.data.end, 'refused');

    const ghost = openai(w.replica.url, pat, { 'X-Reins-Agent': 'eng/ghost' });
    await assert.rejects(ghost.chat.completions.create(chat('gpt-4o-mini')), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError, String(err));
      assert.match(err.message, /X-Reins-Agent/);
      return true;
    });
  });

  test('identity comes from the credential: an unknown or revoked key is refused before anything reaches the provider', async () => {
    const hits = w.fake.hits.length;
    await assert.rejects(openai(w.replica.url, 'reins_agent_not-a-real-key-000000000000').chat.completions.create(chat('gpt-4o-mini')), OpenAI.AuthenticationError);
    const key = await agentWithKey(w.admin, 'eng/short-lived');
    const client = openai(w.replica.url, key);
    await client.chat.completions.create(chat('gpt-4o-mini'));
    const tokens = (await w.admin.get(`/api/v1/tokens`)).body.items.filter((t: any) => t.identityId === 'eng/short-lived');
    assert.equal((await w.admin.delete(`/api/v1/tokens/${tokens[0].id}`)).status, 200);
    await assert.rejects(client.chat.completions.create(chat('gpt-4o-mini')), OpenAI.AuthenticationError);
    assert.equal(w.fake.hits.length, hits + 1);
  });

  test('a custom policy created over the API applies to the next call, and deleting it lifts it', async () => {
    const created = await w.admin.post('/api/v1/policies', {
      name: 'no-embeddings',
      kind: 'deny',
      appliesTo: ['llm'],
      match: "object.llm.route == 'embeddings'",
      message: 'Embeddings go through the search team’s index service.',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const client = openai(w.replica.url, agentKey);
    await assert.rejects(client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.match(err.message, /no-embeddings.*search team/);
      return true;
    });
    assert.equal((await w.admin.delete('/api/v1/policies/no-embeddings')).status, 200);
    const ok = await client.embeddings.create({ model: 'text-embedding-3-small', input: 'x' });
    assert.equal(ok.data.length, 1);
  });

  test('an approve policy parks a generating call until an admin releases it; token counting is never held', async () => {
    await w.admin.post('/api/v1/policies', {
      name: 'review-haiku',
      kind: 'approve',
      appliesTo: ['llm'],
      match: "object.llm.model.startsWith('claude-haiku')",
      message: 'Haiku calls are reviewed this week.',
    });
    const client = anthropic(w.replica.url, agentKey);
    const counted = await client.messages.countTokens({ model: 'claude-haiku-4-5', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(counted.input_tokens, 42);
    const parked = client.messages.create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    let entry: any;
    await waitFor(async () => {
      entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.policyName === 'review-haiku');
      return entry !== undefined;
    }, 5000);
    assert.equal(entry.model, 'claude-haiku-4-5');
    assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
    const answer = await parked;
    assert.equal(answer.id, 'msg_fake');
    await w.admin.delete('/api/v1/policies/review-haiku');
  });

  test('disabling a built-in policy lifts it; it cannot be deleted', async () => {
    const current = (await w.admin.get('/api/v1/policies/autonomy-model-ceiling')).body;
    assert.equal((await w.admin.delete('/api/v1/policies/autonomy-model-ceiling')).status, 409);
    const off = await w.admin.put('/api/v1/policies/autonomy-model-ceiling', { ...current, enabled: false });
    assert.equal(off.status, 200, JSON.stringify(off.body));
    const ok = await anthropic(w.replica.url, agentKey).messages.create({ model: 'o3-pro', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(ok.id, 'msg_fake');
    await w.admin.put('/api/v1/policies/autonomy-model-ceiling', { ...current, enabled: true });
  });

  test('metrics count governed calls by provider, outcome and refusal reason', async () => {
    const text = (await w.admin.get('/metrics', { token: null })).body as string;
    assert.match(text, /reins_gateway_requests_total\{provider="openai",outcome="ok",reason=""\} \d+/);
    assert.match(text, /reins_gateway_requests_total\{provider="anthropic",outcome="refused",reason="policy"\} \d+/);
    assert.match(text, /reins_audit_queue_events \d+/);
  });

  test('the control plane refuses gateway-only credentials and the gateway refuses sensor tokens', async () => {
    assert.equal((await new Client(w.replica.url, agentKey).get('/api/v1/policies')).status, 403);
    const sensor = (await w.admin.post('/api/v1/runtime/sensor-tokens', { name: 'node-a' })).body.token as string;
    await assert.rejects(openai(w.replica.url, sensor).chat.completions.create(chat('gpt-4o-mini')), OpenAI.AuthenticationError);
  });
});
