/**
 * MCP tool calls governed end to end: the real MCP SDK client -> a Reins replica -> a real MCP SDK server. The
 * built-in autonomy-tool-approval policy reads the tool's annotations from the upstream's tools/list and the
 * agent's tier at that moment; every decided call is audited as type mcp, without a host.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/app/server.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, startTestReplica, waitFor } from '../../helpers/harness.js';

async function connect(base: string, token: string): Promise<McpClient> {
  const client = new McpClient({ name: 'agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/github', base), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

const text = (r: Record<string, unknown>) => (r.content as { text: string }[])[0]!.text;

describeEachStore('MCP tool calls through Reins', ({ store }) => {
  let upstream: McpUpstream;
  let replica: Replica;
  let admin: Client;
  let key: string;
  before(async () => {
    upstream = await startMcpUpstream();
    replica = await startTestReplica(store(), {
      mcpServers: [{ name: 'github', url: upstream.url, headers: { authorization: 'Bearer upstream-api-key-held-by-reins' } }],
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, 'eng/coder');
  });
  after(async () => {
    await replica.close();
    await upstream.close();
  });

  const setTier = (tier: string) => admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/coder')}`, { tier });

  async function heldThenDenied<T>(call: () => Promise<T>): Promise<T> {
    const pending = call();
    // A refusal can reach the caller before the deny request's answer does: handled now, returned below.
    pending.catch(() => {});
    let entry: any;
    await waitFor(async () => {
      entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.kind === 'mcp');
      return entry !== undefined;
    }, 10_000);
    assert.ok(entry, 'the call was parked');
    assert.equal(entry.policyName, 'autonomy-tool-approval');
    await admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'not today' });
    return pending;
  }

  test('autonomy-tool-approval by tier: read-only always runs; destructive needs T4; unannotated counts as destructive', async () => {
    const expectations: [string, Record<string, unknown>, Record<string, boolean>][] = [
      ['read_file', { path: 'README.md' }, { T1: true, T2: true, T3: true, T4: true }],
      ['echo', { text: 'hi' }, { T1: false, T2: true, T3: true, T4: true }],
      ['delete_repo', { repo: 'x' }, { T1: false, T2: false, T3: false, T4: true }],
      ['unannotated', {}, { T1: false, T2: false, T3: false, T4: true }],
    ];
    const client = await connect(replica.url, key);
    for (const tier of ['T1', 'T2', 'T3', 'T4']) {
      await setTier(tier);
      for (const [tool, args, allowed] of expectations) {
        const before = upstream.toolCalls().length;
        // A held call is parked until someone decides: here an admin stops it, as a reviewer would.
        const r = allowed[tier] ? await client.callTool({ name: tool, arguments: args }) : await heldThenDenied(() => client.callTool({ name: tool, arguments: args }));
        if (allowed[tier]) {
          assert.notEqual(r.isError, true, `${tool} at ${tier}: ${text(r)}`);
          assert.equal(upstream.toolCalls().length, before + 1);
        } else {
          assert.equal(r.isError, true, `${tool} at ${tier} should be held`);
          assert.match(text(r), /autonomy-tool-approval/);
          assert.equal(upstream.toolCalls().length, before, 'nothing reached the upstream');
        }
      }
    }
    await client.close();
    await setTier('');
  });

  test('a held tool call released by an admin runs on the upstream and answers the client', async () => {
    await setTier('T1');
    const client = await connect(replica.url, key);
    const before = upstream.toolCalls().length;
    const pending = client.callTool({ name: 'echo', arguments: { text: 'after review' } });
    let entry: any;
    await waitFor(async () => {
      entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.kind === 'mcp' && e.tool === 'github/echo');
      return entry !== undefined;
    }, 10_000);
    assert.equal(upstream.toolCalls().length, before, 'nothing runs while held');
    await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    const r = await pending;
    assert.notEqual(r.isError, true);
    assert.deepEqual(JSON.parse(text(r)), { text: 'after review' });
    assert.equal(upstream.toolCalls().length, before + 1);
    await client.close();
    await setTier('');
  });

  test('arguments reach the upstream unchanged; each decided call is audited as mcp with the tier, no host', async () => {
    await setTier('T3');
    const client = await connect(replica.url, key);
    const args = { text: 'héllo', nested: { a: [1, 2.5, null], b: { c: true } }, numbers: [0, -1, 1e21] };
    const r = await client.callTool({ name: 'echo', arguments: args });
    assert.deepEqual(JSON.parse(text(r)), args);
    assert.deepEqual(upstream.toolCalls().at(-1)?.arguments, args);
    let event: any;
    let end: any;
    await waitFor(async () => {
      const items = (await admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/coder')}`)).body.items;
      event = items.find((e: any) => e.action === 'mcp.tool_call' && e.data.tool === 'echo' && e.data.agent?.tier === 'T3');
      end = event && items.find((e: any) => e.action === 'mcp.tool_call_end' && e.data.callId === event.data.callId);
      return end !== undefined;
    }, 5000);
    // The decision when decided, the end when the answer is done, joined by callId.
    assert.equal(event.host, null);
    assert.equal(event.data.server, 'github');
    assert.equal(event.data.decision, 'allow');
    assert.equal(event.data.end, undefined);
    assert.equal(event.callEnded, true);
    assert.equal(end.host, null);
    assert.equal(end.outcome, 'ok');
    assert.equal(end.data.tool, 'echo');
    assert.equal(end.data.end, 'forwarded');
    assert.equal(end.data.isError, false);
    // A held call a reviewer stopped: the hold recorded when it was parked, the refusal with its end.
    const items = (await admin.get(`/api/v1/audit-events?type=mcp&identity=${enc('eng/coder')}&limit=500`)).body.items;
    const stopped = items.find((e: any) => e.action === 'mcp.tool_call_end' && e.outcome === 'refused');
    assert.equal(stopped.data.held.outcome, 'stopped');
    assert.equal(stopped.data.refusal.reason, 'policy');
    assert.equal(stopped.data.end, 'refused');
    const hold = items.find((e: any) => e.action === 'mcp.tool_call' && e.data.callId === stopped.data.callId);
    assert.equal(hold.data.policy, 'autonomy-tool-approval');
    assert.equal(hold.data.decision, 'approve');
    assert.equal(hold.data.held.entryId, stopped.data.held.entryId);
    assert.equal(hold.callEnded, true);
    await client.close();
    await setTier('');
  });

  test('a missing or unknown token never reaches the upstream', async () => {
    const hits = upstream.hits.length;
    const r = await fetch(new URL('/mcp/github', replica.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: 'Bearer reins_agent_unknown-000000000000000' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_repo', arguments: { repo: 'x' } } }),
    });
    assert.equal(r.status, 401);
    assert.equal(upstream.hits.length, hits);
  });
});

describeEachStore('MCP tools/list hiding (gateway.hideDeniedTools)', ({ store }) => {
  let upstream: McpUpstream;
  let replica: Replica;
  let key: string;
  before(async () => {
    upstream = await startMcpUpstream();
    const base = await startTestReplica(store(), { mcpServers: [{ name: 'github', url: upstream.url, headers: {} }] });
    replica = base;
    const admin = new Client(replica.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, 'eng/lister');
    await admin.post('/api/v1/policies', { name: 'no-repo-deletes', kind: 'deny', appliesTo: ['mcp'], match: "object.mcp.tool == 'delete_repo'", message: 'Repositories are deleted by people.' });
    await admin.post('/api/v1/policies', { name: 'no-echo-of-secrets', kind: 'deny', appliesTo: ['mcp'], match: "object.mcp.tool == 'echo' && object.mcp.arguments.text == 'secret'", message: 'No.' });
  });
  after(async () => {
    await replica.close();
    await upstream.close();
  });

  test('off by default: every tool is listed, and a denied call is still refused', async () => {
    const client = await connect(replica.url, key);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes('delete_repo'));
    const r = await client.callTool({ name: 'delete_repo', arguments: { repo: 'x' } });
    assert.equal(r.isError, true);
    await client.close();
  });

  test('on: a tool the policies always refuse is hidden; one refused only for some arguments stays', async () => {
    await replica.close();
    replica = await startTestReplica(store(), {
      mcpServers: [{ name: 'github', url: upstream.url, headers: {} }],
      gateway: { auditQueue: 20_000, rulesRefreshSeconds: 30, hideDeniedTools: true, heldKeepAliveSeconds: 10, mcpAllowedOrigins: [], mcpHeldAnswerSeconds: 45 },
    });
    const client = await connect(replica.url, key);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(!names.includes('delete_repo'), names.join(', '));
    assert.ok(names.includes('echo') && names.includes('read_file'));
    const r = await client.callTool({ name: 'delete_repo', arguments: { repo: 'x' } });
    assert.equal(r.isError, true, 'hidden is not allowed: a call is still decided');
    await client.close();
  });
});
