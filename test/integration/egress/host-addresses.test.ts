/**
 * The egress proxy and this host: by default an agent reaches none of this host's services (loopback, unspecified
 * and private addresses, in every spelling), and never Reins' own ports, whatever `egress.deniedNetworks` says.
 * Through real replicas' proxies, raw CONNECT and absolute-form requests.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { ProxyAgent, fetch } from 'undici';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, agentWithKey, Client, describeEachStore, enc, startTestReplica, waitFor } from '../../helpers/harness.js';
import { DEFAULT_DENIED_NETWORKS } from '../../../src/shared/networks.js';

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

/** A raw CONNECT through the proxy: the status line and the body of a refusal (undici only reports an error). */
function rawConnect(egressUrl: string, token: string, authority: string): Promise<{ status: number; body: string }> {
  const url = new URL(egressUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method: 'CONNECT', path: authority, headers: { 'proxy-authorization': `Bearer ${token}` }, agent: false });
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

/** A plain proxied request (absolute form) with a Reins token: the status, the refusal kind and the body. */
function rawGet(egressUrl: string, token: string, url: string): Promise<{ status: number; kind: string | undefined; body: string }> {
  const proxy = new URL(egressUrl);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: proxy.hostname, port: proxy.port, path: url, headers: { 'proxy-authorization': `Bearer ${token}` }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, kind: res.headers['x-reins-egress'] as string | undefined, body }));
    });
    req.on('error', reject);
  });
}

/** Every spelling of this host an agent may try: loopback, unspecified, IPv4-mapped, numeric forms, a name. */
const THIS_HOST = ['127.0.0.1', '127.1', '0x7f000001', '2130706433', '0', '0.0.0.0', '[::]', '[::1]', '[::ffff:127.0.0.1]', '[::ffff:0.0.0.0]', 'localhost'];

// An agent key must not reach Reins' control plane, or a database next to it, through the proxy.
describeEachStore("egress never reaches this host's services by default, nor Reins' own ports whatever the list", ({ store }) => {
  let defaults: Replica;
  let open: Replica;
  let admin: Client;
  let key: string;
  const ownPorts = (r: Replica) => [Number(new URL(r.url).port), Number(new URL(r.egressUrl!).port)];
  // A non-loopback address of this host, when it has one: Reins' ports are refused there too.
  const interfaceAddress = Object.values(networkInterfaces())
    .flatMap((e) => e ?? [])
    .find((e) => !e.internal && e.family === 'IPv4')?.address;
  before(async () => {
    defaults = await startTestReplica(store(), { egress: { port: 0, deniedNetworks: [...DEFAULT_DENIED_NETWORKS] } });
    // `[]`: the admin opened every network on purpose; Reins' own ports stay closed.
    open = await startTestReplica(store(), { egress: { port: 0, deniedNetworks: [] } });
    admin = new Client(defaults.url, ADMIN_TOKEN);
    key = await agentWithKey(admin, 'eng/prober');
    await admin.put(`/api/v1/identities/autonomy-tier?id=${enc('eng/prober')}`, { tier: 'T3' });
  });
  after(async () => {
    await defaults.close();
    await open.close();
  });

  test('the default list refuses the database port on loopback, a private address, ::1 and every unspecified spelling', async () => {
    const cases: [string, RegExp][] = [
      ['127.0.0.1:5432', /127\.0\.0\.1 is in 127\.0\.0\.0\/8/],
      ['localhost:5432', /localhost resolves to (127\.0\.0\.1|::1), in (127\.0\.0\.0\/8|::1\/128)/],
      ['10.1.2.3:80', /10\.1\.2\.3 is in 10\.0\.0\.0\/8/],
      ['192.168.1.1:80', /in 192\.168\.0\.0\/16/],
      ['[::1]:5432', /::1 is in ::1\/128/],
      ['0.0.0.0:5432', /0\.0\.0\.0 is in 0\.0\.0\.0\/8/],
      ['0:5432', /0\.0\.0\.0 is in 0\.0\.0\.0\/8/],
      ['[::]:5432', /:: is in ::\/128/],
      ['[::ffff:0.0.0.0]:5432', /::ffff:0:0 is in 0\.0\.0\.0\/8/],
      ['[::ffff:127.0.0.1]:5432', /::ffff:7f00:1 is in 127\.0\.0\.0\/8/],
      ['2130706433:5432', /127\.0\.0\.1 is in 127\.0\.0\.0\/8/],
    ];
    for (const [authority, says] of cases) {
      const r = await rawConnect(defaults.egressUrl!, key, authority);
      assert.equal(r.status, 403, authority);
      assert.match(r.body, says, authority);
    }
    const plain = await rawGet(defaults.egressUrl!, key, 'http://127.0.0.1:5432/');
    assert.deepEqual({ status: plain.status, kind: plain.kind }, { status: 403, kind: 'address_denied' });
  });

  test("Reins' own ports are refused in every spelling of this host, CONNECT and plain, by default and with deniedNetworks []", async () => {
    for (const replica of [defaults, open]) {
      const hosts = interfaceAddress ? [...THIS_HOST, interfaceAddress] : THIS_HOST;
      for (const port of ownPorts(replica)) {
        for (const host of hosts) {
          const tunnel = await rawConnect(replica.egressUrl!, key, `${host}:${port}`);
          assert.equal(tunnel.status, 403, `CONNECT ${host}:${port}`);
          assert.match(tunnel.body, /is Reins itself; agents may not reach Reins through its egress proxy/, `CONNECT ${host}:${port}`);
          const plain = await rawGet(replica.egressUrl!, key, `http://${host}:${port}/api/v1/identities`);
          assert.deepEqual({ status: plain.status, kind: plain.kind }, { status: 403, kind: 'address_denied' }, `GET http://${host}:${port}`);
          assert.match(plain.body, /is Reins itself/);
        }
      }
    }
  });

  test('with deniedNetworks [] loopback itself is open (the list replaces the default), and own-port refusals are audited', async () => {
    const origin = http.createServer((_req, res) => res.end('local origin'));
    const port = await listen(origin);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`, { dispatcher: new ProxyAgent({ uri: open.egressUrl!.replace('http://', `http://agent:${key}@`), proxyTunnel: false }) });
      assert.equal(await r.text(), 'local origin');
    } finally {
      origin.close();
    }
    const controlPort = ownPorts(open)[0]!;
    await rawGet(open.egressUrl!, key, `http://[::ffff:0.0.0.0]:${controlPort}/api/v1/audit-events`);
    let event: any;
    const found = await waitFor(async () => {
      const items = (await admin.get(`/api/v1/audit-events?type=egress&identity=${enc('eng/prober')}&limit=200`)).body.items as any[];
      // The policies allowed the request (its decision event); the address check refused it: the end event says so.
      event = items.find((e) => e.action === 'egress.request_end' && e.host === '::ffff:0:0' && e.data.port === controlPort);
      return event !== undefined;
    }, 30_000);
    assert.notEqual(found, -1, 'the refusal is audited');
    assert.equal(event.outcome, 'refused');
    assert.equal(event.data.end, 'address_denied');
    assert.deepEqual({ reason: event.data.refusal.reason, network: event.data.refusal.network, address: event.data.refusal.address }, { reason: 'address_denied', network: 'Reins itself', address: '::ffff:0:0' });
  });
});
