/**
 * Failed credentials are throttled per client address on every plane, and audited aggregated; console sign-out
 * needs the CSRF header. Through the real HTTP API (and the real egress proxy) of replicas with a small limit;
 * behind http.trustProxy so that X-Forwarded-For stands for distinct client addresses.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import type { Config } from '../../../src/config/config.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, agentWithKey, describeEachStore, developerWithToken, startTestReplica, waitFor } from '../../helpers/harness.js';

const BAD = 'reins_agent_this-key-was-never-minted-0000000';
const LIMIT = 5;

function httpConfig(limit: number, trustProxy: boolean): Config['http'] {
  return { bodyLimitBytes: 1024 * 1024, trustProxy, failedAuthLimit: limit, failedAuthWindowSeconds: 60 };
}

/** A raw request through the egress proxy with a bearer credential: plain (absolute form) or CONNECT. */
function viaProxy(egressUrl: string, token: string, connect: boolean): Promise<{ status: number; retryAfter: string | undefined; kind: string | undefined }> {
  const proxy = new URL(egressUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname,
      port: proxy.port,
      method: connect ? 'CONNECT' : 'GET',
      path: connect ? 'example.com:443' : 'http://example.com/',
      headers: { 'proxy-authorization': `Bearer ${token}` },
      agent: false,
    });
    const done = (res: http.IncomingMessage) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, kind: res.headers['x-reins-egress'] as string | undefined });
    };
    req.on('connect', (res, socket) => {
      socket.destroy();
      done(res);
    });
    req.on('response', done);
    req.on('error', reject);
    req.end();
  });
}

function assertRetryAfter(value: string | null | undefined, what: string): void {
  assert.ok(value !== null && value !== undefined && /^\d+$/.test(value), `${what}: Retry-After ${value}`);
  assert.ok(Number(value) >= 1 && Number(value) <= 60, `${what}: Retry-After ${value}`);
}

describeEachStore('failed credentials are throttled per address and audited aggregated', ({ store }) => {
  let replica: Replica;
  let proxied: Replica;
  let admin: Client;
  let anon: Client;
  let agentKey: string;
  const from = (address: string, extra: Record<string, string> = {}) => ({ headers: { 'x-forwarded-for': address, ...extra } });

  before(async () => {
    replica = await startTestReplica(store(), {
      http: httpConfig(LIMIT, true),
      mcpServers: [{ name: 'up', url: 'http://127.0.0.1:9/mcp', headers: {} }],
    });
    // The egress proxy takes the socket's address (127.0.0.1 here): its own replica, so the admin's calls stay apart.
    proxied = await startTestReplica(store(), { http: httpConfig(LIMIT, false), egress: { port: 0, deniedNetworks: [] } });
    admin = new Client(replica.url, ADMIN_TOKEN);
    anon = admin.with(null);
    agentKey = await agentWithKey(admin, 'eng/throttled');
  });
  after(async () => {
    await replica.close();
    await proxied.close();
  });

  test('control plane: bad bearer tokens get 401 up to the limit, then 429 rate_limited with Retry-After, even for a good token', async () => {
    const bad = admin.with(BAD);
    for (let i = 0; i < LIMIT; i++) assert.equal((await bad.get('/api/v1/identities', from('198.51.100.1'))).status, 401);
    const limited = await bad.get('/api/v1/identities', from('198.51.100.1'));
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limited');
    assert.match(limited.body.error.message, /too many failed authentications/);
    assertRetryAfter(limited.headers.get('retry-after'), 'control plane');
    assert.equal((await admin.get('/api/v1/identities', from('198.51.100.1'))).status, 429, 'the address waits, whatever it sends');
    assert.equal((await admin.get('/api/v1/identities', from('198.51.100.2'))).status, 200, 'a good token from another address works');
    assert.equal((await anon.get('/healthz', from('198.51.100.1'))).status, 200, 'routes without a credential are not throttled');
  });

  test('sign-in: bad tokens get 401 up to the limit, then 429', async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await anon.post('/api/v1/auth/session', { token: BAD }, from('198.51.100.3'))).status, 401);
    const limited = await anon.post('/api/v1/auth/session', { token: BAD }, from('198.51.100.3'));
    assert.equal(limited.status, 429);
    assert.equal(limited.body.error.code, 'rate_limited');
    assertRetryAfter(limited.headers.get('retry-after'), 'sign-in');
    const token = await developerWithToken(admin, 'eng/signer', 'developer');
    assert.equal((await anon.post('/api/v1/auth/session', { token }, from('198.51.100.3'))).status, 429);
    assert.equal((await anon.post('/api/v1/auth/session', { token }, from('198.51.100.30'))).status, 200);
  });

  test("LLM gateway: 401 up to the limit, then 429 in the provider's own error shape", async () => {
    const body = { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] };
    const bad = admin.with(BAD);
    for (let i = 0; i < LIMIT; i++) assert.equal((await bad.post('/llm/openai/v1/chat/completions', body, from('198.51.100.4'))).status, 401);
    const openai = await bad.post('/llm/openai/v1/chat/completions', body, from('198.51.100.4'));
    assert.equal(openai.status, 429);
    assert.deepEqual({ type: openai.body.error.type, code: openai.body.error.code }, { type: 'requests', code: 'rate_limit_exceeded' });
    assertRetryAfter(openai.headers.get('retry-after'), 'openai');
    const anthropic = await anon.post('/llm/anthropic/v1/messages', { model: 'claude-x', max_tokens: 1, messages: [] }, from('198.51.100.4', { 'x-api-key': BAD }));
    assert.equal(anthropic.status, 429);
    assert.deepEqual({ type: anthropic.body.type, error: anthropic.body.error.type }, { type: 'error', error: 'rate_limit_error' });
    assertRetryAfter(anthropic.headers.get('retry-after'), 'anthropic');
    const good = await admin.with(agentKey).post('/llm/openai/v1/chat/completions', body, from('198.51.100.40'));
    assert.ok(good.status !== 401 && good.status !== 429, `a good key from another address is not refused for its credential (got ${good.status})`);
  });

  test('MCP gateway: 401 up to the limit, then 429 with a JSON-RPC error; the built-in server too', async () => {
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
    const accept = { accept: 'application/json, text/event-stream' };
    const bad = admin.with(BAD);
    for (let i = 0; i < LIMIT; i++) assert.equal((await bad.post('/mcp/up', call, from('198.51.100.5', accept))).status, 401);
    const limited = await bad.post('/mcp/up', call, from('198.51.100.5', accept));
    assert.equal(limited.status, 429);
    assert.equal(limited.body.jsonrpc, '2.0');
    assert.match(limited.body.error.message, /too many failed authentications/i);
    assertRetryAfter(limited.headers.get('retry-after'), 'mcp');
    const builtIn = await bad.post('/mcp/reins', call, from('198.51.100.5', accept));
    assert.equal(builtIn.status, 429);
    assert.equal(builtIn.body.jsonrpc, '2.0');
    const good = await admin.with(agentKey).post('/mcp/up', call, from('198.51.100.50', accept));
    assert.ok(good.status !== 401 && good.status !== 429, `a good key from another address passes (got ${good.status})`);
  });

  test('egress proxy: 407 up to the limit, then 429 with Retry-After, plain and CONNECT', async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await viaProxy(proxied.egressUrl!, BAD, i % 2 === 0)).status, 407);
    for (const connect of [false, true]) {
      const limited = await viaProxy(proxied.egressUrl!, BAD, connect);
      assert.equal(limited.status, 429, connect ? 'CONNECT' : 'plain');
      assert.equal(limited.kind, 'rate_limited');
      assertRetryAfter(limited.retryAfter, 'egress');
    }
  });

  test('the audit log holds a bounded number of events for 200 failures: the first, then one summary when the window ends', async () => {
    // Its own replica, with a limit above 200 so that every attempt is a real failure.
    const many = await startTestReplica(store(), { http: httpConfig(1000, true), mcpServers: [{ name: 'up', url: 'http://127.0.0.1:9/mcp', headers: {} }] });
    const client = new Client(many.url, BAD);
    const address = '198.51.100.9';
    try {
      for (let i = 0; i < 200; i++) {
        const r =
          i % 3 === 0
            ? await client.get('/api/v1/identities', from(address))
            : i % 3 === 1
              ? await client.post('/llm/openai/v1/chat/completions', { model: 'm', messages: [] }, from(address))
              : await client.post('/mcp/up', { jsonrpc: '2.0', id: 1, method: 'tools/list' }, from(address));
        assert.equal(r.status, 401);
      }
    } finally {
      // Closing ends the open window: its summary is written before the audit writer drains.
      await many.close();
    }
    const events = (await admin.get('/api/v1/audit-events?action=auth.failed&limit=200')).body.items.filter((e: any) => e.data.address === address);
    assert.equal(events.length, 2, `two events for 200 failures, got ${events.length}`);
    const summary = events.find((e: any) => e.data.summary === true);
    const first = events.find((e: any) => e.data.summary === undefined);
    assert.deepEqual({ plane: first.data.plane, outcome: first.outcome, type: first.type }, { plane: 'control', outcome: 'refused', type: 'control' });
    assert.deepEqual({ failures: summary.data.failures, throttled: summary.data.throttled, planes: summary.data.planes }, { failures: 200, throttled: 0, planes: { control: 67, llm: 67, mcp: 66 } });
    assert.ok(!JSON.stringify(events).includes(BAD), 'no secret in the audit log');
  });

  test('the refusals of the throttled addresses above were audited once each, not once per attempt', async () => {
    let events: any[] = [];
    await waitFor(async () => {
      events = (await admin.get('/api/v1/audit-events?action=auth.failed&limit=200')).body.items;
      return ['198.51.100.1', '198.51.100.3', '198.51.100.4', '198.51.100.5'].every((a) => events.some((e) => e.data.address === a));
    }, 5000);
    for (const address of ['198.51.100.1', '198.51.100.3', '198.51.100.4', '198.51.100.5']) {
      assert.equal(events.filter((e) => e.data.address === address).length, 1, address);
    }
  });

  test('sign-out with the cookie needs the CSRF header; the clearing cookie keeps HttpOnly, SameSite=Strict, Path and Secure', async () => {
    const token = await developerWithToken(admin, 'eng/leaver', 'developer');
    // X-Forwarded-Proto https (trustProxy): the cookie is Secure, and so must be the one that clears it.
    const https = { 'x-forwarded-proto': 'https' };
    const signIn = await anon.post('/api/v1/auth/session', { token }, from('198.51.100.60', https));
    assert.equal(signIn.status, 200);
    const set = signIn.headers.get('set-cookie') ?? '';
    assert.match(set, /Secure/);
    const cookie = set.split(';')[0]!;
    const csrf = signIn.body.csrfToken as string;

    const without = await anon.delete('/api/v1/auth/session', from('198.51.100.60', { ...https, cookie }));
    assert.equal(without.status, 403);
    assert.equal(without.body.error.code, 'csrf_required');
    const wrong = await anon.delete('/api/v1/auth/session', from('198.51.100.60', { ...https, cookie, 'x-csrf-token': 'not-it' }));
    assert.equal(wrong.status, 403);
    assert.equal((await anon.get('/api/v1/auth/me', from('198.51.100.60', { cookie }))).status, 200, 'the session is still live');

    const out = await anon.delete('/api/v1/auth/session', from('198.51.100.60', { ...https, cookie, 'x-csrf-token': csrf }));
    assert.equal(out.status, 200);
    const cleared = out.headers.get('set-cookie') ?? '';
    assert.match(cleared, /^reins_session=;/);
    for (const attribute of [/HttpOnly/i, /SameSite=Strict/i, /Path=\//, /Secure/, /Expires=Thu, 01 Jan 1970/]) assert.match(cleared, attribute);
    assert.equal((await anon.get('/api/v1/auth/me', from('198.51.100.60', { cookie }))).status, 401, 'signed out');
    // Without a live session there is nothing to protect: clearing a stale cookie needs no header.
    assert.equal((await anon.delete('/api/v1/auth/session', from('198.51.100.60', { cookie }))).status, 200);
  });
});
