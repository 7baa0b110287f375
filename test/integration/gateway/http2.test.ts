/**
 * HTTP/2 on the gateway port, beside HTTP/1.1: the AWS SDK for Bedrock runtime with its DEFAULT client and handler
 * (`NodeHttp2Handler`, HTTP/2 only) for InvokeModel, InvokeModelWithResponseStream, Converse and ConverseStream,
 * over cleartext (prior knowledge, h2c) and over TLS (ALPN; the certificate trusted through the default handler's
 * options, and through NODE_EXTRA_CA_CERTS in a process of its own with no client options at all); a refusal audited and answered in Bedrock's error
 * shape, not retried; a held call released by an approver; a client's RST_STREAM mid-stream and while held; the
 * control plane over HTTP/2; HTTP/1.1 clients (openai SDK, undici, fetch) on the same port; shutdown with HTTP/2
 * sessions open.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as http2Connect, constants, type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { connect as tlsConnect } from 'node:tls';
import { connect as netConnect } from 'node:net';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  ConverseStreamCommand,
  InvokeModelCommand,
  InvokeModelWithResponseStreamCommand,
} from '@aws-sdk/client-bedrock-runtime';
import { NodeHttp2Handler } from '@smithy/node-http-handler';
import OpenAI from 'openai';
import { Agent, fetch as undiciFetch, request as undiciRequest } from 'undici';
import { ConfigError } from '../../../src/config/config.js';
import { startReplica } from '../../../src/app/server.js';
import { agentWithKey, ADMIN_TOKEN, Client, describeEachStore, enc, testConfigFor, waitFor, WAIT_MS, type Answer, type RequestOptions } from '../../helpers/harness.js';
import { llmEvent, openai, providersAt, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';
import { selfSignedCert, type TestCert } from '../../helpers/tls-cert.js';
import { BEDROCK_STREAM_EVENTS, FAKE_USAGE, startFakeProviders } from '../../fakes/fake-providers.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';

const MODEL = 'us.anthropic.claude-sonnet-4-5-20250929-v1:0';
/** Held by the approve policy below: an Anthropic Claude model on invoke, a route that can be held. */
const HELD_MODEL = 'us.anthropic.claude-3-5-haiku-20241022-v1:0';
/** Held too: a streaming OpenAI call, whose held answer starts at once with keep-alive pings. */
const HELD_OPENAI_MODEL = 'gpt-4o';
/** Refused by the deny policy below. */
const DENIED_MODEL = 'us.anthropic.claude-3-haiku-20240307-v1:0';

const execFileAsync = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const messages = [{ role: 'user' as const, content: [{ text: 'hi' }] }];

function anthropicBody(maxTokens: number): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ anthropic_version: 'bedrock-2023-05-31', max_tokens: maxTokens, messages: [{ role: 'user', content: 'hi' }] }));
}

/**
 * The SDK's default client: no `requestHandler` (its default, NodeHttp2Handler), default retries. `ca` (TLS only)
 * is the self-signed certificate, given to that default handler as its options (`nodeHttp2ConnectOptions`), which
 * still builds the default handler.
 */
function defaultBedrockClient(url: string, token: string, ca?: Buffer): BedrockRuntimeClient {
  return new BedrockRuntimeClient({
    endpoint: `${url}/llm/bedrock`,
    region: 'us-east-1',
    token: { token },
    authSchemePreference: ['httpBearerAuth'],
    ...(ca ? { requestHandler: { nodeHttp2ConnectOptions: { ca } } } : {}),
  });
}

interface H2Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One request on an HTTP/2 session, the whole answer read. */
function h2(session: ClientHttp2Session, headers: OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let answer: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (answer = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status: Number(answer[':status']), headers: answer, body: Buffer.concat(chunks).toString('utf8') }));
    stream.on('error', reject);
    stream.end(body);
  });
}

/** The connection-specific headers RFC 9113 §8.2.2 forbids in an HTTP/2 message. */
const CONNECTION_SPECIFIC = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade'];

function assertNoConnectionHeaders(headers: IncomingHttpHeaders): void {
  for (const name of CONNECTION_SPECIFIC) assert.equal(headers[name], undefined, `${name} in an HTTP/2 answer`);
}

interface World {
  url: string;
  admin: Client;
  fake: { hits: unknown[]; abandoned: number };
  key: string;
  /** TLS only: the certificate a client trusts. */
  ca?: Buffer;
  h2connect(): ClientHttp2Session;
}

/** The policies every world here has: one refuses DENIED_MODEL, one holds HELD_MODEL for approval. */
async function addPolicies(admin: Client): Promise<void> {
  const denied = await admin.post('/api/v1/policies', {
    name: 'no-old-haiku',
    kind: 'deny',
    appliesTo: ['llm'],
    match: `object.llm.model == '${DENIED_MODEL}'`,
    message: 'Claude 3 Haiku is retired here; use Claude 3.5 Haiku.',
  });
  assert.equal(denied.status, 201, JSON.stringify(denied.body));
  const held = await admin.post('/api/v1/policies', {
    name: 'review-new-haiku',
    kind: 'approve',
    appliesTo: ['llm'],
    match: `object.llm.model in ['${HELD_MODEL}', '${HELD_OPENAI_MODEL}']`,
    message: 'Claude 3.5 Haiku calls are reviewed this week.',
  });
  assert.equal(held.status, 201, JSON.stringify(held.body));
}

/** The four Bedrock operations and a refusal with the SDK's default client: the same tests over h2c and over TLS. */
function bedrockWithTheDefaultClient(world: () => World): void {
  let client: BedrockRuntimeClient;
  before(() => {
    const w = world();
    client = defaultBedrockClient(w.url, w.key, w.ca);
  });
  after(() => client.destroy());

  test("the client's default handler is the SDK's HTTP/2 handler", () => {
    const handler = client.config.requestHandler as unknown as NodeHttp2Handler;
    assert.ok(handler instanceof NodeHttp2Handler, String(handler?.constructor?.name));
    assert.equal(handler.metadata.handlerProtocol, 'h2');
  });

  test('InvokeModel: answered, metered and audited', async () => {
    const r = await client.send(new InvokeModelCommand({ modelId: MODEL, contentType: 'application/json', body: anthropicBody(71) }));
    const body = JSON.parse(new TextDecoder().decode(r.body)) as { content: { text: string }[] };
    assert.equal(body.content[0]?.text, 'Hello from Bedrock');
    const event = await llmEvent(world().admin, (e) => e.data.maxTokens === 71);
    assert.equal(event.data.model, MODEL);
    assert.equal(event.data.route, 'invoke');
    assert.equal(event.data.end, 'forwarded');
    assert.deepEqual(event.data.usage, FAKE_USAGE.bedrockInvoke);
  });

  test('InvokeModelWithResponseStream: the event stream arrives decoded, metered and audited', async () => {
    const r = await client.send(new InvokeModelWithResponseStreamCommand({ modelId: MODEL, contentType: 'application/json', body: anthropicBody(72) }));
    const received: unknown[] = [];
    for await (const event of r.body ?? []) {
      if (event.chunk?.bytes) received.push(JSON.parse(new TextDecoder().decode(event.chunk.bytes)));
    }
    assert.deepEqual(received, BEDROCK_STREAM_EVENTS);
    const event = await llmEvent(world().admin, (e) => e.data.maxTokens === 72);
    assert.equal(event.data.stream, true);
    assert.equal(event.data.end, 'forwarded');
    assert.deepEqual(event.data.usage, FAKE_USAGE.bedrockInvoke);
  });

  test('Converse: answered, metered and audited', async () => {
    const r = await client.send(new ConverseCommand({ modelId: MODEL, messages, inferenceConfig: { maxTokens: 73 } }));
    assert.equal(r.output?.message?.content?.[0]?.text, 'Hello from Converse');
    const event = await llmEvent(world().admin, (e) => e.data.maxTokens === 73);
    assert.equal(event.data.route, 'converse');
    assert.deepEqual(event.data.usage, FAKE_USAGE.bedrockConverse);
  });

  test('ConverseStream: the events arrive decoded, usage from the metadata event, audited', async () => {
    const r = await client.send(new ConverseStreamCommand({ modelId: MODEL, messages, inferenceConfig: { maxTokens: 74 } }));
    let text = '';
    let usage: unknown;
    for await (const event of r.stream ?? []) {
      text += event.contentBlockDelta?.delta?.text ?? '';
      if (event.metadata) usage = event.metadata.usage;
    }
    assert.equal(text, 'Hello from ConverseStream');
    assert.deepEqual(usage, { inputTokens: 17, outputTokens: 4, totalTokens: 21 });
    const event = await llmEvent(world().admin, (e) => e.data.maxTokens === 74);
    assert.equal(event.data.route, 'converse-stream');
    assert.equal(event.data.stream, true);
    assert.deepEqual(event.data.usage, FAKE_USAGE.bedrockConverse);
  });

  test("a refusal is Bedrock's AccessDeniedException naming the policy, audited once, not retried, nothing forwarded", async () => {
    const w = world();
    const upstreamBefore = w.fake.hits.length;
    const maxTokens = 75;
    await assert.rejects(client.send(new ConverseCommand({ modelId: DENIED_MODEL, messages, inferenceConfig: { maxTokens } })), (err: unknown) => {
      assert.ok(err instanceof AccessDeniedException, String(err));
      assert.equal(err.$metadata.httpStatusCode, 403);
      assert.equal(err.$metadata.attempts, 1, 'not retried');
      assert.match(err.message, /no-old-haiku/);
      assert.ok(err.message.includes('Claude 3 Haiku is retired here; use Claude 3.5 Haiku.'));
      return true;
    });
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === maxTokens);
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.decision, 'deny');
    assert.equal(event.data.policy, 'no-old-haiku');
    const decisions = (await w.admin.get(`/api/v1/audit-events?type=llm&action=llm.request&limit=200`)).body.items.filter((e: any) => e.data.maxTokens === maxTokens);
    assert.equal(decisions.length, 1, 'one decision: the SDK did not try again');
    assert.equal(w.fake.hits.length, upstreamBefore);

    // The wire, read with a bare HTTP/2 client: x-amzn-errortype and {message}, and no HTTP/1.1 connection headers.
    const session = w.h2connect();
    try {
      const raw = await h2(
        session,
        { ':method': 'POST', ':path': `/llm/bedrock/model/${enc(DENIED_MODEL)}/converse`, authorization: `Bearer ${w.key}`, 'content-type': 'application/json' },
        JSON.stringify({ messages, inferenceConfig: { maxTokens: 76 } }),
      );
      assert.equal(raw.status, 403);
      assert.equal(raw.headers['x-amzn-errortype'], 'AccessDeniedException');
      assert.equal(raw.headers['x-should-retry'], 'false');
      assert.match(String(raw.headers['content-type']), /application\/json/);
      assert.match((JSON.parse(raw.body) as { message: string }).message, /no-old-haiku/);
      assertNoConnectionHeaders(raw.headers);
    } finally {
      session.close();
    }
  });
}

describeEachStore('the gateway port over cleartext: HTTP/2 by prior knowledge beside HTTP/1.1', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  const world = (): World => ({
    url: w.replica.url,
    admin: w.admin,
    fake: w.fake,
    key,
    h2connect: () => http2Connect(w.replica.url),
  });
  let mcp: McpUpstream;
  before(async () => {
    mcp = await startMcpUpstream();
    w = await startGatewayWorld(store(), { mcpServers: [{ name: 'tools', url: mcp.url, headers: {} }] });
    key = await agentWithKey(w.admin, 'eng/h2-bot');
    await addPolicies(w.admin);
  });
  after(async () => {
    await w?.close();
    await mcp?.close();
  });

  describe('the AWS SDK default client (h2c)', () => bedrockWithTheDefaultClient(world));

  test('HTTP/1.1 clients on the same port: the openai SDK, undici and fetch', async () => {
    const chat = await openai(w.replica.url, key).chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 81, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0]?.message.content, 'Hello world');
    assert.equal((await llmEvent(w.admin, (e) => e.data.maxTokens === 81)).data.end, 'forwarded');
    const agent = new Agent();
    try {
      const r = await undiciRequest(`${w.replica.url}/healthz`, { dispatcher: agent });
      assert.equal(r.statusCode, 200);
      assert.deepEqual(await r.body.json(), { status: 'ok' });
      const streamed = await undiciRequest(`${w.replica.url}/llm/openai/v1/chat/completions`, {
        dispatcher: agent,
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, max_tokens: 82, messages: [{ role: 'user', content: 'hi' }] }),
      });
      assert.equal(streamed.statusCode, 200);
      assert.match(await streamed.body.text(), /\[DONE\]/);
    } finally {
      await agent.close();
    }
    assert.equal((await w.admin.get('/api/v1/auth/me')).status, 200);
    // A request that starts like the HTTP/2 preface but is not one ("P", then "OST") is HTTP/1.1.
    const answer = await rawHttp1(w.replica.url, ['P', 'OST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n']);
    assert.match(answer, /^HTTP\/1\.1 (200|404|405)/);
  });

  test('the control plane over HTTP/2: a read, a JSON body parsed, the console and the OpenAPI document', async () => {
    const session = http2Connect(w.replica.url);
    try {
      const me = await h2(session, { ':path': '/api/v1/auth/me', authorization: `Bearer ${ADMIN_TOKEN}` });
      assert.equal(me.status, 200, me.body);
      assert.equal(JSON.parse(me.body).id, 'default/admin');
      assertNoConnectionHeaders(me.headers);
      const created = await h2(
        session,
        { ':method': 'POST', ':path': '/api/v1/identities', authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        JSON.stringify({ id: 'eng/made-over-h2', kind: 'agent' }),
      );
      assert.equal(created.status, 201, created.body);
      const bad = await h2(session, { ':method': 'POST', ':path': '/api/v1/identities', authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, '{"id": 5}');
      assert.equal(bad.status, 400);
      // The console (built or not, `/` answers a page) and the OpenAPI document.
      const page = await h2(session, { ':path': '/' });
      assert.equal(page.status, 200);
      assert.match(String(page.headers['content-type']), /text\/html/);
      assertNoConnectionHeaders(page.headers);
      const openapi = await h2(session, { ':path': '/api/v1/openapi.json' });
      assert.equal(openapi.status, 200);
      assert.equal(JSON.parse(openapi.body).openapi, '3.1.0');
    } finally {
      session.close();
    }
  });

  test('MCP over HTTP/2: a session through /mcp/{server} with a governed tools/call, and the built-in /mcp/reins', async () => {
    const session = http2Connect(w.replica.url);
    const post = (path: string, headers: OutgoingHttpHeaders, message: unknown) =>
      h2(session, { ':method': 'POST', ':path': path, accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers }, JSON.stringify(message));
    const initialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'h2', version: '1' } } };
    try {
      const auth = { authorization: `Bearer ${key}` };
      const init = await post('/mcp/tools', auth, initialize);
      assert.equal(init.status, 200, init.body);
      assertNoConnectionHeaders(init.headers);
      const sid = init.headers['mcp-session-id'];
      assert.ok(typeof sid === 'string' && sid !== '', 'initialize answers a session id');
      const inSession = { ...auth, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
      assert.equal((await post('/mcp/tools', inSession, { jsonrpc: '2.0', method: 'notifications/initialized' })).status, 202);
      const call = await post('/mcp/tools', inSession, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: '/etc/h2' } } });
      assert.equal(call.status, 200, call.body);
      assert.match(call.body, /contents of \/etc\/h2/);
      let audited: any;
      await waitFor(async () => {
        audited = (await w.admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/h2-bot')}`)).body.items.find((e: any) => e.data.tool === 'read_file');
        return audited !== undefined;
      }, WAIT_MS);
      assert.ok(audited, 'the tools/call over HTTP/2 is audited');
      const reins = await post('/mcp/reins', { authorization: `Bearer ${ADMIN_TOKEN}` }, initialize);
      assert.equal(reins.status, 200, reins.body);
      assert.match(reins.body, /"serverInfo"/);
    } finally {
      session.close();
    }
  });

  test('an SSE answer streams over HTTP/2 as it arrives, and RST_STREAM cancels the upstream call (client_aborted)', async () => {
    const abandonedBefore = w.fake.abandoned;
    const session = http2Connect(w.replica.url);
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/llm/openai/v1/chat/completions', authorization: `Bearer ${key}`, 'content-type': 'application/json' });
      stream.end(JSON.stringify({ model: 'slow-stream', stream: true, max_tokens: 83, messages: [{ role: 'user', content: 'hi' }] }));
      const [headers] = (await once(stream, 'response')) as [IncomingHttpHeaders];
      assert.equal(headers[':status'], 200);
      assert.match(String(headers['content-type']), /text\/event-stream/);
      assertNoConnectionHeaders(headers);
      // The fake sends one chunk and then nothing until the gateway hangs up: it arrived, so the answer streams.
      const [first] = (await once(stream, 'data')) as [Buffer];
      assert.match(first.toString('utf8'), /Hel/);
      stream.close(constants.NGHTTP2_CANCEL);
    } finally {
      session.close();
    }
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 83);
    assert.equal(event.data.end, 'client_aborted');
    assert.ok((await waitFor(() => w.fake.abandoned > abandonedBefore, WAIT_MS)) >= 0, 'the upstream call was cancelled');
  });

  test('a held call over HTTP/2 is released by an approver and answered on the same stream', async () => {
    const client = defaultBedrockClient(w.replica.url, key);
    try {
      const call = client.send(new InvokeModelCommand({ modelId: HELD_MODEL, contentType: 'application/json', body: anthropicBody(84) }));
      const entry = await pendingEntry(w.admin, 'eng/h2-bot');
      const released = await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
      assert.equal(released.body.state, 'released', JSON.stringify(released.body));
      const r = await call;
      assert.equal((JSON.parse(new TextDecoder().decode(r.body)) as { content: { text: string }[] }).content[0]?.text, 'Hello from Bedrock');
      const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 84);
      assert.deepEqual(event.data.held, { entryId: entry.id, outcome: 'released' });
      assert.equal(event.data.end, 'forwarded');
    } finally {
      client.destroy();
    }
  });

  test('a held streaming call over HTTP/2: headers and pings at once, then the answer in the same stream once released', async () => {
    const session = http2Connect(w.replica.url);
    try {
      const stream = session.request({ ':method': 'POST', ':path': '/llm/openai/v1/chat/completions', authorization: `Bearer ${key}`, 'content-type': 'application/json' });
      const response = once(stream, 'response');
      stream.end(JSON.stringify({ model: HELD_OPENAI_MODEL, stream: true, max_tokens: 86, messages: [{ role: 'user', content: 'hold this stream' }] }));
      const [headers] = (await response) as [IncomingHttpHeaders];
      assert.equal(headers[':status'], 200);
      assert.equal(headers['x-reins-held'], 'true');
      assertNoConnectionHeaders(headers);
      const chunks: string[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c.toString('utf8')));
      const ended = once(stream, 'end');
      await waitFor(() => chunks.length > 0, WAIT_MS);
      assert.match(chunks.join(''), /^:/, 'a keep-alive comment while held');
      const entry = await pendingEntry(w.admin, 'eng/h2-bot');
      await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
      await ended;
      assert.match(chunks.join(''), /data: \[DONE\]/);
    } finally {
      session.close();
    }
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 86);
    assert.equal(event.data.held?.outcome, 'released');
    assert.equal(event.data.end, 'forwarded');
  });

  test('a held call whose client sends RST_STREAM is not forwarded once released (client_aborted)', async () => {
    const session = http2Connect(w.replica.url);
    const upstreamBefore = w.fake.hits.length;
    try {
      const stream = session.request({ ':method': 'POST', ':path': `/llm/bedrock/model/${enc(HELD_MODEL)}/invoke`, authorization: `Bearer ${key}`, 'content-type': 'application/json' });
      stream.on('error', () => undefined);
      stream.end(anthropicBody(85));
      const entry = await pendingEntry(w.admin, 'eng/h2-bot');
      stream.close(constants.NGHTTP2_CANCEL);
      await once(stream, 'close');
      // The session stays up for other streams: the cancel was for this stream only.
      const health = await h2(session, { ':path': '/healthz' });
      assert.equal(health.status, 200);
      await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    } finally {
      session.close();
    }
    const event = await llmEvent(w.admin, (e) => e.data.maxTokens === 85);
    assert.equal(event.data.end, 'client_aborted');
    assert.equal(w.fake.hits.length, upstreamBefore, 'nothing went upstream');
  });
});

describeEachStore('the gateway port over TLS: HTTP/2 and HTTP/1.1 by ALPN', ({ store }) => {
  let cert: TestCert;
  let w: GatewayWorld;
  let key: string;
  const world = (): World => ({
    url: w.replica.url,
    admin: w.admin,
    fake: w.fake,
    key,
    ca: cert.ca,
    h2connect: () => http2Connect(w.replica.url, { ca: cert.ca }),
  });
  let dispatcher: Agent;
  before(async () => {
    cert = selfSignedCert();
    dispatcher = new Agent({ connect: { ca: cert.ca } });
    w = await startGatewayWorld(store(), { tls: { certFile: cert.certFile, keyFile: cert.keyFile } });
    // The harness's client speaks fetch: over TLS it needs the certificate too.
    w.admin = new TlsClient(w.replica.url, ADMIN_TOKEN, dispatcher);
    key = await agentWithKey(w.admin, 'eng/tls-bot');
    await addPolicies(w.admin);
  });
  after(async () => {
    await w?.close();
    await dispatcher?.close();
    cert?.remove();
  });

  test('the replica reports an https URL, and ALPN offers h2 and http/1.1 (none named: HTTP/1.1)', async () => {
    assert.match(w.replica.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const { port } = new URL(w.replica.url);
    const alpn = (protocols: string[] | undefined) =>
      new Promise<string | false | null>((resolve, reject) => {
        const s = tlsConnect({ host: '127.0.0.1', port: Number(port), ca: cert.ca, ...(protocols ? { ALPNProtocols: protocols } : {}) }, () => {
          resolve(s.alpnProtocol);
          s.end();
        });
        s.on('error', reject);
      });
    assert.equal(await alpn(['h2', 'http/1.1']), 'h2');
    assert.equal(await alpn(['http/1.1']), 'http/1.1');
    assert.equal(await alpn(undefined), false);
    const answer = await rawHttp1(w.replica.url, ['GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n'], cert.ca);
    assert.match(answer, /^HTTP\/1\.1 200/);
  });

  describe('the AWS SDK default client (TLS)', () => bedrockWithTheDefaultClient(world));

  test('the default client with no options at all, trusting the certificate through NODE_EXTRA_CA_CERTS (its own process)', async () => {
    // NODE_EXTRA_CA_CERTS is read when a process starts: a child process, as a developer's tool would be run.
    const script = `
      import { BedrockRuntimeClient, ConverseCommand, ConverseStreamCommand } from '@aws-sdk/client-bedrock-runtime';
      const client = new BedrockRuntimeClient({ endpoint: process.env.BEDROCK_ENDPOINT, region: 'us-east-1', token: { token: process.env.BEDROCK_TOKEN }, authSchemePreference: ['httpBearerAuth'] });
      const messages = [{ role: 'user', content: [{ text: 'hi' }] }];
      const converse = await client.send(new ConverseCommand({ modelId: '${MODEL}', messages, inferenceConfig: { maxTokens: 92 } }));
      let stream = '';
      for await (const e of (await client.send(new ConverseStreamCommand({ modelId: '${MODEL}', messages, inferenceConfig: { maxTokens: 93 } }))).stream) stream += e.contentBlockDelta?.delta?.text ?? '';
      console.log(JSON.stringify({ converse: converse.output.message.content[0].text, stream, handler: client.config.requestHandler.constructor.name }));
      client.destroy();`;
    const { stdout } = await execFileAsync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: ROOT,
      env: { ...process.env, NODE_EXTRA_CA_CERTS: cert.certFile, BEDROCK_ENDPOINT: `${w.replica.url}/llm/bedrock`, BEDROCK_TOKEN: key },
      timeout: 2 * WAIT_MS,
    });
    assert.deepEqual(JSON.parse(stdout.trim().split('\n').at(-1)!), { converse: 'Hello from Converse', stream: 'Hello from ConverseStream', handler: 'NodeHttp2Handler' });
    assert.equal((await llmEvent(w.admin, (e) => e.data.maxTokens === 93)).data.end, 'forwarded');
  });

  test('HTTP/1.1 clients over TLS: the openai SDK and undici', async () => {
    const client = new OpenAI({
      baseURL: `${w.replica.url}/llm/openai/v1`,
      apiKey: key,
      maxRetries: 0,
      fetch: ((url: string, init: object) => undiciFetch(url, { ...init, dispatcher })) as never,
    });
    const chat = await client.chat.completions.create({ model: 'gpt-4o-mini', max_tokens: 91, messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(chat.choices[0]?.message.content, 'Hello world');
    const r = await undiciRequest(`${w.replica.url}/healthz`, { dispatcher });
    assert.equal(r.statusCode, 200);
    await r.body.dump();
  });

  test('a plain-HTTP request on the TLS port is dropped, and the port keeps serving', async () => {
    const { port } = new URL(w.replica.url);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/healthz`));
    assert.equal((await w.admin.get('/healthz')).status, 200);
  });
});

describeEachStore('the gateway port: shutdown and bad TLS files', ({ store }) => {
  test('close() with idle HTTP/2 sessions open does not wait for the shutdown grace', async () => {
    const fake = await startFakeProviders();
    const replica = await startReplica(testConfigFor(store(), { providers: providersAt(fake.origin) }), {
      logger: false,
      ...(store().db ? { db: store().db } : {}),
      // Far longer than this test's bound: a close that waited for the open sessions would fail it.
      closeGraceMs: 120_000,
    });
    const session = http2Connect(replica.url);
    const sdk = defaultBedrockClient(replica.url, ADMIN_TOKEN);
    try {
      assert.equal((await h2(session, { ':path': '/healthz' })).status, 200);
      // The SDK keeps its session in its pool after a call (this one refused: an admin's token is no agent's key
      // here, any answer will do).
      await sdk.send(new ConverseCommand({ modelId: MODEL, messages })).catch(() => undefined);
      const started = Date.now();
      await replica.close();
      assert.ok(Date.now() - started < 60_000, `close took ${Date.now() - started} ms`);
      await waitFor(() => session.closed || session.destroyed, WAIT_MS);
      assert.ok(session.closed || session.destroyed, 'the server ended the idle session');
    } finally {
      sdk.destroy();
      session.destroy();
      await fake.close();
    }
  });

  test('an unreadable tls.certFile or a key that is not the certificate stops start-up naming the key', async () => {
    const cert = selfSignedCert();
    const other = selfSignedCert();
    try {
      const start = (tls: { certFile: string; keyFile: string }) => startReplica(testConfigFor(store(), { tls }), { logger: false, ...(store().db ? { db: store().db } : {}) });
      await assert.rejects(start({ certFile: `${cert.certFile}.missing`, keyFile: cert.keyFile }), (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.equal(err.key, 'tls.certFile');
        return true;
      });
      await assert.rejects(start({ certFile: cert.certFile, keyFile: other.keyFile }), (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.equal(err.key, 'tls');
        return true;
      });
    } finally {
      cert.remove();
      other.remove();
    }
  });
});

/** The harness's client over TLS: undici's fetch with a dispatcher that trusts the test certificate. */
class TlsClient extends Client {
  constructor(
    baseUrl: string,
    token: string | null,
    private readonly dispatcher: Agent,
  ) {
    super(baseUrl, token);
  }

  override with(token: string | null): Client {
    return new TlsClient(this.baseUrl, token, this.dispatcher);
  }

  override async request<T = any>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<Answer<T>> {
    const token = options.token === undefined ? this.token : options.token;
    const headers: Record<string, string> = { ...options.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await undiciFetch(new URL(path, this.baseUrl), {
      method,
      headers,
      dispatcher: this.dispatcher,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    const parsed: unknown = (res.headers.get('content-type') ?? '').includes('json') && text ? JSON.parse(text) : text;
    return { status: res.status, body: parsed as T, headers: res.headers as unknown as Headers };
  }
}

/** Sends `parts` as separate writes on a fresh connection (TLS when `ca` is given) and reads until the server closes. */
function rawHttp1(url: string, parts: string[], ca?: Buffer): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = ca ? tlsConnect({ host: '127.0.0.1', port: Number(port), ca }) : netConnect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on(ca ? 'secureConnect' : 'connect', async () => {
      for (const part of parts) {
        socket.write(part);
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('error', reject);
  });
}

/** The pending held-call entry of this agent (one at a time in these tests). */
async function pendingEntry(admin: Client, agentId: string): Promise<any> {
  let entry: any;
  await waitFor(async () => {
    entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.agentId === agentId);
    return entry !== undefined;
  }, WAIT_MS);
  assert.ok(entry, `no pending held call of ${agentId}`);
  return entry;
}

function once(emitter: NodeJS.EventEmitter, event: string): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    emitter.once(event, (...args: unknown[]) => resolve(args));
    if (event !== 'error') emitter.once('error', reject);
  });
}
