/**
 * bench/planes-overhead's audited floors: the least per-call work of a proxy that authenticates, decides and keeps a
 * searchable audit log, against which Reins' MCP and egress figures are read. A floor that skipped a step (let a
 * wrong key through, wrote one row instead of two, kept them anywhere but Reins' audit table) would flatter Reins;
 * these check that each does what its header says: the egress floor (egress-floor.ts) and the governed floor on the
 * MCP plane (bench/gateway-overhead/governed-floor.ts `search mcp`).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect, createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { type Child, startServer } from '../../../bench/gateway-overhead/processes.js';
import { freshPostgresDatabase, postgresReachable } from '../../helpers/stores.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const EGRESS_FLOOR = join(HERE, '../../../bench/planes-overhead/egress-floor.ts');
const GOVERNED_FLOOR = join(HERE, '../../../bench/gateway-overhead/governed-floor.ts');
const KEY = 'floor-test-key-0123456789abcdef';

interface Row {
  type: string;
  action: string;
  actor_id: string;
  subject: string;
  host: string | null;
  data: Record<string, unknown>;
}

async function auditRows(url: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<Row>('SELECT type, action, actor_id, subject, host, data FROM audit_events WHERE actor_kind = $1 ORDER BY id', ['agent'])).rows;
  } finally {
    await client.end();
  }
}

/** Sends CONNECT with `authorization` and resolves with the proxy's answer head and the open socket. */
function connectThrough(proxyPort: number, authority: string, authorization: string): Promise<{ head: string; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: proxyPort });
    socket.once('error', reject);
    let buf = '';
    const onData = (chunk: Buffer) => {
      buf += chunk.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.off('data', onData);
      resolve({ head: buf.slice(0, end), socket });
    };
    socket.on('data', onData);
    socket.write(`CONNECT ${authority} HTTP/1.1\r\nhost: ${authority}\r\nproxy-authorization: ${authorization}\r\n\r\n`);
  });
}

const basic = (password: string) => `Basic ${Buffer.from(`agent:${password}`).toString('base64')}`;

describe('bench/planes-overhead audited egress floor', { skip: !(await postgresReachable()) && 'PostgreSQL unreachable' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let floor: { child: Child; url: string };
  let origin: TcpServer;

  before(async () => {
    database = await freshPostgresDatabase();
    floor = await startServer('egress floor', ['--import', 'tsx', EGRESS_FLOOR, KEY, database.url]);
    // An origin that echoes what it is sent.
    origin = createTcpServer((s) => s.pipe(s));
    origin.listen(0, '127.0.0.1');
    await once(origin, 'listening');
  });
  after(async () => {
    await floor?.child.stop();
    origin?.close();
    await database?.drop();
  });

  test('opens a tunnel for its key, relays bytes both ways, and audits the decision and the end in Reins\' audit table', async () => {
    const port = (origin.address() as AddressInfo).port;
    const { head, socket } = await connectThrough(Number(new URL(floor.url).port), `127.0.0.1:${port}`, basic(KEY));
    assert.match(head, /^HTTP\/1\.1 200 /);
    socket.write('ping');
    const [echoed] = (await once(socket, 'data')) as [Buffer];
    assert.equal(echoed.toString(), 'ping');
    socket.end();
    await once(socket, 'close');
    const audited = (await (await fetch(`${floor.url}/__audited`)).json()) as { rows: number };
    assert.equal(audited.rows, 2);
    const rows = await auditRows(database.url);
    assert.deepEqual(
      rows.map((r) => [r.type, r.action, r.actor_id, r.subject, r.host]),
      [
        ['egress', 'egress.connect', 'bench/agent', 'bench/agent', '127.0.0.1'],
        ['egress', 'egress.connect_end', 'bench/agent', 'bench/agent', '127.0.0.1'],
      ],
    );
    assert.equal(rows[0]!.data.callId, rows[1]!.data.callId);
    assert.equal(rows[1]!.data.status, 200);
    assert.equal(rows[1]!.data.bytesUp, 4);
    assert.equal(rows[1]!.data.bytesDown, 4);
  });

  test('refuses a wrong or missing key with 407 and writes nothing', async () => {
    const before = (await auditRows(database.url)).length;
    const port = Number(new URL(floor.url).port);
    for (const authorization of [basic('someone-else'), 'Bearer nothing']) {
      const { head, socket } = await connectThrough(port, '127.0.0.1:9', authorization);
      assert.match(head, /^HTTP\/1\.1 407 /);
      socket.destroy();
    }
    const audited = (await (await fetch(`${floor.url}/__audited`)).json()) as { rows: number };
    assert.equal(audited.rows, before);
  });
});

describe('bench/gateway-overhead governed floor on the MCP plane', { skip: !(await postgresReachable()) && 'PostgreSQL unreachable' }, () => {
  let database: { url: string; drop: () => Promise<void> };
  let floor: { child: Child; url: string };
  let upstream: Server;
  const seen: { authorization: string | undefined; session: string | undefined; body: string }[] = [];

  before(async () => {
    database = await freshPostgresDatabase();
    // An MCP server's answer to a tools/call in JSON mode; it records what reached it.
    upstream = createHttpServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        seen.push({ authorization: req.headers.authorization, session: req.headers['mcp-session-id'] as string | undefined, body });
        const id = (JSON.parse(body) as { id: number }).id;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'value' }], isError: false } }));
      });
    });
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    const origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    floor = await startServer('mcp floor', ['--import', 'tsx', GOVERNED_FLOOR, origin, KEY, database.url, 'search', 'mcp']);
  });
  after(async () => {
    await floor?.child.stop();
    upstream?.close();
    await database?.drop();
  });

  const call = (authorization: string) =>
    fetch(`${floor.url}/mcp`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'session-1' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'lookup', arguments: { key: 'k' } } }),
    });

  test('forwards a tools/call as sent (the session kept), relays the answer, and audits the decision and the end as mcp rows', async () => {
    const res = await call(`Bearer ${KEY}`);
    assert.equal(res.status, 200);
    assert.deepEqual(((await res.json()) as { result: { isError: boolean } }).result.isError, false);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.session, 'session-1');
    assert.notEqual(seen[0]!.authorization, `Bearer ${KEY}`, 'the client key does not reach the upstream');
    const audited = (await (await fetch(`${floor.url}/__audited`)).json()) as { rows: number };
    assert.equal(audited.rows, 2);
    const rows = await auditRows(database.url);
    assert.deepEqual(
      rows.map((r) => [r.type, r.action, r.actor_id, r.host]),
      [
        ['mcp', 'mcp.tool_call', 'bench/agent', null],
        ['mcp', 'mcp.tool_call_end', 'bench/agent', null],
      ],
    );
    assert.equal(rows[0]!.data.tool, 'lookup');
    assert.equal(rows[0]!.data.method, 'tools/call');
    assert.equal(rows[0]!.data.callId, rows[1]!.data.callId);
    assert.equal(rows[1]!.data.isError, false);
  });

  test('refuses a wrong key with 401, forwarding and writing nothing', async () => {
    const res = await call('Bearer someone-else');
    assert.equal(res.status, 401);
    await res.text();
    assert.equal(seen.length, 1);
    const audited = (await (await fetch(`${floor.url}/__audited`)).json()) as { rows: number };
    assert.equal(audited.rows, 2);
  });
});
