/**
 * Trace context and OpenTelemetry spans of governed calls. With OTEL_EXPORTER_OTLP_ENDPOINT set, a replica exports
 * one span per governed call over OTLP/HTTP (JSON) to a local receiver (a node:http server decoding the export
 * requests): an LLM call, an MCP tool call and a refused call arrive with the GenAI semantic conventions' attributes
 * and Reins' decision, the caller's `traceparent` as their parent, and the upstream gets Reins' span as its parent.
 * Without it, the caller's `traceparent` goes upstream unchanged and is recorded on the audit event.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { ProxyAgent, fetch as undiciFetch } from 'undici';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { tracingFromEnv } from '../../../src/config/config.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { agentWithKey, describeEachStore, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { anthropic, llmEvent, openai, startGatewayWorld, type GatewayWorld } from '../../helpers/gateway.js';

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number };
  resource: Record<string, unknown>;
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } };

function valueOf(v: OtlpValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributes(list: { key: string; value: OtlpValue }[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

/** An OTLP/HTTP trace receiver: POST /v1/traces with ExportTraceServiceRequest JSON. */
async function startOtlpReceiver(): Promise<{ url: string; spans: ExportedSpan[]; contentTypes: string[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const contentTypes: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      contentTypes.push(String(req.headers['content-type']));
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { resourceSpans?: any[] };
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributes(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ traceId: s.traceId, spanId: s.spanId, ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}), name: s.name, kind: s.kind, attributes: attributes(s.attributes), status: s.status, resource });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const hex = (n: number) => Array.from({ length: n }, () => Math.floor(Math.random() * 16).toString(16)).join('');
const parentHeader = (traceId: string, spanId: string) => `00-${traceId}-${spanId}-01`;

async function mcpClient(base: string, token: string, headers: Record<string, string>): Promise<McpClient> {
  const client = new McpClient({ name: 'traced-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/tools', base), { requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } } }));
  return client;
}

describeEachStore('OpenTelemetry spans of governed calls', ({ store }) => {
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let upstream: McpUpstream;
  let w: GatewayWorld;
  let key: string;

  before(async () => {
    receiver = await startOtlpReceiver();
    upstream = await startMcpUpstream();
    const tracing = tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_SERVICE_NAME: 'reins-under-test', OTEL_BSP_SCHEDULE_DELAY: '50' });
    origin = createServer((req, res) => {
      originHeaders.push(req.headers);
      res.end('hello from origin');
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    w = await startGatewayWorld(store(), {
      tracing,
      mcpServers: [{ name: 'tools', url: upstream.url, headers: {} }],
      // The origin is on loopback, which the default list closes.
      egress: { port: 0, deniedNetworks: ['169.254.0.0/16'] },
    });
    key = await agentWithKey(w.admin, 'eng/traced-bot');
  });
  after(async () => {
    await w?.close();
    await upstream?.close();
    await receiver?.close();
    origin?.closeAllConnections();
    origin?.close();
  });
  let origin: Server;
  const originHeaders: IncomingHttpHeaders[] = [];

  async function spanWhere(what: string, match: (s: ExportedSpan) => boolean): Promise<ExportedSpan> {
    await waitFor(() => receiver.spans.some(match), WAIT_MS);
    const span = receiver.spans.find(match);
    assert.ok(span, `no span ${what} arrived within ${WAIT_MS / 1000} s; got ${receiver.spans.map((s) => s.name).join(', ')}`);
    return span;
  }

  test('an LLM call: a GenAI span, child of the caller\'s traceparent, parent of the upstream call', async () => {
    const parent = hex(16);
    const client = openai(w.replica.url, key, { traceparent: parentHeader(TRACE_ID, parent), tracestate: 'vendor=abc' });
    const answer = await client.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(answer.id);
    const span = await spanWhere('for the chat call', (s) => s.parentSpanId === parent);
    assert.equal(span.traceId, TRACE_ID);
    assert.equal(span.name, 'chat gpt-4o-mini');
    assert.equal(span.kind, 3, 'SPAN_KIND_CLIENT');
    assert.equal(span.resource['service.name'], 'reins-under-test');
    const a = span.attributes;
    assert.equal(a['gen_ai.system'], 'openai');
    assert.equal(a['gen_ai.operation.name'], 'chat');
    assert.equal(a['gen_ai.request.model'], 'gpt-4o-mini');
    assert.equal(a['gen_ai.response.model'], 'gpt-4o-mini');
    assert.ok((a['gen_ai.usage.input_tokens'] as number) > 0);
    assert.ok((a['gen_ai.usage.output_tokens'] as number) > 0);
    assert.equal(a['reins.decision'], 'allow');
    assert.equal(a['reins.tier'], 'T2');
    assert.equal(a['reins.outcome'], 'ok');
    assert.equal(a['reins.agent.id'], 'eng/traced-bot');
    assert.equal(a['http.response.status_code'], 200);
    assert.equal(typeof a['reins.cost_usd'], 'number');
    assert.ok(receiver.contentTypes.every((t) => t.startsWith('application/json')), receiver.contentTypes.join(', '));
    // The provider got Reins' span as its parent, and the caller's tracestate.
    const hit = w.fake.hits.find((h) => h.headers.traceparent?.includes(span.spanId));
    assert.ok(hit, `no upstream call carried Reins' span: ${w.fake.hits.map((h) => h.headers.traceparent).join(', ')}`);
    assert.equal(hit.headers.traceparent, `00-${TRACE_ID}-${span.spanId}-01`);
    assert.equal(hit.headers.tracestate, 'vendor=abc');
    // The audit event records the trace.
    const event = await llmEvent(w.admin, (e) => e.data.trace?.spanId === span.spanId);
    assert.deepEqual(event.data.trace, { traceId: TRACE_ID, spanId: span.spanId, parentSpanId: parent });
  });

  test('an MCP tool call: an execute_tool span, child of the caller\'s traceparent, parent of the upstream POST', async () => {
    const parent = hex(16);
    const client = await mcpClient(w.replica.url, key, { traceparent: parentHeader(TRACE_ID, parent) });
    try {
      const result = await client.callTool({ name: 'read_file', arguments: { path: 'README.md' } });
      assert.notEqual(result.isError, true, JSON.stringify(result));
    } finally {
      await client.close();
    }
    const span = await spanWhere('for the tool call', (s) => s.parentSpanId === parent && s.name.startsWith('execute_tool'));
    assert.equal(span.traceId, TRACE_ID);
    assert.equal(span.name, 'execute_tool read_file');
    assert.equal(span.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(span.attributes['gen_ai.tool.name'], 'read_file');
    assert.equal(span.attributes['mcp.method.name'], 'tools/call');
    assert.equal(span.attributes['reins.mcp.server'], 'tools');
    assert.equal(span.attributes['reins.decision'], 'allow');
    assert.equal(span.attributes['reins.outcome'], 'ok');
    const post = upstream.hits.find((h) => h.headers.traceparent === `00-${TRACE_ID}-${span.spanId}-01`);
    assert.ok(post, `the tools/call POST did not carry Reins' span: ${upstream.hits.map((h) => h.headers.traceparent).join(', ')}`);
    // Messages Reins does not govern (initialize, tools/list) carry the caller's own trace context.
    assert.ok(upstream.hits.some((h) => h.headers.traceparent === parentHeader(TRACE_ID, parent)));
  });

  test('an egress request: an HTTP client span, parent of the request the origin gets', async () => {
    await w.admin.put(`/api/v1/identities/autonomy-tier?id=${encodeURIComponent('eng/traced-bot')}`, { tier: 'T3' });
    const parent = hex(16);
    const port = (origin.address() as AddressInfo).port;
    const agent = new ProxyAgent({ uri: w.replica.egressUrl!.replace('http://', `http://agent:${key}@`), proxyTunnel: false });
    try {
      const r = await undiciFetch(`http://localhost:${port}/traced`, { dispatcher: agent, headers: { traceparent: parentHeader(TRACE_ID, parent) } });
      assert.equal(await r.text(), 'hello from origin');
    } finally {
      await agent.close();
      await w.admin.put(`/api/v1/identities/autonomy-tier?id=${encodeURIComponent('eng/traced-bot')}`, { tier: '' });
    }
    const span = await spanWhere('for the egress request', (s) => s.parentSpanId === parent && s.attributes['reins.plane'] === 'egress');
    assert.equal(span.name, 'GET');
    assert.equal(span.attributes['server.address'], 'localhost');
    assert.equal(span.attributes['server.port'], port);
    assert.equal(span.attributes['reins.tier'], 'T3');
    assert.equal(span.attributes['reins.decision'], 'allow');
    assert.deepEqual(
      originHeaders.map((h) => h.traceparent),
      [`00-${TRACE_ID}-${span.spanId}-01`],
      'one traceparent, Reins\' span, in place of the caller\'s',
    );
  });

  test('a held call: its span has the approve decision, the hold\'s outcome and wait; the held-calls gauge counts it while parked', async () => {
    await w.admin.post('/api/v1/policies', { name: 'trace-review-haiku', kind: 'approve', appliesTo: ['llm'], match: "object.llm.model == 'claude-haiku-4-5'", message: 'Reviewed.' });
    try {
      const parked = anthropic(w.replica.url, key).messages.create({ model: 'claude-haiku-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hold me' }] });
      let entry: any;
      await waitFor(async () => {
        entry = (await w.admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.policyName === 'trace-review-haiku');
        return entry !== undefined;
      }, WAIT_MS);
      const metrics = (await w.admin.get('/metrics', { token: null })).body as string;
      assert.match(metrics, /reins_gateway_held_calls\{plane="llm"\} 1/);
      assert.equal((await w.admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).status, 200);
      await parked;
      const span = await spanWhere('for the held call', (s) => s.attributes['reins.held.entry_id'] === entry.id);
      assert.equal(span.attributes['reins.decision'], 'approve');
      assert.equal(span.attributes['reins.policy'], 'trace-review-haiku');
      assert.equal(span.attributes['reins.held.outcome'], 'released');
      assert.ok((span.attributes['reins.held_ms'] as number) >= 0);
      assert.equal(span.attributes['gen_ai.system'], 'anthropic');
      const after = (await w.admin.get('/metrics', { token: null })).body as string;
      assert.match(after, /reins_gateway_held_calls\{plane="llm"\} 0/);
      assert.match(after, /reins_gateway_held_duration_seconds_count\{plane="llm",outcome="released"\} 1/);
    } finally {
      await w.admin.delete('/api/v1/policies/trace-review-haiku');
    }
  });

  test('a refused call: a span with the decision, the policy and the refusal; Reins starts the trace when the caller sent none', async () => {
    await w.admin.post('/api/v1/policies', { name: 'trace-no-embeddings', kind: 'deny', appliesTo: ['llm'], match: "object.llm.route == 'embeddings'", message: 'No embeddings here.' });
    await assert.rejects(openai(w.replica.url, key).embeddings.create({ model: 'text-embedding-3-small', input: 'x' }));
    const span = await spanWhere('for the refused call', (s) => s.attributes['reins.policy'] === 'trace-no-embeddings');
    assert.equal(span.parentSpanId, undefined);
    assert.match(span.traceId, /^[0-9a-f]{32}$/);
    assert.notEqual(span.traceId, TRACE_ID);
    assert.equal(span.attributes['gen_ai.operation.name'], 'embeddings');
    assert.equal(span.attributes['reins.decision'], 'deny');
    assert.equal(span.attributes['reins.refusal.reason'], 'policy');
    assert.equal(span.attributes['reins.outcome'], 'refused');
    assert.equal(span.attributes['http.response.status_code'], 403);
    const event = await llmEvent(w.admin, (e) => e.data.trace?.spanId === span.spanId);
    assert.deepEqual(event.data.trace, { traceId: span.traceId, spanId: span.spanId, parentSpanId: null });
    assert.equal(event.data.end, 'refused');
  });
});

describeEachStore('trace context without span export', ({ store }) => {
  let w: GatewayWorld;
  let key: string;
  before(async () => {
    w = await startGatewayWorld(store());
    key = await agentWithKey(w.admin, 'eng/untraced-bot');
  });
  after(async () => {
    await w?.close();
  });

  test('the caller\'s traceparent goes upstream unchanged and is recorded on the audit event', async () => {
    const parent = hex(16);
    const traceId = hex(32);
    await openai(w.replica.url, key, { traceparent: parentHeader(traceId, parent) }).chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    assert.ok(w.fake.hits.some((h) => h.headers.traceparent === parentHeader(traceId, parent)));
    const event = await llmEvent(w.admin, (e) => e.data.trace?.traceId === traceId);
    assert.deepEqual(event.data.trace, { traceId, spanId: null, parentSpanId: parent });
  });

  test('a malformed traceparent is ignored: no trace on the audit event', async () => {
    await openai(w.replica.url, key, { traceparent: '00-zz-yy-01' }).embeddings.create({ model: 'text-embedding-3-large', input: 'malformed trace' });
    const event = await llmEvent(w.admin, (e) => e.action === 'llm.request' && e.data.model === 'text-embedding-3-large');
    assert.equal(event.data.trace, undefined);
    assert.ok(w.fake.hits.some((h) => h.headers.traceparent === '00-zz-yy-01'), 'forwarded as sent: Reins is not a hop of the trace');
  });
});

describe('tracing configuration from the OpenTelemetry variables', () => {
  test('the general endpoint gets /v1/traces; the traces endpoint is used as is; disabled or absent: none', () => {
    assert.equal(tracingFromEnv({})?.tracesEndpoint, undefined);
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.tracesEndpoint, 'http://collector:4318/v1/traces');
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example/otlp/traces' })?.tracesEndpoint, 'https://c.example/otlp/traces');
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), null);
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), null);
    assert.equal(tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })?.serviceName, 'reins');
    assert.throws(() => tracingFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' }), /OTEL_EXPORTER_OTLP_ENDPOINT/);
  });
});
