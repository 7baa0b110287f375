import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { CLIENT_TOKEN, DENY_POLICY, PROVIDER_KEY, credentialsSeenUpstream, startGateway, type Harness } from '../../fakes/gateway-harness.js';
import { FAKE_USAGE } from '../../fakes/fake-providers.js';

describe('LLM gateway: Anthropic SDK', () => {
  let h: Harness;
  let client: Anthropic;
  before(async () => {
    h = await startGateway();
    client = new Anthropic({ baseURL: `${h.url}/llm/anthropic`, apiKey: CLIENT_TOKEN, maxRetries: 2 });
  });
  after(async () => h.close());

  test('a message is forwarded with x-api-key replaced by the provider key, and its usage is reported', async () => {
    const before = h.completed.length;
    const m = await client.messages.create({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    assert.deepEqual(m.content, [{ type: 'text', text: 'Hello from Claude' }]);
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual(done?.result.usage, FAKE_USAGE.anthropic);
    assert.equal(done?.call.maxTokens, 64);
    assert.equal(done?.call.model, 'claude-fake');
    const hit = h.fake.hits.at(-1);
    assert.equal(hit?.headers['x-api-key'], PROVIDER_KEY);
    assert.equal(hit?.headers.authorization, undefined);
    assert.match(String(hit?.headers['anthropic-version']), /^\d{4}-\d{2}-\d{2}$/);
  });

  test('messages.stream yields the final message, and usage comes from message_start and message_delta', async () => {
    const before = h.completed.length;
    const stream = client.messages.stream({ model: 'claude-fake', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] });
    const final = await stream.finalMessage();
    assert.equal(final.content[0]?.type === 'text' ? final.content[0].text : '', 'Hello from Claude');
    assert.equal(final.usage.output_tokens, FAKE_USAGE.anthropic.outputTokens);
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.stream, true);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.anthropic);
  });

  test('count_tokens answers and is not metered as consumption', async () => {
    const before = h.completed.length;
    const r = await client.messages.countTokens({ model: 'claude-fake', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(r.input_tokens, 42);
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.result.usage, undefined);
  });

  test('Claude Code style: Bearer token, /v1/messages?beta=true with the query kept, anthropic-beta kept', async () => {
    const bearer = new Anthropic({ baseURL: `${h.url}/llm/anthropic`, authToken: CLIENT_TOKEN, apiKey: null, maxRetries: 0, defaultQuery: { beta: 'true' } });
    const m = await bearer.beta.messages.create({ model: 'claude-fake', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }], betas: ['interleaved-thinking-2025-05-14'] });
    assert.equal(m.id, 'msg_fake');
    const hit = h.fake.hits.at(-1);
    assert.equal(hit?.url, '/v1/messages?beta=true');
    assert.equal(hit?.headers['anthropic-beta'], 'interleaved-thinking-2025-05-14');
    assert.equal(hit?.headers['x-api-key'], PROVIDER_KEY);
    assert.equal(hit?.headers.authorization, undefined);
    assert.equal(h.decided.at(-1)?.route, '/v1/messages?beta=true');
  });

  test('HEAD /api/hello answers 200', async () => {
    const r = await fetch(`${h.url}/llm/anthropic/api/hello`, { method: 'HEAD' });
    assert.equal(r.status, 200);
  });

  test("the request body reaches the provider byte for byte, with the client's anthropic-version", async () => {
    const raw = '{"model":"claude-fake",  "max_tokens":8,\n "messages":[{"role":"user","content":"h\\u00e9"}]}';
    const r = await fetch(`${h.url}/llm/anthropic/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': CLIENT_TOKEN, 'anthropic-version': '2023-06-01' },
      body: raw,
    });
    assert.equal(r.status, 200);
    assert.equal(h.fake.hits.at(-1)?.body.toString('utf8'), raw);
    assert.equal(h.fake.hits.at(-1)?.headers['anthropic-version'], '2023-06-01');
  });

  test('a refusal is a PermissionDeniedError naming the policy, and the SDK does not retry it', async () => {
    const upstreamBefore = h.fake.hits.length;
    const decidedBefore = h.decided.length;
    await assert.rejects(client.messages.create({ model: 'forbidden-model', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.PermissionDeniedError);
      assert.equal(err.status, 403);
      assert.match(err.message, new RegExp(`${DENY_POLICY.policyName}.*${DENY_POLICY.message}`));
      assert.deepEqual((err.error as { error?: { type?: string } }).error?.type, 'permission_error');
      return true;
    });
    assert.equal(h.decided.length - decidedBefore, 1, 'one gateway hit: no retry');
    assert.equal(h.fake.hits.length, upstreamBefore);
  });

  test("an upstream 429 surfaces as RateLimitError with the provider's message", async () => {
    const noRetry = new Anthropic({ baseURL: `${h.url}/llm/anthropic`, apiKey: CLIENT_TOKEN, maxRetries: 0 });
    await assert.rejects(noRetry.messages.create({ model: 'rate-limited', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof Anthropic.RateLimitError);
      assert.match(err.message, /exceeded your rate limit \(fake\)/);
      return true;
    });
  });

  test('a missing or unknown key is a 401 AuthenticationError', async () => {
    const bad = new Anthropic({ baseURL: `${h.url}/llm/anthropic`, apiKey: 'sk-ant-unknown' });
    await assert.rejects(bad.messages.create({ model: 'claude-fake', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] }), Anthropic.AuthenticationError);
    const r = await fetch(`${h.url}/llm/anthropic/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(r.status, 401);
    assert.equal(((await r.json()) as { error: { type: string } }).error.type, 'authentication_error');
  });

  test("the client's Reins token never reaches the provider", () => {
    const seen = credentialsSeenUpstream(h.fake);
    assert.ok(seen.length > 0);
    assert.ok(seen.every((c) => c === PROVIDER_KEY));
    assert.ok(h.fake.hits.every((hit) => !JSON.stringify(hit.headers).includes(CLIENT_TOKEN)));
  });
});
