import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { CLIENT_TOKEN, DENY_POLICY, PROVIDER_KEY, credentialsSeenUpstream, startGateway, type Harness } from '../../fakes/gateway-harness.js';
import { FAKE_USAGE } from '../../fakes/fake-providers.js';

describe('LLM gateway: OpenAI SDK', () => {
  let h: Harness;
  let client: OpenAI;
  before(async () => {
    h = await startGateway();
    client = new OpenAI({ baseURL: `${h.url}/llm/openai/v1`, apiKey: CLIENT_TOKEN, maxRetries: 2 });
  });
  after(async () => h.close());

  test('a chat completion is forwarded with the provider key and its usage is reported', async () => {
    const before = h.completed.length;
    const r = await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 50 });
    assert.equal(r.choices[0]?.message.content, 'Hello world');
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual(done?.result.usage, FAKE_USAGE.openaiChat);
    assert.equal(done?.result.status, 200);
    assert.equal(done?.result.end, 'forwarded');
    assert.equal(done?.call.route, '/v1/chat/completions');
    assert.equal(done?.call.model, 'gpt-fake');
    assert.equal(done?.call.maxTokens, 50);
    const hit = h.fake.hits.at(-1);
    assert.equal(hit?.headers.authorization, `Bearer ${PROVIDER_KEY}`);
  });

  test('a streamed chat completion arrives chunk by chunk and the include_usage chunk is metered', async () => {
    const before = h.completed.length;
    const stream = await client.chat.completions.create({ model: 'gpt-fake', messages: [{ role: 'user', content: 'hi' }], stream: true, stream_options: { include_usage: true } });
    let text = '';
    let usage: unknown = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, 'Hello world');
    assert.deepEqual(usage, { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.stream, true);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.openaiChat);
  });

  test('the Responses API is forwarded and metered from input_tokens/output_tokens', async () => {
    const before = h.completed.length;
    const r = await client.responses.create({ model: 'gpt-fake', input: 'hi' });
    assert.equal(r.output_text, 'Hello from responses');
    const done = (await h.completions(before + 1))[before];
    assert.deepEqual(done?.result.usage, FAKE_USAGE.openaiResponses);
  });

  test('embeddings and model listings pass through; only embeddings carry usage', async () => {
    const before = h.completed.length;
    const e = await client.embeddings.create({ model: 'text-embedding-fake', input: 'hi' });
    assert.equal(e.data.length, 1);
    const models = await client.models.list();
    assert.equal(models.data[0]?.id, 'gpt-fake');
    const done = await h.completions(before + 2);
    assert.deepEqual(done[before]?.result.usage, FAKE_USAGE.openaiEmbeddings);
    assert.equal(done[before + 1]?.result.usage, undefined);
  });

  test("an upstream 429 surfaces as the SDK's RateLimitError with the provider's message", async () => {
    const noRetry = new OpenAI({ baseURL: `${h.url}/llm/openai/v1`, apiKey: CLIENT_TOKEN, maxRetries: 0 });
    await assert.rejects(noRetry.chat.completions.create({ model: 'rate-limited', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.RateLimitError);
      assert.match(err.message, /Rate limit reached for requests \(fake\)/);
      return true;
    });
  });

  test("an upstream 400 surfaces as BadRequestError with the provider's message and param", async () => {
    await assert.rejects(client.chat.completions.create({ model: 'bad-request', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.BadRequestError);
      assert.match(err.message, /Invalid value for 'temperature'/);
      assert.equal(err.param, 'temperature');
      return true;
    });
  });

  test('a refusal is a PermissionDeniedError naming the policy, and the SDK does not retry it', async () => {
    const upstreamBefore = h.fake.hits.length;
    const decidedBefore = h.decided.length;
    await assert.rejects(client.chat.completions.create({ model: 'forbidden-model', messages: [{ role: 'user', content: 'hi' }] }), (err: unknown) => {
      assert.ok(err instanceof OpenAI.PermissionDeniedError);
      assert.equal(err.status, 403);
      assert.equal(err.code, 'policy_denied');
      assert.match(err.message, new RegExp(`${DENY_POLICY.policyName}.*${DENY_POLICY.message}`));
      return true;
    });
    assert.equal(h.decided.length - decidedBefore, 1, 'one gateway hit: no retry');
    assert.equal(h.fake.hits.length, upstreamBefore, 'the refused call never reached the provider');
    const done = (await h.completions(h.completed.length))[h.completed.length - 1];
    assert.equal(done?.result.end, 'refused');
  });

  test('an unknown token is a 401 AuthenticationError and is not retried', async () => {
    const bad = new OpenAI({ baseURL: `${h.url}/llm/openai/v1`, apiKey: 'sk-not-a-reins-token' });
    await assert.rejects(bad.models.list(), OpenAI.AuthenticationError);
  });

  test("the client's Reins token never reaches the provider; the provider key does", () => {
    const seen = credentialsSeenUpstream(h.fake);
    assert.ok(seen.length > 0);
    assert.ok(seen.every((c) => c === `Bearer ${PROVIDER_KEY}`));
    assert.ok(h.fake.hits.every((hit) => !JSON.stringify(hit.headers).includes(CLIENT_TOKEN)));
  });
});

describe('LLM gateway: a provider absent from config', () => {
  test('answers 503 in the provider shape naming the providers.openai key', async () => {
    const h = await startGateway({ withoutProviders: true });
    try {
      const client = new OpenAI({ baseURL: `${h.url}/llm/openai/v1`, apiKey: CLIENT_TOKEN, maxRetries: 2 });
      await assert.rejects(client.models.list(), (err: unknown) => {
        assert.ok(err instanceof OpenAI.InternalServerError);
        assert.equal(err.status, 503);
        assert.match(err.message, /providers\.openai/);
        return true;
      });
    } finally {
      await h.close();
    }
  });
});
