import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
  ThrottlingException,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { CLIENT_TOKEN, DENY_POLICY, PROVIDER_KEY, credentialsSeenUpstream, startGateway, type Harness } from '../../fakes/gateway-harness.js';
import { BEDROCK_STREAM_EVENTS, FAKE_USAGE } from '../../fakes/fake-providers.js';

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

function bedrockClient(h: Harness, token = CLIENT_TOKEN, maxAttempts = 3): BedrockRuntimeClient {
  return new BedrockRuntimeClient({
    endpoint: `${h.url}/llm/bedrock`,
    region: 'us-east-1',
    // Bedrock API keys: the SDK sends `Authorization: Bearer <token>` when bearer auth is preferred.
    token: { token },
    authSchemePreference: ['httpBearerAuth'],
    // The SDK's default handler speaks HTTP/2 only; the gateway here is plain HTTP/1.1.
    requestHandler: new NodeHttpHandler(),
    maxAttempts,
  });
}

function anthropicBody(model = 'x', maxTokens = 32): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }], model }));
}

describe('LLM gateway: AWS SDK for Bedrock runtime', () => {
  let h: Harness;
  let client: BedrockRuntimeClient;
  before(async () => {
    h = await startGateway();
    client = bedrockClient(h);
  });
  after(async () => {
    client.destroy();
    await h.close();
  });

  test('InvokeModel is forwarded with the bearer provider key; the model comes from the path', async () => {
    const before = h.completed.length;
    const r = await client.send(new InvokeModelCommand({ modelId: MODEL, contentType: 'application/json', body: anthropicBody('x', 77) }));
    const body = JSON.parse(new TextDecoder().decode(r.body)) as { content: { text: string }[] };
    assert.equal(body.content[0]?.text, 'Hello from Bedrock');
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.model, MODEL);
    assert.equal(done?.call.maxTokens, 77);
    assert.equal(done?.call.stream, false);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.bedrockInvoke);
    const hit = h.fake.hits.at(-1);
    assert.equal(hit?.headers.authorization, `Bearer ${PROVIDER_KEY}`);
    assert.equal(decodeURIComponent(hit?.url ?? ''), `/model/${MODEL}/invoke`);
  });

  test('InvokeModelWithResponseStream: the decoded chunks equal what the provider sent, and usage is metered', async () => {
    const before = h.completed.length;
    const r = await client.send(new InvokeModelWithResponseStreamCommand({ modelId: MODEL, contentType: 'application/json', body: anthropicBody() }));
    const received: unknown[] = [];
    for await (const event of r.body ?? []) {
      if (event.chunk?.bytes) received.push(JSON.parse(new TextDecoder().decode(event.chunk.bytes)));
    }
    assert.deepEqual(received, BEDROCK_STREAM_EVENTS);
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.stream, true);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.bedrockInvoke);
  });

  test('Converse is forwarded and metered from usage.inputTokens/outputTokens', async () => {
    const before = h.completed.length;
    const r = await client.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 99 } }));
    assert.equal(r.output?.message?.content?.[0]?.text, 'Hello from Converse');
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.maxTokens, 99);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.bedrockConverse);
  });

  test('ConverseStream events arrive decoded, and usage comes from the metadata event', async () => {
    const before = h.completed.length;
    const r = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'hi' }] }] }));
    let text = '';
    let usage: unknown;
    for await (const event of r.stream ?? []) {
      text += event.contentBlockDelta?.delta?.text ?? '';
      if (event.metadata) usage = event.metadata.usage;
    }
    assert.equal(text, 'Hello from ConverseStream');
    assert.deepEqual(usage, { inputTokens: 17, outputTokens: 4, totalTokens: 21 });
    const done = (await h.completions(before + 1))[before];
    assert.equal(done?.call.stream, true);
    assert.deepEqual(done?.result.usage, FAKE_USAGE.bedrockConverse);
  });

  test('a refusal is an AccessDeniedException naming the policy, and the SDK does not retry it', async () => {
    const upstreamBefore = h.fake.hits.length;
    const decidedBefore = h.decided.length;
    await assert.rejects(client.send(new ConverseCommand({ modelId: 'forbidden-model', messages: [{ role: 'user', content: [{ text: 'hi' }] }] })), (err: unknown) => {
      assert.ok(err instanceof AccessDeniedException);
      assert.equal(err.$metadata.httpStatusCode, 403);
      assert.match(err.message, new RegExp(`${DENY_POLICY.policyName}.*${DENY_POLICY.message}`));
      return true;
    });
    assert.equal(h.decided.length - decidedBefore, 1);
    assert.equal(h.fake.hits.length, upstreamBefore);
  });

  test("an upstream throttle surfaces as ThrottlingException with the provider's message", async () => {
    const once = bedrockClient(h, CLIENT_TOKEN, 1);
    try {
      await assert.rejects(once.send(new InvokeModelCommand({ modelId: 'rate-limited', body: anthropicBody() })), (err: unknown) => {
        assert.ok(err instanceof ThrottlingException);
        assert.match(err.message, /Too many requests/);
        return true;
      });
    } finally {
      once.destroy();
    }
  });

  test('an unknown token is refused with 401 before anything is forwarded', async () => {
    const bad = bedrockClient(h, 'not-a-reins-token', 1);
    const upstreamBefore = h.fake.hits.length;
    try {
      await assert.rejects(bad.send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'hi' }] }] })), (err: unknown) => {
        assert.equal((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode, 401);
        return true;
      });
    } finally {
      bad.destroy();
    }
    assert.equal(h.fake.hits.length, upstreamBefore);
  });

  test("the client's Reins token never reaches the provider", () => {
    const seen = credentialsSeenUpstream(h.fake);
    assert.ok(seen.length > 0);
    assert.ok(seen.every((c) => c === `Bearer ${PROVIDER_KEY}`));
    assert.ok(h.fake.hits.every((hit) => !JSON.stringify(hit.headers).includes(CLIENT_TOKEN)));
  });
});
