/** The built-in Reins MCP server at /mcp/reins, with the real MCP SDK client, as a developer's tool would use it. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, developerWithToken, startTestReplica } from '../../helpers/harness.js';

async function connect(base: string, token: string | null): Promise<McpClient> {
  const client = new McpClient({ name: 'test-tool', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp/reins', base), {
    requestInit: { headers: token ? { authorization: `Bearer ${token}` } : {} },
  });
  await client.connect(transport);
  return client;
}

describeEachStore('built-in Reins MCP server', ({ store }) => {
  let replica: Replica;
  let pat: string;
  let agentKey: string;
  before(async () => {
    replica = await startTestReplica(store());
    const admin = new Client(replica.url, ADMIN_TOKEN);
    pat = await developerWithToken(admin, 'eng/dana', 'developer');
    agentKey = await agentWithKey(admin, 'eng/bot');
  });
  after(async () => replica.close());

  test('a developer tool lists the request tools with their schemas and annotations', async () => {
    const client = await connect(replica.url, pat);
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name).sort(), ['get_request_status', 'request_budget_topup', 'request_model_access', 'request_policy_exception']);
    const exception = tools.find((t) => t.name === 'request_policy_exception')!;
    assert.deepEqual(Object.keys(exception.inputSchema.properties ?? {}).sort(), ['durationSeconds', 'justification', 'policy', 'projectScope']);
    assert.deepEqual(exception.inputSchema.required?.sort(), ['justification', 'policy']);
    assert.ok(!('requester' in (exception.inputSchema.properties ?? {})), 'the requester is never an argument');
    assert.equal(tools.find((t) => t.name === 'get_request_status')!.annotations?.readOnlyHint, true);
    assert.equal(exception.annotations?.readOnlyHint, false);
    await client.close();
  });

  test('a request from the tool is filed for the token\'s developer, and its status can be checked', async () => {
    const client = await connect(replica.url, pat);
    const r = await client.callTool({ name: 'request_model_access', arguments: { model: 'claude-opus-4-1', justification: 'refactor needs it' } });
    assert.notEqual(r.isError, true, JSON.stringify(r));
    const id = /request (ar_[\w-]+)/.exec((r.content as { text: string }[])[0]!.text)?.[1];
    assert.ok(id);
    const filed = (await new Client(replica.url, ADMIN_TOKEN).get(`/api/v1/access-requests/${id}`)).body;
    assert.equal(filed.requester, 'eng/dana');
    assert.equal(filed.type, 'model_access');
    assert.equal(filed.requestedModel, 'claude-opus-4-1');
    const status = await client.callTool({ name: 'get_request_status', arguments: { requestId: id } });
    assert.match((status.content as { text: string }[])[0]!.text, /waiting for an admin/);
    const bad = await client.callTool({ name: 'request_budget_topup', arguments: { amountUsd: -5, justification: 'x' } });
    assert.equal(bad.isError, true, 'arguments are validated against the schema');
    const unknown = await client.callTool({ name: 'request_policy_exception', arguments: { policy: 'no-such-policy', justification: 'x' } });
    assert.equal(unknown.isError, true);
    assert.match((unknown.content as { text: string }[])[0]!.text, /no policy named no-such-policy/);
    await client.close();
  });

  test('agent keys and missing or unknown tokens are refused', async () => {
    await assert.rejects(connect(replica.url, agentKey), /personal access token/);
    await assert.rejects(connect(replica.url, null), /401|Bearer/);
    await assert.rejects(connect(replica.url, 'reins_pat_not-a-real-token-00000000000'), /401|Bearer/);
  });

  test('the route is in the OpenAPI description', async () => {
    const doc = (await new Client(replica.url).get('/api/v1/openapi.json')).body;
    assert.ok(doc.paths['/mcp/reins']?.post);
  });
});
