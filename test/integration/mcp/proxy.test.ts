import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { isMcpRequest } from '../../../src/planes/mcp/proxy.js';
import { REFUSAL, REINS_TOKEN, UPSTREAM_SECRET, startMcpGateway, type McpHarness } from '../../fakes/mcp-upstream.js';
import { RAW_HEADERS, messagesOf, rawSession, textOf } from '../../helpers/mcp-raw.js';

async function connect(url: string, token = REINS_TOKEN): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

describe('MCP gateway: a real SDK client through Reins to a real SDK server', () => {
  let h: McpHarness;
  let client: Client;
  let transport: StreamableHTTPClientTransport;
  before(async () => {
    h = await startMcpGateway();
    ({ client, transport } = await connect(h.url));
  });
  after(async () => {
    await client.close();
    await h.close();
  });

  test('initialize answers the upstream session id, and the upstream sees Reins’ credential, never the client’s token', async () => {
    assert.ok(transport.sessionId);
    const init = h.upstream.hits.find((x) => (x.body as { method?: string } | undefined)?.method === 'initialize');
    assert.ok(init);
    const later = h.upstream.hits.filter((x) => x !== init);
    assert.ok(later.length > 0);
    for (const hit of later) assert.equal(hit.headers['mcp-session-id'], transport.sessionId);
    for (const hit of h.upstream.hits) {
      assert.equal(hit.headers.authorization, `Bearer ${UPSTREAM_SECRET}`);
      assert.ok(!JSON.stringify(hit.headers).includes(REINS_TOKEN));
    }
    assert.ok(later.some((x) => x.headers['mcp-protocol-version'] === '2025-11-25'), 'the protocol version header goes up');
  });

  test('tools/list passes through with its annotations, and the gateway learns them', async () => {
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['broken', 'delete_repo', 'echo', 'read_file', 'slow_count', 'unannotated']);
    assert.equal(tools.find((t) => t.name === 'read_file')?.annotations?.readOnlyHint, true);
    assert.deepEqual(h.gateway.cache.lookup('upstream', 'delete_repo'), {
      source: 'listed',
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
    });
    // Hints a tool leaves out take MCP's defaults.
    assert.deepEqual(h.gateway.cache.lookup('upstream', 'slow_count')?.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: false, openWorldHint: true });
  });

  test('an allowed call reaches the upstream, is decided on the learned annotations, and is reported once', async () => {
    const before = h.completed.length;
    const result = await client.callTool({ name: 'read_file', arguments: { path: '/etc/motd' } });
    assert.equal(textOf(result), 'contents of /etc/motd');
    assert.notEqual(result.isError, true);
    const decision = h.decided.at(-1);
    assert.equal(decision?.tool, 'read_file');
    assert.equal(decision?.server, 'upstream');
    assert.equal(decision?.annotationSource, 'listed');
    assert.equal(decision?.annotations.readOnlyHint, true);
    assert.equal(decision?.sessionId, transport.sessionId);
    const done = (await h.completions(before + 1)).slice(before);
    assert.equal(done.length, 1);
    assert.equal(done[0]?.call.tool, 'read_file');
    assert.equal(done[0]?.result.end, 'forwarded');
    assert.equal(done[0]?.result.status, 200);
    assert.equal(done[0]?.result.isError, false);
    assert.ok((done[0]?.result.durationMs ?? -1) >= 0);
  });

  test('a refused call answers the policy’s message as an isError result, and the upstream never gets it', async () => {
    const before = h.completed.length;
    const result = await client.callTool({ name: 'delete_repo', arguments: { repo: 'acme/prod' } });
    assert.equal(result.isError, true);
    assert.equal(textOf(result), REFUSAL);
    assert.ok(!h.upstream.toolCalls().some((c) => c.name === 'delete_repo'));
    const done = (await h.completions(before + 1)).slice(before);
    assert.equal(done.length, 1);
    assert.equal(done[0]?.result.end, 'refused');
  });

  test('a tool without annotations is decided with MCP’s defaults (destructive), so the policy refuses it', async () => {
    const result = await client.callTool({ name: 'unannotated', arguments: {} });
    assert.equal(result.isError, true);
    assert.deepEqual(h.decided.at(-1)?.annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    assert.equal(h.decided.at(-1)?.annotationSource, 'listed');
    assert.ok(!h.upstream.toolCalls().some((c) => c.name === 'unannotated'));
  });

  test('arguments reach the upstream and the policy exactly as the client sent them', async () => {
    const args = { text: 'héllo "wörld" \u2028 ✓', nested: { a: [1, 2.5, null], b: { deep: true }, empty: {} }, numbers: [0, -1, 1e21] };
    const result = await client.callTool({ name: 'echo', arguments: args });
    assert.deepEqual(JSON.parse(textOf(result)), args);
    assert.deepEqual(h.upstream.toolCalls().filter((c) => c.name === 'echo').at(-1)?.arguments, args);
    assert.deepEqual(h.decided.at(-1)?.arguments, args);
  });

  test('progress notifications stream through SSE before the result', async () => {
    const seen: Progress[] = [];
    const result = await client.callTool({ name: 'slow_count', arguments: { n: 4 } }, undefined, { onprogress: (p) => seen.push(p) });
    assert.equal(textOf(result), 'counted to 4');
    assert.deepEqual(seen.map((p) => p.progress), [1, 2, 3, 4]);
    assert.equal(seen[0]?.message, 'step 1');
  });

  test('a tool’s own error result is reported with isError', async () => {
    const before = h.completed.length;
    const result = await client.callTool({ name: 'broken', arguments: {} });
    assert.equal(result.isError, true);
    const done = (await h.completions(before + 1)).slice(before);
    assert.equal(done[0]?.result.end, 'forwarded');
    assert.equal(done[0]?.result.isError, true);
  });

  test('DELETE ends the session upstream', async () => {
    const { client: c2, transport: t2 } = await connect(h.url);
    const sid = t2.sessionId;
    assert.ok(sid);
    await t2.terminateSession();
    assert.ok(h.upstream.hits.some((x) => x.method === 'DELETE' && x.headers['mcp-session-id'] === sid));
    assert.ok(h.upstream.closedSessions.includes(sid));
    const r = await fetch(h.url, { method: 'POST', headers: { ...RAW_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }) });
    assert.equal(r.status, 404, 'the ended session is gone upstream, and the proxy says so');
    await r.text();
    await c2.close();
  });

  test('the SDK client’s GET stream for server messages passes through', () => {
    assert.ok(h.upstream.hits.some((x) => x.method === 'GET' && x.headers.accept === 'text/event-stream' && x.headers['mcp-session-id'] === transport.sessionId));
  });
});

describe('MCP gateway: the Reins credential', () => {
  let h: McpHarness;
  before(async () => {
    h = await startMcpGateway();
  });
  after(async () => h.close());

  for (const [label, authorization] of [
    ['no token', undefined],
    ['an unknown token', 'Bearer reins_agent_not_a_real_token'],
    ['a non-Bearer scheme', `Basic ${Buffer.from(`x:${REINS_TOKEN}`).toString('base64')}`],
  ] as const) {
    test(`${label}: 401 with WWW-Authenticate: Bearer and a JSON-RPC error, and nothing reaches the upstream`, async () => {
      const hits = h.upstream.hits.length;
      const headers: Record<string, string> = { accept: RAW_HEADERS.accept, 'content-type': 'application/json' };
      if (authorization) headers.authorization = authorization;
      const r = await fetch(h.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_repo', arguments: { repo: 'x' } } }) });
      assert.equal(r.status, 401);
      assert.match(r.headers.get('www-authenticate') ?? '', /^Bearer\b/);
      const body = (await r.json()) as { jsonrpc: string; error: { code: number; message: string } };
      assert.equal(body.jsonrpc, '2.0');
      assert.match(body.error.message, /Reins token/);
      assert.equal(h.upstream.hits.length, hits);
    });
  }

  test('the SDK client with a bad token fails to connect, and the upstream sees nothing', async () => {
    const hits = h.upstream.hits.length;
    await assert.rejects(connect(h.url, 'reins_agent_wrong'), /Reins token is unknown/);
    assert.equal(h.upstream.hits.length, hits);
    assert.equal(h.decided.length, 0);
  });

  test('GET and DELETE need the token too', async () => {
    for (const method of ['GET', 'DELETE']) {
      const r = await fetch(h.url, { method, headers: { accept: 'text/event-stream', 'mcp-session-id': 'whatever' } });
      assert.equal(r.status, 401);
      await r.text();
    }
    assert.equal(h.upstream.hits.length, 0);
  });
});

describe('MCP gateway: what it refuses itself', () => {
  let h: McpHarness;
  let session: Record<string, string>;
  before(async () => {
    h = await startMcpGateway();
    session = await rawSession(h.url);
  });
  after(async () => h.close());

  const cases: [string, string, number][] = [
    ['bad JSON', '{"jsonrpc":"2.0","id":1,"method":', -32700],
    ['a message without method', JSON.stringify({ jsonrpc: '2.0', id: 1, params: {} }), -32600],
    ['a wrong jsonrpc version', JSON.stringify({ jsonrpc: '1.0', id: 1, method: 'tools/list' }), -32600],
    ['an empty batch', '[]', -32600],
    ['tools/call without params.name', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { arguments: {} } }), -32602],
    ['tools/call without params', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call' }), -32602],
    ['tools/call with non-object arguments', JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: [1] } }), -32602],
    ['tools/call sent as a notification (no id)', JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'delete_repo' } }), -32600],
  ];
  for (const [label, body, code] of cases) {
    test(`${label}: HTTP 400, JSON-RPC error ${code}, nothing forwarded`, async () => {
      const hits = h.upstream.hits.length;
      const r = await fetch(h.url, { method: 'POST', headers: session, body });
      assert.equal(r.status, 400);
      const [answer] = await messagesOf(r);
      assert.equal((answer?.error as { code: number }).code, code);
      if (code === -32602) assert.equal(answer?.id, 7);
      assert.equal(h.upstream.hits.length, hits);
    });
  }

  test('a batch with one malformed member is not forwarded at all; every request in it gets an error', async () => {
    const hits = h.upstream.hits.length;
    const r = await fetch(h.url, {
      method: 'POST',
      headers: session,
      body: JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'a' } } },
        { jsonrpc: '2.0', id: 2, method: 'tools/call', params: {} },
      ]),
    });
    assert.equal(r.status, 400);
    const answers = await messagesOf(r);
    assert.deepEqual(answers.map((a) => [a.id, (a.error as { code: number }).code]), [[1, -32600], [2, -32602]]);
    assert.equal(h.upstream.hits.length, hits);
    assert.equal(h.decided.length, 0);
  });

  test('an unknown server name answers 404 with a JSON-RPC error naming the served ones', async () => {
    const r = await fetch(`${h.origin}/mcp/nope`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    assert.equal(r.status, 404);
    const body = (await r.json()) as { error: { code: number; message: string } };
    assert.match(body.error.message, /no MCP server at \/mcp\/nope; it serves \/mcp\/upstream/);
    const deeper = await fetch(`${h.origin}/mcp/upstream/extra`, { method: 'POST', headers: session, body: '{}' });
    assert.equal(deeper.status, 404);
    await deeper.text();
  });

  test('other HTTP methods answer 405 with Allow', async () => {
    const r = await fetch(h.url, { method: 'PUT', headers: session, body: '{}' });
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, POST, DELETE');
    await r.text();
  });

  test('an Mcp-Name header that disagrees with the body (revision 2026-07-28) is refused with -32020', async () => {
    const hits = h.upstream.hits.length;
    const r = await fetch(h.url, {
      method: 'POST',
      headers: { ...session, 'mcp-method': 'tools/call', 'mcp-name': 'read_file' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'delete_repo', arguments: { repo: 'x' } } }),
    });
    assert.equal(r.status, 400);
    const [answer] = await messagesOf(r);
    assert.equal((answer?.error as { code: number }).code, -32020);
    assert.equal(h.upstream.hits.length, hits);
  });

  test('matching Mcp-Method and Mcp-Name headers (base64 sentinel included) are forwarded', async () => {
    const r = await fetch(h.url, {
      method: 'POST',
      headers: { ...session, 'mcp-method': 'tools/call', 'mcp-name': `=?base64?${Buffer.from('read_file').toString('base64')}?=` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'p' } } }),
    });
    assert.equal(r.status, 200);
    const answers = await messagesOf(r);
    assert.equal(answers.find((a) => a.id === 4) !== undefined, true);
    const hit = h.upstream.hits.at(-1);
    assert.equal(hit?.headers['mcp-method'], 'tools/call');
  });

  test('isMcpRequest leaves /mcp/reins (the built-in server) to its own route', () => {
    assert.equal(isMcpRequest('/mcp/upstream'), true);
    assert.equal(isMcpRequest('/mcp/upstream?x=1'), true);
    assert.equal(isMcpRequest('/mcp/reins'), false);
    assert.equal(isMcpRequest('/mcp/reins/'), false);
    assert.equal(isMcpRequest('/llm/openai/v1/models'), false);
    assert.equal(isMcpRequest(undefined), false);
  });
});
