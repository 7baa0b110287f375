import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { ProxyAgent, fetch } from 'undici';
import { createEgressProxy, type EgressProxy, type EgressRequest, type EgressResult } from '../../../src/planes/egress/proxy.js';
import { unusedPort } from '../../helpers/ports.js';

const TLS_DIR = fileURLToPath(new URL('../../fixtures/tls/', import.meta.url));
const CA = readFileSync(`${TLS_DIR}ca.pem`);
const TOKEN = 'reins-egress-test-token';
const BASIC = `Basic ${Buffer.from(`agent:${TOKEN}`).toString('base64')}`;
const BEARER = `Bearer ${TOKEN}`;

interface Caller {
  tokenId: string;
}
interface Done {
  request: EgressRequest<Caller>;
  result: EgressResult;
}
interface Hit {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** A local origin that records what reached it: requests and raw TCP connections. */
class Origin {
  hits: Hit[] = [];
  connections = 0;
  /** Resolved by /hold-release; /hold waits on it after its first chunk. */
  release: () => void = () => undefined;
  /** Resolved when /upload-probe has received its first request chunk. */
  firstUploadChunk: Promise<void> = Promise.resolve();
  private gotFirstChunk: () => void = () => undefined;
  constructor(readonly server: http.Server | https.Server) {
    server.on('connection', () => (this.connections += 1));
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.serve(req, res));
  }
  armUploadProbe(): void {
    this.firstUploadChunk = new Promise((resolve) => (this.gotFirstChunk = resolve));
  }
  async listen(host = '127.0.0.1'): Promise<number> {
    this.server.listen(0, host);
    await once(this.server, 'listening');
    return (this.server.address() as AddressInfo).port;
  }
  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
  private serve(req: IncomingMessage, res: ServerResponse): void {
    this.hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://origin');
    if (url.pathname === '/big') {
      const total = Number(url.searchParams.get('n'));
      const chunk = Buffer.alloc(64 * 1024, 'x');
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          const n = Math.min(chunk.length, total - sent);
          sent += n;
          if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
      return;
    }
    if (url.pathname === '/hold') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first;');
      new Promise<void>((resolve) => (this.release = resolve)).then(() => res.end('last'));
      return;
    }
    if (url.pathname === '/cookies') {
      res.writeHead(200, [['Set-Cookie', 'a=1'], ['Set-Cookie', 'b=2'], ['Content-Length', '2']].flat());
      res.end('ok');
      return;
    }
    const hash = createHash('sha256');
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      if (size === 0 && url.pathname === '/upload-probe') this.gotFirstChunk();
      size += chunk.length;
      hash.update(chunk);
    });
    req.on('end', () => {
      const body = JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, size, sha256: hash.digest('hex') });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
  }
}

interface Harness {
  proxy: EgressProxy;
  proxyPort: number;
  proxyUrl: string;
  origin: Origin;
  originPort: number;
  tlsOrigin: Origin;
  tlsPort: number;
  deniedOrigin: Origin;
  deniedPort: number;
  closedPort: number;
  origin6: Origin | null;
  origin6Port: number;
  decided: EgressRequest<Caller>[];
  completed: Done[];
  authenticated: string[];
  completions(n: number): Promise<Done[]>;
  close(): Promise<void>;
}

async function startHarness(): Promise<Harness> {
  const origin = new Origin(http.createServer());
  const originPort = await origin.listen();
  const tlsOrigin = new Origin(https.createServer({ key: readFileSync(`${TLS_DIR}server-key.pem`), cert: readFileSync(`${TLS_DIR}server.pem`) }));
  const tlsPort = await tlsOrigin.listen();
  const deniedOrigin = new Origin(http.createServer());
  const deniedPort = await deniedOrigin.listen();
  const closedPort = await unusedPort();
  let origin6: Origin | null = new Origin(http.createServer());
  let origin6Port = 0;
  try {
    origin6Port = await origin6.listen('::1');
  } catch {
    origin6 = null;
  }

  const decided: EgressRequest<Caller>[] = [];
  const completed: Done[] = [];
  const authenticated: string[] = [];
  const proxy = createEgressProxy<Caller>(
    {
      async authenticate({ secret }) {
        authenticated.push(secret);
        return secret === TOKEN ? { tokenId: 'tok_1' } : null;
      },
      async decide(request) {
        decided.push(request);
        // A slow policy, for clients that leave while it decides.
        if (request.host === '127.0.0.2') await new Promise((resolve) => setTimeout(resolve, 100));
        if (request.host === 'blocked.test') return { outcome: 'deny', message: 'egress to blocked.test is denied by policy "no-blocked"; ask an admin for an exception' };
        if (request.port === deniedPort) return { outcome: 'deny', message: `egress to port ${deniedPort} is denied by policy "no-port"` };
        return { outcome: 'allow' };
      },
      completed(request, result) {
        completed.push({ request, result });
      },
    },
    { connectTimeoutMs: 2_000 },
  );
  const address = await proxy.listen(0, '127.0.0.1');
  return {
    proxy,
    proxyPort: address.port,
    proxyUrl: `http://127.0.0.1:${address.port}`,
    origin,
    originPort,
    tlsOrigin,
    tlsPort,
    deniedOrigin,
    deniedPort,
    closedPort,
    origin6,
    origin6Port,
    decided,
    completed,
    authenticated,
    async completions(n: number): Promise<Done[]> {
      const deadline = Date.now() + 5_000;
      while (completed.length < n) {
        if (Date.now() > deadline) throw new Error(`expected ${n} completed() calls, got ${completed.length}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return completed;
    },
    async close() {
      await proxy.close();
      await Promise.all([origin.close(), tlsOrigin.close(), deniedOrigin.close(), origin6?.close()]);
    },
  };
}

/** A raw HTTP/1.1 exchange on a fresh socket: the whole answer as text (the proxy closes after its own answers). */
async function rawExchange(port: number, text: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  socket.write(text);
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('utf8');
}

/** Sends a request through the proxy in absolute form with Node's http client. */
function viaProxy(h: Harness, target: string, opts: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | string; agent?: http.Agent } = {}) {
  return new Promise<{ res: IncomingMessage; body: string }>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: h.proxyPort, method: opts.method ?? 'GET', path: target, headers: { 'proxy-authorization': BASIC, ...opts.headers }, agent: opts.agent ?? false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ res, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Opens a CONNECT tunnel with Node's http client; the answer's status, headers and body (when refused). */
function openTunnel(h: Harness, target: string, headers: http.OutgoingHttpHeaders = { 'proxy-authorization': BASIC }) {
  return new Promise<{ res: IncomingMessage; socket: net.Socket; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: h.proxyPort, method: 'CONNECT', path: target, headers, agent: false });
    req.on('connect', (res: IncomingMessage, socket: net.Socket, head: Buffer) => {
      if (res.statusCode === 200) return resolve({ res, socket, body: '' });
      // A refusal's body may have arrived with its head.
      const chunks: Buffer[] = [head];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('close', () => resolve({ res, socket, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

function curl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('curl', ['-sS', '--max-time', '10', ...args], (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

const hasCurl = await new Promise<boolean>((resolve) => execFile('curl', ['--version'], (err) => resolve(!err)));

describe('egress proxy with real clients', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => h.close());

  test('undici ProxyAgent: a plain http:// request is forwarded in absolute form, Host from the URI, token not forwarded', async () => {
    const before = h.completed.length;
    const agent = new ProxyAgent({ uri: `http://agent:${TOKEN}@127.0.0.1:${h.proxyPort}`, proxyTunnel: false });
    try {
      const r = await fetch(`http://127.0.0.1:${h.originPort}/echo?x=1`, { dispatcher: agent, method: 'POST', body: 'hello origin' });
      assert.equal(r.status, 200);
      const body = (await r.json()) as { method: string; url: string; host: string; size: number };
      assert.deepEqual({ method: body.method, url: body.url, host: body.host, size: body.size }, { method: 'POST', url: '/echo?x=1', host: `127.0.0.1:${h.originPort}`, size: 12 });
      const hit = h.origin.hits.at(-1);
      assert.equal(hit?.headers['proxy-authorization'], undefined);
      assert.equal(hit?.headers['proxy-connection'], undefined);
    } finally {
      await agent.close();
    }
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.equal(h.completed.length, before + 1);
    assert.deepEqual(done?.request, { caller: { tokenId: 'tok_1' }, host: '127.0.0.1', port: h.originPort, scheme: 'http', method: 'POST' });
    assert.equal(done?.result.status, 200);
    assert.equal(done?.result.end, 'forwarded');
    assert.equal(done?.result.bytesUp, 12);
    assert.ok((done?.result.bytesDown ?? 0) > 0);
  });

  test('undici ProxyAgent: a 16 MiB upload and a 16 MiB download stream through, byte counts in completed()', async () => {
    const size = 16 * 1024 * 1024;
    const agent = new ProxyAgent({ uri: `http://127.0.0.1:${h.proxyPort}`, token: BASIC, proxyTunnel: false });
    try {
      const chunk = Buffer.alloc(256 * 1024, 7);
      const expected = createHash('sha256');
      for (let i = 0; i < size / chunk.length; i++) expected.update(chunk);
      const body = new ReadableStream<Uint8Array>({
        start() {},
        pull: (() => {
          let sent = 0;
          return (controller: ReadableStreamDefaultController<Uint8Array>) => {
            if (sent >= size) return controller.close();
            sent += chunk.length;
            controller.enqueue(chunk);
          };
        })(),
      });
      let before = h.completed.length;
      const up = await fetch(`http://127.0.0.1:${h.originPort}/upload`, { dispatcher: agent, method: 'PUT', body, duplex: 'half' });
      const echoed = (await up.json()) as { size: number; sha256: string };
      assert.equal(echoed.size, size);
      assert.equal(echoed.sha256, expected.digest('hex'));
      let done = (await h.completions(before + 1))[before];
      assert.equal(done?.result.bytesUp, size);

      before = h.completed.length;
      const down = await fetch(`http://127.0.0.1:${h.originPort}/big?n=${size}`, { dispatcher: agent });
      assert.equal(down.headers.get('content-length'), String(size));
      assert.equal((await down.arrayBuffer()).byteLength, size);
      done = (await h.completions(before + 1))[before];
      assert.equal(done?.result.bytesDown, size);
      assert.equal(done?.result.end, 'forwarded');
    } finally {
      await agent.close();
    }
  });

  test('undici ProxyAgent: https:// goes through a CONNECT tunnel with the test CA trusted; completed() covers the tunnel', async () => {
    const before = h.completed.length;
    const agent = new ProxyAgent({ uri: `http://agent:${TOKEN}@127.0.0.1:${h.proxyPort}`, requestTls: { ca: CA } });
    try {
      const r = await fetch(`https://localhost:${h.tlsPort}/echo`, { dispatcher: agent, method: 'POST', body: 'secret inside TLS' });
      assert.equal(r.status, 200);
      const body = (await r.json()) as { size: number; host: string };
      assert.equal(body.size, 17);
      assert.equal(body.host, `localhost:${h.tlsPort}`);
      const again = await fetch(`https://localhost:${h.tlsPort}/echo`, { dispatcher: agent });
      assert.equal(again.status, 200);
      await again.arrayBuffer();
    } finally {
      // completed() comes when a tunnel closes, not per request inside it.
      await agent.close();
    }
    // undici may open a second tunnel for the second request (with a resumed TLS session); each is one governed connection.
    const tunnels = (await h.completions(before + 1)).slice(before);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(h.decided.filter((d) => d.method === 'CONNECT').length, h.completed.length - before);
    for (const done of tunnels) {
      assert.deepEqual(done.request, { caller: { tokenId: 'tok_1' }, host: 'localhost', port: h.tlsPort, scheme: 'https', method: 'CONNECT' });
      assert.equal(done.result.status, 200);
      assert.equal(done.result.end, 'forwarded');
    }
    // TLS handshakes and records: well over the plaintext bytes each way.
    const up = tunnels.reduce((n, d) => n + d.result.bytesUp, 0);
    const down = tunnels.reduce((n, d) => n + d.result.bytesDown, 0);
    assert.ok(up > 500, `bytesUp ${up}`);
    assert.ok(down > 1500, `bytesDown ${down}`);
  });

  test('node https.request inside a tunnel opened with http.request({ method: "CONNECT" }), Bearer credential', async () => {
    const before = h.completed.length;
    const { res, socket } = await openTunnel(h, `localhost:${h.tlsPort}`, { 'proxy-authorization': BEARER, host: `localhost:${h.tlsPort}` });
    assert.equal(res.statusCode, 200);
    const answer = await new Promise<string>((resolve, reject) => {
      const req = https.request(
        {
          host: 'localhost',
          port: h.tlsPort,
          path: '/echo',
          // No agent: the request runs on the TLS socket made here, inside the tunnel.
          createConnection: () => tls.connect({ socket, servername: 'localhost', ca: CA }),
        },
        (r) => {
          let text = '';
          r.setEncoding('utf8');
          r.on('data', (c: string) => (text += c));
          r.on('end', () => resolve(text));
        },
      );
      req.on('error', reject);
      req.end();
    });
    assert.equal((JSON.parse(answer) as { method: string }).method, 'GET');
    socket.destroy();
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.equal(done?.request.method, 'CONNECT');
    assert.equal(done?.request.host, 'localhost');
    assert.equal(done?.result.end, 'forwarded');
  });

  test('curl -x with the token as proxy password: https through CONNECT and plain http', { skip: !hasCurl && 'curl not installed' }, async () => {
    const before = h.completed.length;
    const proxyArg = `http://agent:${TOKEN}@127.0.0.1:${h.proxyPort}`;
    const tlsRun = await curl(['-x', proxyArg, '--cacert', `${TLS_DIR}ca.pem`, `https://localhost:${h.tlsPort}/echo`]);
    assert.equal(tlsRun.code, 0, tlsRun.stderr);
    assert.equal((JSON.parse(tlsRun.stdout) as { method: string }).method, 'GET');
    const plain = await curl(['-x', proxyArg, '--data-binary', 'from curl', `http://127.0.0.1:${h.originPort}/echo`]);
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal((JSON.parse(plain.stdout) as { size: number }).size, 9);
    const done = (await h.completions(before + 2)).slice(before);
    assert.deepEqual(done.map((d) => [d.request.scheme, d.request.method, d.result.end]).sort(), [
      ['http', 'POST', 'forwarded'],
      ['https', 'CONNECT', 'forwarded'],
    ]);
  });

  test('curl with a wrong token gets 407 for a tunnel and for plain http, and nothing reaches the origin', { skip: !hasCurl && 'curl not installed' }, async () => {
    const connections = h.tlsOrigin.connections + h.origin.connections;
    const completed = h.completed.length;
    const proxyArg = `http://agent:wrong@127.0.0.1:${h.proxyPort}`;
    const tlsRun = await curl(['-x', proxyArg, '--cacert', `${TLS_DIR}ca.pem`, `https://localhost:${h.tlsPort}/`]);
    assert.notEqual(tlsRun.code, 0);
    assert.match(tlsRun.stderr, /407/);
    const plain = await curl(['-x', proxyArg, '-w', '%{http_code}', '-o', '/dev/null', `http://127.0.0.1:${h.originPort}/echo`]);
    assert.equal(plain.stdout, '407');
    assert.equal(h.tlsOrigin.connections + h.origin.connections, connections);
    assert.equal(h.completed.length, completed);
  });

  test('curl to a denied host sees 403 for the tunnel', { skip: !hasCurl && 'curl not installed' }, async () => {
    const r = await curl(['-x', `http://agent:${TOKEN}@127.0.0.1:${h.proxyPort}`, 'https://blocked.test/']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /403/);
  });
});

describe('egress proxy refusals: nothing is contacted before decide says allow', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => h.close());

  test('a denied plain request answers 403 with the policy message as text, the origin never sees it', async () => {
    const before = h.completed.length;
    const { res, body } = await viaProxy(h, `http://127.0.0.1:${h.deniedPort}/echo`, { method: 'POST', body: 'x'.repeat(1000) });
    assert.equal(res.statusCode, 403);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.equal(body, `egress to port ${h.deniedPort} is denied by policy "no-port"\n`);
    assert.equal(h.deniedOrigin.connections, 0);
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.deepEqual(done?.result.end, 'refused');
    assert.equal(done?.result.status, 403);
    assert.equal(done?.result.bytesUp, 0);
  });

  test('a denied CONNECT answers 403 with the message before any tunnel; undici fetch fails with the proxy status', async () => {
    const before = h.completed.length;
    const { res, body } = await openTunnel(h, `127.0.0.1:${h.deniedPort}`);
    assert.equal(res.statusCode, 403);
    assert.equal(body, `egress to port ${h.deniedPort} is denied by policy "no-port"\n`);
    const agent = new ProxyAgent({ uri: `http://agent:${TOKEN}@127.0.0.1:${h.proxyPort}` });
    try {
      await assert.rejects(fetch('https://blocked.test/', { dispatcher: agent }), (err: Error & { cause?: Error & { cause?: Error } }) => /\(403\) !== 200/.test(String(err.cause?.cause?.message)));
    } finally {
      await agent.close();
    }
    assert.equal(h.deniedOrigin.connections, 0);
    const done = (await h.completions(before + 2)).slice(before);
    assert.deepEqual(
      done.map((d) => [d.request.host, d.request.method, d.result.end, d.result.status]),
      [
        ['127.0.0.1', 'CONNECT', 'refused', 403],
        ['blocked.test', 'CONNECT', 'refused', 403],
      ],
    );
  });

  test('a host is compared in canonical form: CONNECT BLOCKED.TEST.:443 is refused like blocked.test', async () => {
    const { res } = await openTunnel(h, 'BLOCKED.TEST.:443');
    assert.equal(res.statusCode, 403);
    assert.equal(h.decided.at(-1)?.host, 'blocked.test');
  });

  for (const [name, headers] of [
    ['no Proxy-Authorization', {}],
    ['an unknown token (Basic)', { 'proxy-authorization': `Basic ${Buffer.from('agent:nope').toString('base64')}` }],
    ['an unknown token (Bearer)', { 'proxy-authorization': 'Bearer nope' }],
    ['an Authorization header instead of Proxy-Authorization', { authorization: BEARER }],
  ] as const) {
    test(`${name}: 407 with Proxy-Authenticate, for plain http and CONNECT, nothing contacted or decided`, async () => {
      const decided = h.decided.length;
      const connections = h.origin.connections + h.tlsOrigin.connections;
      const plain = await new Promise<{ res: IncomingMessage; body: string }>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: h.proxyPort, path: `http://127.0.0.1:${h.originPort}/echo`, headers, agent: false }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ res, body }));
        });
        req.on('error', reject);
        req.end();
      });
      assert.equal(plain.res.statusCode, 407);
      assert.equal(plain.res.headers['proxy-authenticate'], 'Basic realm="reins"');
      assert.match(plain.body, /Reins/);
      const tunnel = await openTunnel(h, `localhost:${h.tlsPort}`, headers);
      assert.equal(tunnel.res.statusCode, 407);
      assert.equal(tunnel.res.headers['proxy-authenticate'], 'Basic realm="reins"');
      assert.equal(h.decided.length, decided);
      assert.equal(h.origin.connections + h.tlsOrigin.connections, connections);
    });
  }

  test('the token works as Basic password, as Basic user with an empty password, and as Bearer', async () => {
    const before = h.completed.length;
    for (const credential of [BASIC, `Basic ${Buffer.from(`${TOKEN}:`).toString('base64')}`, BEARER, `bearer ${TOKEN}`]) {
      const { res } = await viaProxy(h, `http://127.0.0.1:${h.originPort}/echo`, { headers: { 'proxy-authorization': credential } });
      assert.equal(res.statusCode, 200, credential);
      const tunnel = await openTunnel(h, `localhost:${h.tlsPort}`, { 'proxy-authorization': credential });
      assert.equal(tunnel.res.statusCode, 200, credential);
      tunnel.socket.destroy();
    }
    const done = (await h.completions(before + 8)).slice(before);
    assert.ok(done.every((d) => d.request.caller.tokenId === 'tok_1' && d.result.end === 'forwarded'));
  });

  test('an unreachable origin answers 502 as text, for plain http and CONNECT; completed() says upstream_unreachable once each', async () => {
    const before = h.completed.length;
    const { res, body } = await viaProxy(h, `http://127.0.0.1:${h.closedPort}/x`);
    assert.equal(res.statusCode, 502);
    assert.match(String(res.headers['content-type']), /^text\/plain/);
    assert.match(body, new RegExp(`could not reach 127\\.0\\.0\\.1:${h.closedPort}: .*ECONNREFUSED`));
    const tunnel = await openTunnel(h, `127.0.0.1:${h.closedPort}`);
    assert.equal(tunnel.res.statusCode, 502);
    assert.match(tunnel.body, /ECONNREFUSED/);
    const done = (await h.completions(before + 2)).slice(before);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(h.completed.length, before + 2);
    assert.deepEqual(
      done.map((d) => [d.request.method, d.request.port, d.result.status, d.result.end]),
      [
        ['GET', h.closedPort, 502, 'upstream_unreachable'],
        ['CONNECT', h.closedPort, 502, 'upstream_unreachable'],
      ],
    );
  });
});

describe('egress proxy: HTTP semantics', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(async () => h.close());

  test('keep-alive: several requests (one refused) on one client connection', async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const sockets = new Set<net.Socket>();
    try {
      const before = h.completed.length;
      for (const target of [`http://127.0.0.1:${h.originPort}/a`, `http://127.0.0.1:${h.deniedPort}/b`, `http://127.0.0.1:${h.originPort}/c`]) {
        const { res } = await viaProxy(h, target, { agent });
        sockets.add(res.socket);
      }
      assert.equal(sockets.size, 1);
      const done = (await h.completions(before + 3)).slice(before);
      assert.deepEqual(done.map((d) => d.result.status), [200, 403, 200]);
    } finally {
      agent.destroy();
    }
  });

  test('the URI decides the host, not the Host header', async () => {
    const { res, body } = await viaProxy(h, `http://127.0.0.1:${h.originPort}/echo`, { headers: { host: 'blocked.test' } });
    assert.equal(res.statusCode, 200);
    assert.equal((JSON.parse(body) as { host: string }).host, `127.0.0.1:${h.originPort}`);
    assert.equal(h.decided.at(-1)?.host, '127.0.0.1');
  });

  test('host names are lower-cased and lose their trailing dot before decide', async () => {
    const { res } = await viaProxy(h, `http://LOCALHOST.:${h.originPort}/echo`);
    assert.equal(res.statusCode, 200);
    assert.equal(h.decided.at(-1)?.host, 'localhost');
  });

  test('IPv6 literals: http://[::1]:port/ and CONNECT [::1]:port', async (t) => {
    if (!h.origin6) return t.skip('no IPv6 loopback');
    const before = h.completed.length;
    const { res, body } = await viaProxy(h, `http://[::1]:${h.origin6Port}/echo`);
    assert.equal(res.statusCode, 200);
    assert.equal((JSON.parse(body) as { host: string }).host, `[::1]:${h.origin6Port}`);
    const tunnel = await openTunnel(h, `[::1]:${h.origin6Port}`);
    assert.equal(tunnel.res.statusCode, 200);
    tunnel.socket.destroy();
    const done = (await h.completions(before + 2)).slice(before);
    assert.deepEqual(done.map((d) => [d.request.host, d.request.port]), [['::1', h.origin6Port], ['::1', h.origin6Port]]);
  });

  test('hop-by-hop headers and Proxy-Authorization stop at the proxy; the origin\'s own Authorization and cookies pass', async () => {
    await viaProxy(h, `http://127.0.0.1:${h.originPort}/echo`, {
      headers: { connection: 'keep-alive, x-hop', 'x-hop': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'proxy-connection': 'keep-alive', authorization: 'Bearer origin-credential', cookie: 'c=1', 'x-end-to-end': 'yes' },
    });
    const seen = h.origin.hits.at(-1)?.headers ?? {};
    for (const dropped of ['proxy-authorization', 'proxy-connection', 'x-hop', 'keep-alive', 'te']) assert.equal(seen[dropped], undefined, dropped);
    assert.equal(seen.authorization, 'Bearer origin-credential');
    assert.equal(seen.cookie, 'c=1');
    assert.equal(seen['x-end-to-end'], 'yes');
    const { res } = await viaProxy(h, `http://127.0.0.1:${h.originPort}/cookies`);
    assert.deepEqual(res.headers['set-cookie'], ['a=1', 'b=2']);
  });

  test('malformed requests and targets get 400, naming the problem', async () => {
    const decided = h.decided.length;
    const garbage = await rawExchange(h.proxyPort, 'THIS IS NOT HTTP\r\n\r\n');
    assert.match(garbage, /^HTTP\/1\.1 400 /);
    assert.match(garbage, /malformed HTTP request/);
    const httpsAbsolute = await rawExchange(h.proxyPort, `GET https://localhost:${h.tlsPort}/ HTTP/1.1\r\nHost: localhost\r\nProxy-Authorization: ${BASIC}\r\nConnection: close\r\n\r\n`);
    assert.match(httpsAbsolute, /^HTTP\/1\.1 400 /);
    assert.match(httpsAbsolute, /https:\/\/ URLs cannot be sent to the proxy in absolute form; open a tunnel with CONNECT/);
    const originForm = await rawExchange(h.proxyPort, `GET /path HTTP/1.1\r\nHost: localhost\r\nProxy-Authorization: ${BASIC}\r\nConnection: close\r\n\r\n`);
    assert.match(originForm, /^HTTP\/1\.1 400 [\s\S]*absolute URL/);
    const noPort = await rawExchange(h.proxyPort, `CONNECT localhost HTTP/1.1\r\nHost: localhost\r\nProxy-Authorization: ${BASIC}\r\n\r\n`);
    assert.match(noPort, /^HTTP\/1\.1 400 [\s\S]*host:port/);
    const badHost = await rawExchange(h.proxyPort, `CONNECT bad_host!%zz:443 HTTP/1.1\r\nProxy-Authorization: ${BASIC}\r\n\r\n`);
    assert.match(badHost, /^HTTP\/1\.1 400 /);
    assert.equal(h.decided.length, decided);
    assert.equal(h.tlsOrigin.connections, 0);
  });

  test('answers stream: the client reads the first chunk while the origin is still holding the rest', async () => {
    const before = h.completed.length;
    const got = await new Promise<string>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: h.proxyPort, path: `http://127.0.0.1:${h.originPort}/hold`, headers: { 'proxy-authorization': BASIC }, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.once('data', (c: string) => {
          text += c;
          assert.equal(text, 'first;');
          h.origin.release();
        });
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      req.end();
    }).catch((err: Error) => err.message);
    assert.equal(got, 'first;');
    const done = (await h.completions(before + 1)).slice(before);
    assert.equal(done[0]?.result.bytesDown, 'first;last'.length);
  });

  test('request bodies stream: the origin gets the first chunk before the client has sent the rest', async () => {
    h.origin.armUploadProbe();
    const req = http.request({ host: '127.0.0.1', port: h.proxyPort, method: 'POST', path: `http://127.0.0.1:${h.originPort}/upload-probe`, headers: { 'proxy-authorization': BASIC }, agent: false });
    const answered = new Promise<IncomingMessage>((resolve) => req.on('response', resolve));
    req.write('part one;');
    await h.origin.firstUploadChunk;
    req.end('part two');
    const res = await answered;
    let body = '';
    for await (const c of res) body += String(c);
    assert.equal((JSON.parse(body) as { size: number }).size, 'part one;part two'.length);
  });

  test('Expect: 100-continue: the proxy says continue only after allow; a refused upload is never sent', async () => {
    const send = (port: number) =>
      new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
        let continued = false;
        const req = http.request({ host: '127.0.0.1', port: h.proxyPort, method: 'PUT', path: `http://127.0.0.1:${port}/echo`, headers: { 'proxy-authorization': BASIC, expect: '100-continue', 'content-length': 5 }, agent: false });
        req.on('continue', () => {
          continued = true;
          req.end('hello');
        });
        req.on('response', (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode ?? 0, continued }));
        });
        req.on('error', reject);
        req.flushHeaders();
      });
    assert.deepEqual(await send(h.originPort), { status: 200, continued: true });
    assert.equal(h.origin.hits.at(-1)?.headers.expect, undefined);
    assert.deepEqual(await send(h.deniedPort), { status: 403, continued: false });
  });

  test('a client that hangs up mid-download: completed() once with client_aborted, and the origin request is cut', async () => {
    const before = h.completed.length;
    await new Promise<void>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: h.proxyPort, path: `http://127.0.0.1:${h.originPort}/hold`, headers: { 'proxy-authorization': BASIC }, agent: false }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => undefined);
      req.end();
      setTimeout(() => reject(new Error('no first chunk')), 3_000);
    });
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.equal(done?.result.end, 'client_aborted');
    assert.equal(done?.result.status, 200);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(h.completed.length, before + 1);
    h.origin.release();
  });

  test('a client that leaves while decide is still running: client_aborted, nothing contacted', async () => {
    const before = h.completed.length;
    const socket = net.connect(h.proxyPort, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(`GET http://127.0.0.2:${h.closedPort}/ HTTP/1.1\r\nHost: x\r\nProxy-Authorization: ${BEARER}\r\n\r\n`);
    setTimeout(() => socket.destroy(), 10);
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.deepEqual([done?.request.host, done?.result.end, done?.result.status], ['127.0.0.2', 'client_aborted', 499]);
  });

  test('a tunnel counts every byte both ways over its life, reported when it closes', async () => {
    const before = h.completed.length;
    // A tunnel to the plain origin: Reins does not care what runs inside.
    const { socket } = await openTunnel(h, `127.0.0.1:${h.originPort}`);
    const request = `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc`;
    socket.write(request);
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    await once(socket, 'end');
    socket.end();
    const answer = Buffer.concat(chunks);
    assert.match(answer.toString(), /^HTTP\/1\.1 200 /);
    const [done] = (await h.completions(before + 1)).slice(before);
    assert.equal(done?.result.bytesUp, Buffer.byteLength(request));
    assert.equal(done?.result.bytesDown, answer.length);
    assert.equal(done?.request.scheme, 'https');
  });
});
