/**
 * MCP transport security and discovery on a real replica: the Origin rule (MCP's DNS-rebinding protection) on
 * /mcp/{server} and /mcp/reins, and /.well-known/* answered with the JSON 404 (Reins publishes no OAuth metadata;
 * the console's page with 200 would send an MCP client into an OAuth flow).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Replica } from '../../../src/app/server.js';
import { refusedOrigin } from '../../../src/shared/mcp-origin.js';
import { startMcpUpstream, type McpUpstream } from '../../fakes/mcp-upstream.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, developerWithToken, startTestReplica, testConfigFor } from '../../helpers/harness.js';

const INITIALIZE = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'browser', version: '1' } } });

test('the Origin rule: absent passes, loopback and configured origins pass, anything else is refused', () => {
  const allowed = ['https://app.example.com'];
  const ok = (origin: string | undefined, list = allowed) => refusedOrigin(origin === undefined ? {} : { origin }, list) === null;
  assert.ok(ok(undefined), 'non-browser clients send no Origin');
  for (const o of ['http://localhost:6274', 'https://localhost', 'http://127.0.0.1:3000', 'http://[::1]:8080', 'http://inspector.localhost']) assert.ok(ok(o), o);
  assert.ok(ok('https://app.example.com'));
  for (const o of ['http://evil.example.com', 'https://app.example.com:444', 'http://app.example.com', 'null', 'file://', 'chrome-extension://abc', 'not a url', 'http://127.0.0.1.evil.com']) assert.ok(!ok(o), o);
  assert.ok(ok('http://evil.example.com', ['*']));
  assert.match(refusedOrigin({ origin: 'http://evil.example.com' }, [])!, /Forbidden: Origin "http:\/\/evil\.example\.com" is not allowed.*gateway\.mcpAllowedOrigins/);
});

describeEachStore('MCP transport security', ({ store }) => {
  let upstream: McpUpstream;
  let replica: Replica;
  let agentKey: string;
  let pat: string;

  before(async () => {
    upstream = await startMcpUpstream();
    const base = testConfigFor(store());
    replica = await startTestReplica(store(), {
      mcpServers: [{ name: 'github', url: upstream.url, headers: {} }],
      gateway: { ...base.gateway, mcpAllowedOrigins: ['https://agents.example.com'] },
    });
    const admin = new Client(replica.url, ADMIN_TOKEN);
    agentKey = await agentWithKey(admin, 'eng/browser-bot');
    pat = await developerWithToken(admin, 'eng/dana', 'developer');
  });
  after(async () => {
    await replica.close();
    await upstream.close();
  });

  const post = (path: string, token: string, origin?: string) =>
    fetch(new URL(path, replica.url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...(origin ? { origin } : {}) },
      body: INITIALIZE,
    });

  test('an Origin not allowed is refused 403 with a JSON-RPC error, before authentication, and nothing goes upstream', async () => {
    for (const [path, token] of [['/mcp/github', agentKey], ['/mcp/reins', pat], ['/mcp/github', 'not-a-token']] as const) {
      const hits = upstream.hits.length;
      const r = await post(path, token, 'http://evil.example.com');
      assert.equal(r.status, 403, path);
      const body = (await r.json()) as any;
      assert.equal(body.jsonrpc, '2.0');
      assert.equal(body.id, null);
      assert.match(body.error.message, /Origin "http:\/\/evil\.example\.com" is not allowed/);
      assert.equal(upstream.hits.length, hits, 'nothing reached the upstream');
    }
  });

  test('no Origin, a loopback Origin and a configured Origin pass; a real SDK client works as before', async () => {
    for (const path of ['/mcp/github', '/mcp/reins']) {
      const token = path === '/mcp/reins' ? pat : agentKey;
      for (const origin of [undefined, new URL(replica.url).origin, 'http://localhost:5173', 'https://agents.example.com']) {
        const r = await post(path, token, origin);
        assert.equal(r.status, 200, `${path} ${origin}`);
        await r.body?.cancel();
      }
    }
    const client = new McpClient({ name: 'tool', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp/github', replica.url), { requestInit: { headers: { authorization: `Bearer ${agentKey}` } } }));
    assert.ok((await client.listTools()).tools.length > 0);
    await client.close();
  });

  test('/.well-known/* answers the JSON 404, not the console', async () => {
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp/github', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const r = await fetch(new URL(path, replica.url));
      assert.equal(r.status, 404, path);
      assert.match(r.headers.get('content-type') ?? '', /application\/json/, path);
      const body = (await r.json()) as any;
      assert.equal(typeof body.error?.message, 'string', path);
    }
  });
});
