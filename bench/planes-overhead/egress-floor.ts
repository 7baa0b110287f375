/**
 * The audited egress floor: the bare CONNECT proxy (bare-egress-proxy.ts) plus only the per-tunnel work that any
 * egress proxy which governs and audits every tunnel, and keeps a searchable audit log, must do, each step the cheapest
 * way this bench knows. It is bench/gateway-overhead's search floor (governed-floor.ts) for the egress plane, and the
 * CONNECT set-up target is also read against it (README.md, "The audited floor").
 *
 * Per tunnel:
 *  1. authenticate: the password of `Proxy-Authorization: Basic`, SHA-256 of it looked up in a Map (a credential cache);
 *  2. decide: one Map lookup keyed by the caller and the authority (a memoised decision: no policy evaluated);
 *  3. audit the decision before connecting: one row queued (Reins' `egress.connect`, the host in its own column);
 *  4. connect, `200 Connection Established`, the two sockets piped into each other, as the bare proxy does;
 *  5. audit the end when both sides have closed (status, duration, bytes each way): a second row.
 * The rows go into Reins' own audit table, made by Reins' migrations, through the LLM floors' bounded batched writer
 * (bench/gateway-overhead/floor-audit.ts): on PostgreSQL fourteen secondary indexes kept up on every write.
 * Nothing else: no rate limits, denied networks, metrics, traces, logs.
 *
 * Run as a child: node --import tsx bench/planes-overhead/egress-floor.ts <agent key> <postgres url | memory>;
 * prints {"ready":"<url>"}. `GET /__audited` answers {"rows": n}, the rows written, after writing what is queued.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { openFloorAudit } from '../gateway-overhead/floor-audit.js';
import { announceReady, endWithRunner } from '../gateway-overhead/server-child.js';

const [agentKey, store] = process.argv.slice(2);
if (!agentKey || !store) throw new Error('usage: egress-floor.ts <agent key> <postgres url | memory>');

const floor = await openFloorAudit(store, 'search');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
/** The credential cache: the key's hash to the caller it names. */
const callers = new Map([[sha256(agentKey), 'bench/agent']]);
/** Memoised decisions: the caller and authority to allow (true) or deny. */
const decisions = new Map<string, boolean>();

/** The password of a `Basic` Proxy-Authorization, or null. */
function passwordOf(header: string | undefined): string | null {
  if (!header?.startsWith('Basic ')) return null;
  const decoded = Buffer.from(header.slice(6), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}

const server = createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/__audited') {
    void floor.count().then((rows) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ rows }));
    });
    return;
  }
  // Only tunnels are measured; a plain request is not this floor's business.
  res.writeHead(405, { 'content-length': 0 });
  res.end();
});

server.on('connect', (req, client, head: Buffer) => {
  client.on('error', () => undefined);
  const authority = req.url ?? '';
  const colon = authority.lastIndexOf(':');
  const host = authority.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(authority.slice(colon + 1));
  if (colon <= 0 || !Number.isInteger(port) || port <= 0 || port > 65535) {
    client.end('HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  const password = passwordOf(req.headers['proxy-authorization']);
  const caller = password === null ? undefined : callers.get(sha256(password));
  if (!caller) {
    client.end('HTTP/1.1 407 Proxy Authentication Required\r\ncontent-length: 0\r\n\r\n');
    return;
  }
  const key = `${caller}\u0000${host}\u0000${port}`;
  let allowed = decisions.get(key);
  if (allowed === undefined) decisions.set(key, (allowed = true));
  const wait = floor.room();
  if (wait) void wait.then(() => open(client, head, caller, host, port));
  else open(client, head, caller, host, port);
});

/** One admitted tunnel: its decision row, the connection, and its end row once both sides have closed. */
function open(client: import('node:stream').Duplex, head: Buffer, caller: string, host: string, port: number): void {
  const started = performance.now();
  const callId = randomUUID();
  floor.audit({ type: 'egress', action: 'egress.connect', actor: caller, host, data: { callId, port, scheme: 'https', method: 'CONNECT', decision: 'allow' } });
  let established = false;
  let closed = 0;
  const upstream = connect({ host, port, noDelay: true }, () => {
    established = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  const ended = () => {
    if (++closed < 2) return;
    const status = established ? 200 : 502;
    floor.audit({
      type: 'egress',
      action: 'egress.connect_end',
      actor: caller,
      host,
      data: { callId, status, end: established ? 'forwarded' : 'upstream_unreachable', durationMs: performance.now() - started, bytesUp: upstream.bytesWritten, bytesDown: upstream.bytesRead },
    });
  };
  // Each side's end is passed on by pipe; an error on either cuts both.
  upstream.on('error', () => {
    if (!established && client.writable) client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-length: 0\r\n\r\n');
    else client.destroy();
  });
  upstream.once('close', ended);
  client.once('close', () => {
    upstream.destroy();
    ended();
  });
  client.on('error', () => upstream.destroy());
}

await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;
announceReady(`http://127.0.0.1:${port}`);
endWithRunner(async () => {
  server.close();
  await floor.close();
});
