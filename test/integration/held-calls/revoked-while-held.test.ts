/**
 * A held MCP tool call whose credential is revoked, or whose identity is deleted, while it waits is never run:
 * with the real MCP SDK client against Reins against a real MCP SDK server. (The LLM side is in
 * test/integration/identity/deletion.test.ts.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/app/server.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { ADMIN_TOKEN, Client, agentWithKey, describeEachStore, developerWithToken, enc, startTestReplica, waitFor } from '../../helpers/harness.js';

const text = (r: Record<string, unknown>) => (r.content as { text: string }[])[0]!.text;

describeEachStore('held MCP calls whose caller went away', ({ store }) => {
  let upstream: McpUpstream;
  let replica: Replica;
  let admin: Client;
  const clients: McpClient[] = [];

  before(async () => {
    upstream = await startMcpUpstream({ json: true });
    replica = await startTestReplica(store(), { mcpServers: [{ name: 'github', url: upstream.url, headers: {} }] });
    admin = new Client(replica.url, ADMIN_TOKEN);
    const created = await admin.post('/api/v1/policies', { name: 'review-echo-gone', kind: 'approve', appliesTo: ['mcp'], match: "object.mcp.tool == 'echo'", message: 'Echo is reviewed.' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await replica.close();
    await upstream.close();
  });

  async function connect(token: string): Promise<McpClient> {
    const client = new McpClient({ name: 'agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/github', replica.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  async function pending(match: (e: any) => boolean): Promise<any> {
    let entry: any;
    const found = await waitFor(async () => {
      entry = (await admin.get('/api/v1/held-calls?state=pending')).body.items.find((e: any) => e.kind === 'mcp' && match(e));
      return entry !== undefined;
    }, 30_000);
    assert.notEqual(found, -1, 'the call was parked');
    return entry;
  }

  const ran = (t: string) => upstream.toolCalls().filter((c) => c.name === 'echo' && (c.arguments as { text: string }).text === t).length;

  test('a token revoked while its tool call waits: released, yet not run; the tool is told why', async () => {
    const token = await developerWithToken(admin, 'eng/gone-token', 'developer');
    const tokenId = (await admin.get(`/api/v1/tokens?identityId=${enc('eng/gone-token')}`)).body.items[0].id;
    const client = await connect(token);
    const call = client.callTool({ name: 'echo', arguments: { text: 'revoked meanwhile' } });
    const entry = await pending((e) => e.requester === 'eng/gone-token');
    assert.equal((await admin.delete(`/api/v1/tokens/${tokenId}`)).status, 200);
    assert.equal((await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
    const r = await call;
    assert.equal(r.isError, true);
    assert.match(text(r), /revoked/);
    assert.equal(ran('revoked meanwhile'), 0, 'never run upstream');
  });

  test('an agent deleted while its tool call waits: stopped at once, not run', async () => {
    const key = await agentWithKey(admin, 'eng/gone-bot');
    const client = await connect(key);
    const call = client.callTool({ name: 'echo', arguments: { text: 'deleted meanwhile' } });
    const entry = await pending((e) => e.agentId === 'eng/gone-bot');
    assert.equal((await admin.delete(`/api/v1/identities?id=${enc('eng/gone-bot')}`)).status, 200);
    const r = await call;
    assert.equal(r.isError, true);
    assert.match(text(r), /was deleted/);
    assert.equal((await admin.get(`/api/v1/held-calls/${entry.id}`)).body.state, 'stopped');
    assert.equal(ran('deleted meanwhile'), 0);
  });
});
