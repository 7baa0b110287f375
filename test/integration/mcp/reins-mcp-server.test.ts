/** The built-in Reins MCP server at /mcp/reins, with the real MCP SDK client, as a developer's tool would use it. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/server.js';
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

  test('until the approvals workflow is enabled, a request says so as a tool error the model can read', async () => {
    const client = await connect(replica.url, pat);
    const r = await client.callTool({ name: 'request_model_access', arguments: { model: 'claude-opus-4-1', justification: 'refactor needs it' } });
    assert.equal(r.isError, true);
    assert.match((r.content as { text: string }[])[0]!.text, /approvals workflow is not enabled/);
    const bad = await client.callTool({ name: 'request_budget_topup', arguments: { amountUsd: -5, justification: 'x' } });
    assert.equal(bad.isError, true, 'arguments are validated against the schema');
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
