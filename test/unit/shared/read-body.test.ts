/**
 * readBodyNow over real sockets: a body that arrived with its headers is taken without a promise; one still on its
 * way, one over the limit and one cut off by the client go the way readBody always went.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { readBodyNow, type BodyRead } from '../../../src/shared/read-body.js';

const LIMIT = 64;

interface Seen {
  sync: boolean;
  body: BodyRead;
}

let server: Server;
let port = 0;
let seen: (s: Seen) => void = () => {};

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    // As the MCP proxy does: something is awaited before the body is read (a turn later with x-wait: immediate,
    // by when the parser has seen the message end).
    const waited = req.headers['x-wait'] === 'immediate' ? new Promise((r) => setImmediate(r)) : Promise.resolve();
    void waited.then(async () => {
      const read = readBodyNow(req, LIMIT);
      const sync = !(read instanceof Promise);
      const body = read instanceof Promise ? await read : read;
      seen({ sync, body });
      res.end(typeof body === 'string' ? body : `${body.length}:${body.toString('utf8')}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});

after(() => new Promise<void>((r) => server.close(() => r())));

function next(): Promise<Seen> {
  return new Promise((resolve) => (seen = resolve));
}

/** Writes raw bytes (each string its own write, `gapMs` apart) and resolves with the whole answer. */
async function raw(parts: string[], gapMs = 0): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  let text = '';
  socket.on('data', (c) => (text += c.toString('latin1')));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  for (const [i, p] of parts.entries()) {
    if (i > 0 && gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
    socket.write(p);
  }
  if (!parts.some((p) => p.includes('Connection: close'))) socket.end();
  await closed;
  return text;
}

test('a body that came with its headers is taken at once, without a promise', async () => {
  const got = next();
  const answer = await raw(['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world']);
  const s = await got;
  assert.equal(s.sync, true);
  assert.ok(Buffer.isBuffer(s.body));
  assert.equal((s.body as Buffer).toString('utf8'), 'hello world');
  assert.match(answer, /\r\n\r\n11:hello world$/);
});

test('an empty body is an empty buffer, at once', async () => {
  const got = next();
  await raw(['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n']);
  const s = await got;
  assert.equal(s.sync, true);
  assert.equal((s.body as Buffer).length, 0);
});

test('a chunked body (no Content-Length to count against) is taken at once only when the parser saw its end', async () => {
  const message = 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n%WAIT%\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n';
  let got = next();
  await raw([message.replace('%WAIT%', '')]);
  let s = await got;
  assert.equal(s.sync, false, 'a turn after the headers the parser has not said the message ended');
  assert.equal((s.body as Buffer).toString('utf8'), 'abcdefg');
  got = next();
  await raw([message.replace('%WAIT%', 'X-Wait: immediate\r\n')]);
  s = await got;
  assert.equal(s.sync, true);
  assert.equal((s.body as Buffer).toString('utf8'), 'abcdefg', 'the chunks joined in order');
});

test('a body still on its way is read through the promise, whole', async () => {
  const got = next();
  await raw(['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\n01234', '56789'], 50);
  const s = await got;
  assert.equal(s.sync, false);
  assert.equal((s.body as Buffer).toString('utf8'), '0123456789');
});

test('an arrived body over the limit is too_large (chunked, so no Content-Length said so first)', async () => {
  const got = next();
  const big = 'x'.repeat(LIMIT + 1);
  const answer = await raw([`POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\nX-Wait: immediate\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`]);
  const s = await got;
  assert.equal(s.sync, true);
  assert.equal(s.body, 'too_large');
  assert.match(answer, /too_large$/);
});

test('exactly the limit is accepted', async () => {
  const got = next();
  const exact = 'y'.repeat(LIMIT);
  await raw([`POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${LIMIT}\r\nConnection: close\r\n\r\n${exact}`]);
  const s = await got;
  assert.equal((s.body as Buffer).toString('utf8'), exact);
});

test('a client that leaves mid-body is aborted', async () => {
  const got = next();
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 20\r\n\r\nonly half');
  await new Promise((r) => setTimeout(r, 50));
  socket.destroy();
  const s = await got;
  assert.equal(s.sync, false);
  assert.equal(s.body, 'aborted');
});

test('two requests on one keep-alive connection each get their own body', async () => {
  const bodies: string[] = [];
  let done: () => void = () => {};
  const both = new Promise<void>((r) => (done = r));
  seen = (s) => {
    bodies.push((s.body as Buffer).toString('utf8'));
    if (bodies.length === 2) done();
    else seen = (s2) => {
      bodies.push((s2.body as Buffer).toString('utf8'));
      done();
    };
  };
  await raw(['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none' + 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\ntwo']);
  await both;
  assert.deepEqual(bodies, ['one', 'two']);
});
