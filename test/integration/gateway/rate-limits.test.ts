/**
 * Rate limits end to end: the routes, enforcement per identity on two replicas of one store (exact under 20
 * concurrent callers), the 429 with retry-after in each protocol's shape (the one refusal a client should retry: no
 * x-should-retry), tokens counted when the answer reports them, and the audit of every refusal.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { BedrockRuntimeClient, ConverseCommand, ThrottlingException } from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import OpenAI from 'openai';
import type { Replica } from '../../../src/app/server.js';
import { startFakeProviders, type FakeProviders } from '../../fakes/fake-providers.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, startTestReplica, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { llmEvent, providersAt } from '../../helpers/gateway.js';

const chat = (model: string, maxTokens: number) => ({ model, max_tokens: maxTokens, messages: [{ role: 'user' as const, content: 'hi' }] });

/** Counters are per UTC minute: a test that needs its calls in one minute starts with at least 20 s of it left. */
async function freshMinute(): Promise<void> {
  const left = () => 60 - new Date().getUTCSeconds();
  if (left() >= 20) return;
  await waitFor(() => left() >= 40, WAIT_MS, 100);
}

describeEachStore('gateway: rate limits', ({ store }) => {
  let fake: FakeProviders;
  let a: Replica;
  let b: Replica;
  let admin: Client;
  const limits: string[] = [];

  before(async () => {
    fake = await startFakeProviders({ delayMs: 30 });
    const providers = {
      ...providersAt(fake.origin),
      gemini: { kind: 'gemini' as const, baseUrl: fake.origin, apiKey: 'g-key' },
      vllm: { kind: 'openai-compatible' as const, baseUrl: fake.origin },
    };
    a = await startTestReplica(store(), { providers });
    b = await startTestReplica(store(), { providers });
    admin = new Client(a.url, ADMIN_TOKEN);
  });
  after(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await fake?.close();
  });

  async function limit(body: Record<string, unknown>): Promise<string> {
    const r = await admin.post('/api/v1/rate-limits', body);
    assert.equal(r.status, 201, JSON.stringify(r.body));
    limits.push(r.body.id);
    return r.body.id;
  }

  test('the routes: create, read, replace, delete; bad input is a 400 naming the field', async () => {
    const id = await limit({ name: 'crud', scope: 'crud', pattern: 'gpt-*', requestsPerMinute: 10 });
    const one = await admin.get(`/api/v1/rate-limits/${id}`);
    assert.deepEqual({ ...one.body, createdAt: undefined, updatedAt: undefined }, { id, name: 'crud', scope: 'crud', pattern: 'gpt-*', upstream: '*', requestsPerMinute: 10, createdAt: undefined, updatedAt: undefined });
    const replaced = await admin.put(`/api/v1/rate-limits/${id}`, { name: 'crud', scope: 'crud', pattern: 'gpt-*', upstream: 'openai', tokensPerMinute: 1000 });
    assert.equal(replaced.status, 200);
    assert.equal(replaced.body.tokensPerMinute, 1000);
    assert.equal(replaced.body.requestsPerMinute, undefined);
    assert.ok((await admin.get('/api/v1/rate-limits')).body.items.some((r: any) => r.id === id));
    const bad: Array<[Record<string, unknown>, string]> = [
      [{ name: 'x', scope: 'Not A Scope', pattern: '*', requestsPerMinute: 1 }, 'body.scope'],
      [{ name: 'x', scope: '*', pattern: '*', upstream: 'Bad Upstream', requestsPerMinute: 1 }, 'body.upstream'],
      // Well formed, but no upstream of that name is configured: a rule that would never bind.
      [{ name: 'x', scope: '*', pattern: '*', upstream: 'vlm', requestsPerMinute: 1 }, 'body.upstream'],
      [{ name: 'x', scope: '*', pattern: '*' }, 'body.requestsPerMinute'],
      [{ name: 'x', scope: '*', pattern: '*', tokensPerMinute: -1 }, 'body.tokensPerMinute'],
    ];
    for (const [body, field] of bad) {
      const r = await admin.post('/api/v1/rate-limits', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.match(r.body.error.message, new RegExp(field.replace('.', '\\.')), JSON.stringify(r.body));
    }
    assert.equal((await admin.delete(`/api/v1/rate-limits/${id}`)).status, 200);
    assert.equal((await admin.get(`/api/v1/rate-limits/${id}`)).status, 404);
    const audited = (await admin.get('/api/v1/audit-events?type=control&limit=50')).body.items.map((e: any) => e.action);
    for (const action of ['rate_limit.create', 'rate_limit.update', 'rate_limit.delete']) assert.ok(audited.includes(action), action);
  });

  test('exact under 20 concurrent callers on two replicas: the limit admits that many in the minute, the rest get 429', async () => {
    await freshMinute();
    await limit({ name: 'burst', scope: 'burst', pattern: '*', requestsPerMinute: 7 });
    const key = await agentWithKey(admin, 'burst/agent');
    const clients = [a, b].map((r) => new OpenAI({ baseURL: `${r.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 }));
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => clients[i % 2]!.chat.completions.create(chat('gpt-4o-mini', 16))));
    const ok = results.filter((r) => r.status === 'fulfilled').length;
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    assert.equal(ok, 7, `admitted ${ok}`);
    assert.equal(refused.length, 13);
    for (const err of refused) {
      assert.ok(err instanceof OpenAI.RateLimitError, String(err));
      assert.equal(err.status, 429);
      assert.equal(err.code, 'rate_limit_exceeded');
      assert.match(err.message, /rate limit "burst" \(7 requests per minute for any model\).*Retry this one after \d+ s/);
      const wait = Number(err.headers.get('retry-after'));
      assert.ok(wait >= 1 && wait <= 60, String(wait));
      assert.equal(err.headers.get('x-should-retry'), null, 'the one refusal a client should retry');
    }
    // Another identity in the scope has its own counter.
    const other = await agentWithKey(admin, 'burst/other');
    const r = await new OpenAI({ baseURL: `${b.url}/llm/openai/v1`, apiKey: other, maxRetries: 0 }).chat.completions.create(chat('gpt-4o-mini', 16));
    assert.equal(r.choices.length, 1);
    let events: any[] = [];
    await waitFor(async () => {
      events = (await admin.get(`/api/v1/audit-events?action=llm.request&identity=${enc('burst/agent')}&limit=200`)).body.items;
      return events.length === 20;
    }, WAIT_MS);
    const refusedEvents = events.filter((e) => e.outcome === 'refused');
    assert.equal(refusedEvents.length, 13);
    assert.equal(refusedEvents[0].data.refusal.reason, 'rate_limit');
    assert.ok(refusedEvents[0].data.refusal.retryAfterSeconds >= 1);
  });

  test('a rule for one upstream leaves the others alone; each protocol refuses in its own shape', async () => {
    await freshMinute();
    await limit({ name: 'gemini-one', scope: 'shapes', pattern: '*', upstream: 'gemini', requestsPerMinute: 1 });
    await limit({ name: 'anthropic-one', scope: 'shapes', pattern: '*', upstream: 'anthropic', requestsPerMinute: 1 });
    await limit({ name: 'bedrock-one', scope: 'shapes', pattern: '*', upstream: 'bedrock', requestsPerMinute: 1 });
    const key = await agentWithKey(admin, 'shapes/agent');
    const gemini = (n: number) =>
      fetch(`${a.url}/llm/gemini/v1beta/models/gemini-2.5-flash:generateContent`, {
        method: 'POST',
        headers: { 'x-goog-api-key': key, 'content-type': 'application/json' },
        body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: `hi ${n}` }] }] }),
      });
    assert.equal((await gemini(1)).status, 200);
    const over = await gemini(2);
    assert.equal(over.status, 429);
    assert.ok(Number(over.headers.get('retry-after')) >= 1);
    const body = (await over.json()) as any;
    assert.equal(body.error.code, 429);
    assert.equal(body.error.status, 'RESOURCE_EXHAUSTED');
    assert.match(body.error.message, /gemini-one.*Retry this one after \d+ s/);

    const claude = new Anthropic({ baseURL: `${b.url}/llm/anthropic`, apiKey: key, maxRetries: 0 });
    await claude.messages.create(chat('claude-sonnet-4-5', 16));
    await assert.rejects(claude.messages.create(chat('claude-sonnet-4-5', 16)), (err: unknown) => {
      assert.ok(err instanceof Anthropic.RateLimitError);
      assert.equal((err.error as any).error.type, 'rate_limit_error');
      return true;
    });
    // Bedrock: the AWS SDK's ThrottlingException (x-amzn-errortype), which it retries itself; here once only.
    const bedrock = new BedrockRuntimeClient({
      endpoint: `${a.url}/llm/bedrock`,
      region: 'us-east-1',
      token: { token: key },
      authSchemePreference: ['httpBearerAuth'],
      requestHandler: new NodeHttpHandler(),
      maxAttempts: 1,
    });
    const converse = () => bedrock.send(new ConverseCommand({ modelId: 'us.amazon.nova-pro-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    await converse();
    await assert.rejects(converse(), (err: unknown) => {
      assert.ok(err instanceof ThrottlingException, String(err));
      assert.equal(err.$metadata.httpStatusCode, 429);
      assert.match(err.message, /bedrock-one.*Retry this one after \d+ s/);
      return true;
    });
    // OpenAI is not limited for this identity.
    const openai = new OpenAI({ baseURL: `${a.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 });
    for (let i = 0; i < 3; i++) await openai.chat.completions.create(chat('gpt-4o-mini', 16));
  });

  test('tokens per minute: admitted while the minute\'s tokens are under the limit, counted when usage arrives', async () => {
    await freshMinute();
    await limit({ name: 'tokens', scope: 'tok/agent', pattern: '*', upstream: 'openai', tokensPerMinute: 30 });
    const key = await agentWithKey(admin, 'tok/agent');
    const client = new OpenAI({ baseURL: `${a.url}/llm/openai/v1`, apiKey: key, maxRetries: 0 });
    // 18 tokens a call (11 in, 7 out): the first two are admitted (0, then 18 < 30), then none once 36 are counted.
    await client.chat.completions.create(chat('gpt-4o-mini', 16));
    await llmEvent(admin, () => true, `&identity=${enc('tok/agent')}`);
    let refusal: unknown = null;
    await waitFor(async () => {
      try {
        await client.chat.completions.create(chat('gpt-4o-mini', 16));
        return false;
      } catch (err) {
        refusal = err;
        return true;
      }
    }, WAIT_MS, 50);
    assert.ok(refusal instanceof OpenAI.RateLimitError);
    assert.match((refusal as Error).message, /30 tokens per minute/);
    const admitted = (await admin.get(`/api/v1/audit-events?action=llm.request&identity=${enc('tok/agent')}&limit=50`)).body.items.filter((e: any) => e.outcome !== 'refused');
    // Two are admitted on the counted tokens; a third only if it raced the second's count (a call in flight).
    assert.ok(admitted.length >= 2 && admitted.length <= 3, `admitted ${admitted.length}`);
  });
});
