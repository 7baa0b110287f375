import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { REFUSAL, REINS_TOKEN, startMcpGateway, type McpHarness } from '../../fakes/mcp-upstream.js';
import { RAW_HEADERS, messagesOf, rawSession, textOf } from '../../helpers/mcp-raw.js';

async function connect(url: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${REINS_TOKEN}` } } });
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

const isReinsListing = (m: Record<string, unknown>) => m.method === 'tools/list' && String(m.id).startsWith('reins-tools-list-');

for (const json of [false, true]) {
  const answers = json ? 'JSON' : 'SSE';
  describe(`MCP gateway, upstream answering ${answers}: annotations of tools the client never listed`, () => {
    let h: McpHarness;
    let client: Client;
    before(async () => {
      h = await startMcpGateway({ json });
      client = await connect(h.url);
    });
    after(async () => {
      await client.close();
      await h.close();
    });

    test('a call to a tool not yet seen makes the gateway read tools/list itself, on the client’s session, before deciding', async () => {
      const result = await client.callTool({ name: 'read_file', arguments: { path: 'x' } });
      assert.equal(textOf(result), 'contents of x');
      assert.equal(h.decided.at(-1)?.annotationSource, 'listed');
      assert.equal(h.decided.at(-1)?.annotations.readOnlyHint, true);
      const listing = h.upstream.hits.filter((x) => isReinsListing((x.body ?? {}) as Record<string, unknown>));
      assert.equal(listing.length, 1);
      const callHit = h.upstream.hits.find((x) => (x.body as { method?: string } | undefined)?.method === 'tools/call');
      assert.equal(listing[0]?.headers['mcp-session-id'], callHit?.headers['mcp-session-id']);
      // Learned once: the next call to another listed tool asks nothing more.
      const refused = await client.callTool({ name: 'delete_repo', arguments: { repo: 'r' } });
      assert.equal(textOf(refused), REFUSAL);
      assert.equal(h.upstream.hits.filter((x) => isReinsListing((x.body ?? {}) as Record<string, unknown>)).length, 1);
    });

    test('a tool the upstream does not list is decided with MCP’s default annotations', async () => {
      const result = await client.callTool({ name: 'ghost', arguments: {} });
      assert.equal(result.isError, true);
      assert.equal(h.decided.at(-1)?.tool, 'ghost');
      assert.equal(h.decided.at(-1)?.annotationSource, 'unlisted');
      assert.deepEqual(h.decided.at(-1)?.annotations, { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    });

    // The answer is read after it went on to the client; what it said must still reach the call's report.
    test('a tool’s own error result and a plain result are each reported with what the result said', async () => {
      const before = h.completed.length;
      const broken = await client.callTool({ name: 'broken', arguments: {} });
      assert.equal(broken.isError, true);
      const fine = await client.callTool({ name: 'read_file', arguments: { path: 'y' } });
      assert.equal(textOf(fine), 'contents of y');
      const done = (await h.completions(before + 2)).slice(before);
      assert.deepEqual(
        done.map((d) => [d.call.tool, d.result.end, d.result.isError]),
        [
          ['broken', 'forwarded', true],
          ['read_file', 'forwarded', false],
        ],
      );
    });

    test('a batch: each tools/call is decided; refused ones are answered by Reins, the rest by the upstream', async () => {
      const session = await rawSession(h.url);
      const before = h.completed.length;
      const r = await fetch(h.url, {
        method: 'POST',
        headers: session,
        body: JSON.stringify([
          { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'read_file', arguments: { path: 'batch' } } },
          { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'delete_repo', arguments: { repo: 'batch' } } },
          { jsonrpc: '2.0', id: 'c', method: 'tools/list' },
        ]),
      });
      assert.equal(r.status, 200);
      const answers = await messagesOf(r);
      const byId = new Map(answers.map((a) => [a.id, a.result as CallToolResult & { tools?: unknown[] }]));
      assert.equal(textOf(byId.get('a')), 'contents of batch');
      assert.equal(byId.get('b')?.isError, true);
      assert.equal(textOf(byId.get('b')), REFUSAL);
      assert.equal(byId.get('c')?.tools?.length, 6);
      assert.ok(!h.upstream.toolCalls().some((c) => c.name === 'delete_repo'));
      const done = (await h.completions(before + 2)).slice(before);
      assert.deepEqual(done.map((d) => [d.call.tool, d.result.end]).sort(), [['delete_repo', 'refused'], ['read_file', 'forwarded']]);
    });
  });

  describe(`MCP gateway, upstream answering ${answers}: hideTool`, () => {
    let h: McpHarness;
    let client: Client;
    before(async () => {
      h = await startMcpGateway({ json, hideTool: (_caller, _server, _tool, a) => !a.readOnlyHint && a.destructiveHint });
      client = await connect(h.url);
    });
    after(async () => {
      await client.close();
      await h.close();
    });

    test('tools it hides are taken out of tools/list; the gateway still learned them', async () => {
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((t) => t.name).sort(), ['broken', 'echo', 'read_file', 'slow_count']);
      assert.equal(h.gateway.cache.lookup('upstream', 'delete_repo')?.source, 'listed');
    });
  });
}

describe('MCP gateway: refusals and failures on the edges', () => {
  let h: McpHarness;
  before(async () => {
    h = await startMcpGateway();
  });
  after(async () => h.close());

  test('a client that takes only SSE gets its refusal as an SSE event', async () => {
    const session = await rawSession(h.url);
    const r = await fetch(h.url, {
      method: 'POST',
      headers: { ...session, accept: 'text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'delete_repo', arguments: { repo: 'x' } } }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/event-stream/);
    const [answer] = await messagesOf(r);
    assert.deepEqual(answer, { jsonrpc: '2.0', id: 11, result: { content: [{ type: 'text', text: REFUSAL }], isError: true } });
  });

  test('a decide hook that fails answers 500 and forwards nothing', async () => {
    const failing = await startMcpGateway({
      decide: async () => {
        throw new Error('policy store down');
      },
    });
    try {
      const session = await rawSession(failing.url);
      const hits = failing.upstream.hits.length;
      const r = await fetch(failing.url, {
        method: 'POST',
        headers: session,
        body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'x' } } }),
      });
      assert.equal(r.status, 500);
      const [answer] = await messagesOf(r);
      assert.equal(answer?.id, 5);
      assert.equal((answer?.error as { code: number }).code, -32603);
      // The gateway's own tools/list went up; the call did not.
      assert.ok(failing.upstream.hits.slice(hits).every((x) => (x.body as { method?: string }).method === 'tools/list'));
      assert.equal(failing.completed.length, 0);
    } finally {
      await failing.close();
    }
  });

  test('an unreachable upstream answers 502; the call is reported upstream_unreachable, decided on default annotations', async () => {
    const down = await startMcpGateway({ upstreamUrl: 'http://127.0.0.1:9/mcp', decide: async () => ({ outcome: 'allow' }) });
    try {
      const r = await fetch(down.url, {
        method: 'POST',
        headers: { ...RAW_HEADERS, 'mcp-session-id': 's', 'mcp-protocol-version': '2025-11-25' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'read_file', arguments: { path: 'x' } } }),
      });
      assert.equal(r.status, 502);
      const body = (await r.json()) as { id: number; error: { message: string } };
      assert.equal(body.id, 8);
      assert.match(body.error.message, /could not reach the MCP server "upstream"/);
      const [done] = await down.completions(1);
      assert.equal(done?.result.end, 'upstream_unreachable');
      assert.equal(done?.result.status, 502);
      assert.equal(done?.call.annotationSource, 'unlisted');
      assert.ok(down.warnings.some((w) => /tools\/list/.test(w)));
    } finally {
      await down.close();
    }
  });
});
