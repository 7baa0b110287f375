/**
 * A held MCP tool call and a client with the MCP SDK's default options: no progress token, a 60 s request timeout,
 * so nothing can keep it waiting for a person. Before that timeout Reins answers the call with an isError result
 * naming the held call and saying to call again after approval; after an admin approves, the identical call runs,
 * once. A client that asked for progress keeps the streamed wait and gets the tool's own result.
 * (gateway.mcpHeldAnswerSeconds is shortened here; its default is checked against the SDK's timeout.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Replica } from '../../../src/app/server.js';
import { loadConfig } from '../../../src/config/config.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { ADMIN_TOKEN, Client, describeEachStore, developerWithToken, startTestReplica, testConfigFor, waitFor, WAIT_MS } from '../../helpers/harness.js';

const text = (r: Record<string, unknown>) => (r.content as { text: string }[])[0]!.text;

test('the default held answer comes before the MCP SDK\'s default request timeout, with room', () => {
  const answerMs = loadConfig({}).gateway.mcpHeldAnswerSeconds * 1000;
  assert.equal(DEFAULT_REQUEST_TIMEOUT_MSEC, 60_000);
  assert.ok(answerMs <= DEFAULT_REQUEST_TIMEOUT_MSEC - 10_000, `${answerMs} ms`);
});

describeEachStore('held MCP tool call, default MCP client', ({ store }) => {
  let upstream: McpUpstream;
  let replica: Replica;
  let admin: Client;
  let bobToken: string;
  const clients: McpClient[] = [];

  async function connect(token: string, session: string): Promise<McpClient> {
    // The SDK's defaults: no timeout, no onprogress, no resetTimeoutOnProgress.
    const client = new McpClient({ name: 'coding-tool', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp/github', replica.url), { requestInit: { headers: { authorization: `Bearer ${token}`, 'x-reins-session': session } } }),
    );
    clients.push(client);
    return client;
  }
  const echoCalls = (t: string) => upstream.toolCalls().filter((c) => c.name === 'echo' && (c.arguments as { text: string }).text === t).length;
  const entryOf = async (session: string, state = 'pending') =>
    (await admin.get(`/api/v1/held-calls?state=${state}`)).body.items.find((e: any) => e.kind === 'mcp' && e.sessionId === session);

  before(async () => {
    upstream = await startMcpUpstream();
    const base = testConfigFor(store());
    replica = await startTestReplica(store(), {
      mcpServers: [{ name: 'github', url: upstream.url, headers: {} }],
      gateway: { ...base.gateway, heldKeepAliveSeconds: 0.2, mcpHeldAnswerSeconds: 1.5 },
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    bobToken = await developerWithToken(admin, 'eng/bob', 'developer');
    const created = await admin.post('/api/v1/policies', {
      name: 'review-echo',
      kind: 'approve',
      appliesTo: ['mcp'],
      match: "object.mcp.tool == 'echo'",
      message: 'Echo calls need a look from the platform team.',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await replica.close();
    await upstream.close();
  });

  test('held -> answered "held, call again" before the timeout -> approved by an admin -> the same call again runs, once', async () => {
    const client = await connect(bobToken, 'default-client');
    const args = { text: 'needs a look' };
    const first = await client.callTool({ name: 'echo', arguments: args });
    assert.equal(first.isError, true);
    const entry = await entryOf('default-client');
    assert.ok(entry, 'the call is held');
    assert.match(text(first), /^Held for approval, not run: Reins policy "review-echo"/);
    assert.ok(text(first).includes(entry.id), 'the answer names the held call');
    assert.ok(text(first).includes('Echo calls need a look from the platform team.'));
    assert.match(text(first), /Call this tool again with the same arguments after an admin approves it/);
    assert.equal(echoCalls(args.text), 0, 'nothing ran');
    assert.ok((await waitFor(async () => (await admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls === 0, WAIT_MS)) >= 0, 'the answered call left the entry');

    // Another identity (the bootstrap admin) approves it through the HTTP API.
    assert.equal((await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {})).body.state, 'released');
    assert.equal(echoCalls(args.text), 0, 'the answered call is not run by the release');

    const retry = await client.callTool({ name: 'echo', arguments: args });
    assert.notEqual(retry.isError, true, text(retry));
    assert.deepEqual(JSON.parse(text(retry)), args);
    assert.equal(echoCalls(args.text), 1, 'the retry ran upstream once');
    assert.equal((await admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls, 1, 'the retry claimed the release');
    const decided = await waitFor(
      async () => (await admin.get('/api/v1/audit-events?type=mcp')).body.items.some((e: any) => e.data?.held?.entryId === entry.id && e.data?.decision !== undefined),
      WAIT_MS,
    );
    assert.ok(decided >= 0, 'the retry\'s decision is audited with the held call');

    // The release is used up: the same call once more is held again, as a new entry.
    const third = await client.callTool({ name: 'echo', arguments: args });
    assert.equal(third.isError, true);
    assert.match(text(third), /Held for approval, not run/);
    assert.ok(!text(third).includes(entry.id), 'a new entry');
    assert.equal(echoCalls(args.text), 1);
    const again = await entryOf('default-client');
    await admin.post(`/api/v1/held-calls/${again.id}/deny`, { note: 'once was enough' });
  });

  test('a retry before the decision attaches to the pending entry; the approval answers it', async () => {
    const client = await connect(bobToken, 'early-retry');
    const args = { text: 'early retry' };
    const first = await client.callTool({ name: 'echo', arguments: args });
    assert.match(text(first), /Held for approval, not run/);
    const entry = await entryOf('early-retry');
    const retry = client.callTool({ name: 'echo', arguments: args }, undefined, { timeout: 120_000 });
    // Progress-less, so it too is answered "held" after the held answer time unless decided first: decide at once.
    assert.ok((await waitFor(async () => (await admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls === 1, WAIT_MS)) >= 0, 'the retry attached');
    await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    const r = await retry;
    if (r.isError) {
      // A loaded machine took longer than the held answer time to approve: the retry was answered "held"; the
      // approval is then kept for the next identical call.
      assert.match(text(r), /Held for approval, not run/);
      const again = await client.callTool({ name: 'echo', arguments: args });
      assert.deepEqual(JSON.parse(text(again)), args);
    } else {
      assert.deepEqual(JSON.parse(text(r)), args);
    }
    assert.equal(echoCalls(args.text), 1);
  });

  test('a client that takes only JSON gets the "held" answer as the JSON answer of its POST', async () => {
    const url = new URL('/mcp/github', replica.url);
    const headers = { authorization: `Bearer ${bobToken}`, 'x-reins-session': 'json-client', 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'json', version: '1' } } }),
    });
    await init.text();
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
    const r = await fetch(url, {
      method: 'POST',
      headers: { ...session, accept: 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { text: 'json only' } } }),
    });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    const body = (await r.json()) as any;
    assert.equal(body.id, 7);
    assert.equal(body.result.isError, true);
    assert.match(body.result.content[0].text, /^Held for approval, not run/);
    const entry = await entryOf('json-client');
    await admin.post(`/api/v1/held-calls/${entry.id}/deny`, { note: 'no' });
    assert.equal(echoCalls('json only'), 0);
  });

  test('a client that sends a progress token keeps the streamed wait and gets the result', async () => {
    const client = await connect(bobToken, 'progress-client');
    const progress: { progress: number; message?: string }[] = [];
    const call = client.callTool({ name: 'echo', arguments: { text: 'patient' } }, undefined, { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true });
    let entry: any;
    await waitFor(async () => (entry = await entryOf('progress-client')) !== undefined, WAIT_MS);
    assert.ok(entry);
    await new Promise((r) => setTimeout(r, 3000)); // twice the held answer time
    assert.equal((await admin.get(`/api/v1/held-calls/${entry.id}`)).body.attachedCalls, 1, 'still waiting on the entry');
    await admin.post(`/api/v1/held-calls/${entry.id}/approve`, {});
    const r = await call;
    assert.notEqual(r.isError, true, text(r));
    assert.deepEqual(JSON.parse(text(r)), { text: 'patient' });
    assert.ok(progress.length >= 5, `progress while held (${progress.length})`);
    assert.equal(echoCalls('patient'), 1);
  });
});
