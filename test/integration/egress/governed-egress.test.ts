/**
 * Egress through a Reins replica: a real HTTP client (undici ProxyAgent) through the forward proxy on egress.port
 * to local origins, plain HTTP and CONNECT to TLS. The built-in autonomy-egress-allowlist policy reads the agent's
 * tier; every connection is audited as type egress with its destination host.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';
import { ProxyAgent, fetch } from 'undici';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, startTestReplica, waitFor, WAIT_MS } from '../../helpers/harness.js';
import { DEFAULT_DENIED_NETWORKS } from '../../../src/shared/networks.js';

/** A configured list that leaves loopback open (the tests' origins live there), as an admin may choose. */
const METADATA_ONLY = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32'];

const TLS_DIR = fileURLToPath(new URL('../../fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS_DIR}ca.pem`);

function listen(server: http.Server | https.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describeEachStore('egress through Reins', ({ store }) => {
  let replica: Replica;
  let admin: Client;
  let key: string;
  let hits = 0;
  const handler = (_req: http.IncomingMessage, res: http.ServerResponse) => {
    hits++;
    res.end('hello from origin');
  };
  const plain = http.createServer(handler);
  const tls = https.createServer({ key: readFileSync(`${TLS_DIR}server-key.pem`), cert: readFileSync(`${TLS_DIR}server.pem`) }, handler);
  let plainPort = 0;
  let tlsPort = 0;
  before(async () => {
    plainPort = await listen(plain);
    tlsPort = await listen(tls);
    // The origins are on loopback, which the default list closes: this replica's list opens it on purpose.
    replica = await startTestReplica(store(), { egress: { port: 0, deniedNetworks: METADATA_ONLY } });
    admin = new Client(replica.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, 'eng/fetcher');
  });
  after(async () => {
    await replica.close();
    plain.close();
    tls.close();
  });

  // proxyTunnel false: plain http:// goes as an absolute-URI request (undici would tunnel it otherwise); https:// always tunnels.
  const agent = (token: string) =>
    new ProxyAgent({ uri: replica.egressUrl!.replace('http://', `http://agent:${token}@`), requestTls: { ca: CA }, proxyTunnel: false });
  const setTier = (tier: string) => admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/fetcher')}`, { tier });

  test('T1-T2 reach only allow-listed hosts: refused with 403 and the policy message, never reaching the origin', async () => {
    assert.ok(replica.egressUrl);
    const before = hits;
    const refused = await fetch(`http://localhost:${plainPort}/`, { dispatcher: agent(key) });
    assert.equal(refused.status, 403);
    assert.match(await refused.text(), /autonomy-egress-allowlist/);
    await assert.rejects(fetch(`https://localhost:${tlsPort}/`, { dispatcher: agent(key) }), /403|fetch failed/);
    assert.equal(hits, before);
  });

  test('at T3 the same requests go through, plain and CONNECT, each audited with its host', async () => {
    await setTier('T3');
    const r1 = await fetch(`http://localhost:${plainPort}/path`, { dispatcher: agent(key) });
    assert.equal(await r1.text(), 'hello from origin');
    const r2 = await fetch(`https://localhost:${tlsPort}/`, { dispatcher: agent(key) });
    assert.equal(await r2.text(), 'hello from origin');
    let events: any[] = [];
    await waitFor(async () => {
      events = (await admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/fetcher')}`)).body.items;
      return events.filter((e) => e.action.endsWith('_end')).length >= 2;
    }, WAIT_MS);
    // Each allowed connection: its decision when decided, its end (bytes, status) when over, joined by callId.
    const connect = events.find((e) => e.action === 'egress.connect' && e.outcome === 'ok');
    const connectEnd = events.find((e) => e.action === 'egress.connect_end');
    const request = events.find((e) => e.action === 'egress.request' && e.outcome === 'ok');
    const requestEnd = events.find((e) => e.action === 'egress.request_end');
    assert.equal(connect.host, 'localhost');
    assert.equal(connect.data.port, tlsPort);
    assert.equal(connect.data.agent.tier, 'T3');
    assert.equal(connect.data.decision, 'allow');
    assert.equal(connect.data.end, undefined, 'the decision holds no outcome');
    assert.equal(connect.callEnded, true);
    assert.equal(connectEnd.data.callId, connect.data.callId);
    assert.equal(connectEnd.host, 'localhost');
    assert.equal(connectEnd.outcome, 'ok');
    assert.equal(connectEnd.data.end, 'forwarded');
    assert.ok(connectEnd.data.bytesDown > 0);
    assert.ok(Number(connectEnd.id) > Number(connect.id), 'the end comes after the decision');
    assert.equal(request.host, 'localhost');
    assert.equal(request.data.method, 'GET');
    assert.equal(requestEnd.data.callId, request.data.callId);
    assert.equal(requestEnd.data.status, 200);
    const refusedEvent = events.find((e) => e.outcome === 'refused');
    assert.equal(refusedEvent.data.agent.tier, 'T2');
    assert.equal(refusedEvent.data.policy, 'autonomy-egress-allowlist');
    // Only egress events carry a host.
    const llm = (await admin.get('/api/v1/audit-events?type=control&limit=5')).body.items;
    assert.ok(llm.every((e: any) => e.host === null));
    await setTier('');
  });

  // Decisions are memoised by the complete policy object; none of these may be answered from a stale memo.
  test('the same connection repeated: a new policy, its change and its deletion each apply to the very next one', async () => {
    await setTier('T3');
    const get = async () => (await fetch(`http://localhost:${plainPort}/memo`, { dispatcher: agent(key) })).status;
    assert.equal(await get(), 200);
    assert.equal(await get(), 200);
    const created = await admin.post('/api/v1/policies', { name: 'no-localhost-memo', kind: 'deny', appliesTo: ['egress'], match: "object.egress.host == 'localhost'", message: 'Not here.' });
    assert.equal(created.status, 201);
    assert.equal(await get(), 403, 'a new deny policy applies to the next identical connection');
    const changed = await admin.put('/api/v1/policies/no-localhost-memo', { kind: 'deny', appliesTo: ['egress'], match: "object.egress.host == 'elsewhere'", message: 'Not there.' });
    assert.equal(changed.status, 200, JSON.stringify(changed.body));
    assert.equal(await get(), 200, 'the changed policy no longer matches');
    await admin.put('/api/v1/policies/no-localhost-memo', { kind: 'deny', appliesTo: ['egress'], match: "object.egress.host == 'localhost'", message: 'Not here.' });
    assert.equal(await get(), 403);
    assert.equal((await admin.delete('/api/v1/policies/no-localhost-memo')).status, 200);
    assert.equal(await get(), 200, 'deleted: allowed again');
    await setTier('T1');
    assert.equal(await get(), 403, 'a tier change applies to the next identical connection');
    await setTier('');
  });

  test('a missing or bad proxy credential gets 407 and reaches nothing', async () => {
    const before = hits;
    // undici surfaces a proxy's 407 as an error of its own.
    await assert.rejects(fetch(`http://localhost:${plainPort}/`, { dispatcher: agent('reins_agent_not-a-real-key-0000000000') }), (err: Error) => /407/.test(inspect(err)));
    await assert.rejects(fetch(`https://localhost:${tlsPort}/`, { dispatcher: new ProxyAgent({ uri: replica.egressUrl! }) }), (err: Error) => /407/.test(inspect(err)));
    const raw = await new Promise<number>((resolve, reject) => {
      const url = new URL(replica.egressUrl!);
      http.get({ host: url.hostname, port: url.port, path: `http://localhost:${plainPort}/`, headers: { 'proxy-authorization': 'Bearer wrong-token-000000000000000' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      }).on('error', reject);
    });
    assert.equal(raw, 407);
    assert.equal(hits, before);
  });
});

/** A raw CONNECT through the proxy: the status line and the body of a refusal (undici only reports an error). */
function rawConnect(egressUrl: string, token: string, authority: string): Promise<{ status: number; body: string }> {
  const url = new URL(egressUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'CONNECT', path: authority, headers: { 'proxy-authorization': `Bearer ${token}` } });
    // node:http hands every answer to a CONNECT to 'connect', a refusal too: its body follows on the socket.
    req.on('connect', (res, socket, head) => {
      if (res.statusCode === 200) {
        socket.destroy();
        return resolve({ status: 200, body: '' });
      }
      let body = head.toString('utf8');
      socket.on('data', (c: Buffer) => (body += c.toString('utf8')));
      socket.on('close', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

// Policies decide on the name the agent asked for; the address it resolves to is checked when connecting.
describeEachStore('egress never connects to a denied network, whatever the policy said', ({ store }) => {
  let replica: Replica;
  let defaults: Replica;
  let admin: Client;
  let key: string;
  let connections = 0;
  const origin = http.createServer((_req, res) => res.end('origin'));
  origin.on('connection', () => connections++);
  let port = 0;
  before(async () => {
    port = await listen(origin);
    // Loopback stands in for the private range an operator closes: the test's origin is there.
    replica = await startTestReplica(store(), { egress: { port: 0, deniedNetworks: ['127.0.0.0/8', '::1/128'] } });
    defaults = await startTestReplica(store(), { egress: { port: 0, deniedNetworks: [...DEFAULT_DENIED_NETWORKS] } });
    admin = new Client(replica.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, 'eng/ssrf');
    // T3: the allow-list policy lets any host through, so only the address check stands in the way.
    await admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/ssrf')}`, { tier: 'T3' });
  });
  after(async () => {
    await replica.close();
    await defaults.close();
    origin.close();
  });

  test('a tunnel to a denied address literal, or to a name resolving into a denied network, is refused with 403 and never opened', async () => {
    const literal = await rawConnect(replica.egressUrl!, key, `127.0.0.1:${port}`);
    assert.equal(literal.status, 403);
    assert.match(literal.body, /127\.0\.0\.1 is in 127\.0\.0\.0\/8, a network agents may not reach \(egress\.deniedNetworks\)/);
    const named = await rawConnect(replica.egressUrl!, key, `localhost:${port}`);
    assert.equal(named.status, 403);
    assert.match(named.body, /localhost resolves to (127\.0\.0\.1|::1), in (127\.0\.0\.0\/8|::1\/128)/);
    assert.equal(connections, 0, 'nothing reached the origin');
  });

  test('a plain request to a name resolving into a denied network is refused with 403 and audited as refused on its address', async () => {
    const refused = await fetch(`http://localhost:${port}/x`, {
      dispatcher: new ProxyAgent({ uri: replica.egressUrl!.replace('http://', `http://agent:${key}@`), proxyTunnel: false }),
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.headers.get('x-reins-egress'), 'address_denied');
    assert.match(await refused.text(), /localhost resolves to/);
    assert.equal(connections, 0);

    let events: any[] = [];
    const ends = () => events.filter((e) => e.action.endsWith('_end'));
    const found = await waitFor(async () => {
      events = (await admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/ssrf')}`)).body.items;
      return ends().length >= 3;
    }, WAIT_MS);
    assert.notEqual(found, -1, `three egress end events, got ${ends().length}`);
    // The policies allowed each (its decision event), the address check refused it (its end event).
    for (const e of ends()) {
      const decision = events.find((d) => d.data.callId === e.data.callId && !d.action.endsWith('_end'));
      assert.equal(decision.outcome, 'ok');
      assert.equal(decision.data.decision, 'allow', 'the policies allowed it');
      assert.equal(e.outcome, 'refused');
      assert.equal(e.data.end, 'address_denied');
      assert.equal(e.data.refusal.reason, 'address_denied');
      assert.match(e.data.refusal.network, /^(127\.0\.0\.0\/8|::1\/128)$/);
    }
    const request = events.find((e) => e.action === 'egress.request_end');
    assert.equal(request.host, 'localhost');
    assert.match(request.data.refusal.address, /^(127\.0\.0\.1|::1)$/);
  });

  test('by default the cloud metadata service is out of reach, and so are loopback and the private ranges', async () => {
    const metadata = await rawConnect(defaults.egressUrl!, key, '169.254.169.254:80');
    assert.equal(metadata.status, 403);
    assert.match(metadata.body, /169\.254\.169\.254 is in 169\.254\.0\.0\/16/);
    const ipv6Metadata = await rawConnect(defaults.egressUrl!, key, '[fd00:ec2::254]:80');
    assert.equal(ipv6Metadata.status, 403);
    const loopback = await rawConnect(defaults.egressUrl!, key, `127.0.0.1:${port}`);
    assert.equal(loopback.status, 403);
    assert.equal(connections, 0);
  });
});
