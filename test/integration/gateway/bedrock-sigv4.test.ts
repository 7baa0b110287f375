/**
 * A Bedrock upstream configured without apiKey: Reins signs each call with SigV4, with credentials from the
 * standard AWS chain (here its first link, the environment), and the fake upstream checks the signature as AWS
 * does (test/fakes/sigv4-verify.ts, written from the specification). The client is the real AWS SDK with a Reins
 * token as its Bedrock API key.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { FAKE_USAGE } from '../../fakes/fake-providers.js';
import { agentWithKey, describeEachStore, enc } from '../../helpers/harness.js';
import { llmEvent, providersAt, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

const KEYS = { accessKeyId: 'AKIAREINSTEST0000001', secretAccessKey: 'reins/test/secret+access+key/0123456789', sessionToken: 'reins-test-session-token' };
const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';

describeEachStore('gateway: Bedrock with SigV4 from the AWS credential chain', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  const saved = { ...process.env };
  const client = () =>
    new BedrockRuntimeClient({
      endpoint: `${w.replica.url}/llm/bedrock`,
      region: 'us-west-2',
      token: { token: key },
      authSchemePreference: ['httpBearerAuth'],
      requestHandler: new NodeHttpHandler(),
      maxAttempts: 1,
    });

  before(async () => {
    // The chain's first link: the environment (the same code reads files, SSO, web identity, ECS and IMDS after it).
    process.env.AWS_ACCESS_KEY_ID = KEYS.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = KEYS.secretAccessKey;
    process.env.AWS_SESSION_TOKEN = KEYS.sessionToken;
    process.env.AWS_EC2_METADATA_DISABLED = 'true';
    w = await startGatewayWorld(
      store(),
      {},
      {
        fake: { sigv4: { keys: KEYS, region: 'us-west-2' } },
        providers: (origin) => ({ ...providersAt(origin), bedrock: { kind: 'bedrock', baseUrl: origin, region: 'us-west-2' } }),
      },
    );
    key = await agentWithKey(w.admin, 'eng/aws-caller');
  });
  after(async () => {
    await w?.close();
    for (const name of ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_EC2_METADATA_DISABLED']) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  test('invoke and invoke-with-response-stream are signed and accepted; usage is metered', async () => {
    const body = new TextEncoder().encode(JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 51, messages: [{ role: 'user', content: 'hi' }] }));
    const r = await client().send(new InvokeModelCommand({ modelId: MODEL, body, contentType: 'application/json' }));
    assert.match(new TextDecoder().decode(r.body), /Hello from Bedrock/);
    const hit = w.fake.hits.at(-1)!;
    assert.match(String(hit.headers.authorization), /^AWS4-HMAC-SHA256 Credential=AKIAREINSTEST0000001\/\d{8}\/us-west-2\/bedrock\/aws4_request/);
    assert.equal(hit.headers['x-amz-security-token'], KEYS.sessionToken);
    assert.ok(!JSON.stringify(hit.headers).includes(key), 'the Reins token never goes upstream');
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 51, `&identity=${enc('eng/aws-caller')}`);
    assert.equal(event.data.provider, 'bedrock');
    assert.deepEqual(event.data.usage, FAKE_USAGE.bedrockInvoke);

    const streamBody = new TextEncoder().encode(JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: 52, messages: [{ role: 'user', content: 'hi' }] }));
    const stream = await client().send(new InvokeModelWithResponseStreamCommand({ modelId: MODEL, body: streamBody, contentType: 'application/json' }));
    let chunks = 0;
    for await (const part of stream.body!) if (part.chunk) chunks++;
    assert.ok(chunks > 0);
    const streamed = await llmEvent(w.admin, (e) => e.data.maxTokens === 52, `&identity=${enc('eng/aws-caller')}`);
    assert.deepEqual(streamed.data.usage, FAKE_USAGE.bedrockInvoke);
  });

  test('Converse and ConverseStream are signed and accepted', async () => {
    const r = await client().send(new ConverseCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 53 } }));
    assert.equal(r.output?.message?.content?.[0]?.text, 'Hello from Converse');
    const s = await client().send(new ConverseStreamCommand({ modelId: MODEL, messages: [{ role: 'user', content: [{ text: 'hi' }] }], inferenceConfig: { maxTokens: 54 } }));
    let text = '';
    for await (const e of s.stream!) text += e.contentBlockDelta?.delta?.text ?? '';
    assert.equal(text, 'Hello from ConverseStream');
  });

  test('a signature made with other keys is refused by the upstream (the fake checks what AWS checks)', async () => {
    process.env.AWS_SECRET_ACCESS_KEY = 'not-the-secret';
    try {
      // A fresh gateway would read the chain again; this one cached the credentials it resolved, so sign by hand.
      const { BedrockSigning } = await import('../../../src/planes/llm/sigv4.js');
      const headers = await new BedrockSigning().sign('us-west-2', w.fake.origin, 'POST', `/model/${encodeURIComponent(MODEL)}/converse`, { 'content-type': 'application/json' }, Buffer.from('{}'));
      const r = await fetch(`${w.fake.origin}/model/${encodeURIComponent(MODEL)}/converse`, { method: 'POST', headers, body: '{}' });
      assert.equal(r.status, 403);
      assert.equal(r.headers.get('x-amzn-errortype'), 'InvalidSignatureException');
    } finally {
      process.env.AWS_SECRET_ACCESS_KEY = KEYS.secretAccessKey;
    }
  });

  test('a refusal still answers in Bedrock shape before anything is signed', async () => {
    const created = await w.admin.post('/api/v1/policies', { name: 'no-nova', kind: 'deny', appliesTo: ['llm'], match: "object.llm.model.startsWith('amazon.nova')", message: 'Nova is not approved.' });
    assert.equal(created.status, 201);
    const before = w.fake.hits.length;
    await assert.rejects(client().send(new ConverseCommand({ modelId: 'amazon.nova-pro-v1:0', messages: [{ role: 'user', content: [{ text: 'hi' }] }] })), AccessDeniedException);
    assert.equal(w.fake.hits.length, before);
  });
});
