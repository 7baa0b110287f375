/**
 * The gateway port's listener on its own: the first bytes decide HTTP/2 or HTTP/1.1 however they are split, a
 * silent connection is dropped, close() reaches HTTP/2 sessions and undecided connections, the HTTP/2 response
 * tells a finished answer from a reset stream as HTTP/1.1's does, and bad TLS files name their key.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect as http2Connect, constants, type ClientHttp2Session } from 'node:http2';
import { connect as netConnect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import { ConfigError } from '../../../src/config/config.js';
import { createListener, loadTls } from '../../../src/app/listener.js';
import { selfSignedCert } from '../../helpers/tls-cert.js';

const WAIT_MS = 30_000;

async function listen(server: Server | NetServer): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

function closed(emitter: NodeJS.EventEmitter): Promise<void> {
  return new Promise((r) => emitter.once('close', () => r()));
}

function within<T>(what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${WAIT_MS} ms`)), WAIT_MS)));
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

/** A TCP relay to `port` that passes the client's first `slowBytes` bytes one at a time, a few ms apart. */
async function dribblingRelay(port: number, slowBytes: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const relay = createNetServer((client) => {
    const upstream = netConnect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    let sent = 0;
    let queue = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      queue = queue.then(async () => {
        for (let i = 0; i < chunk.length; ) {
          if (sent < slowBytes) {
            upstream.write(chunk.subarray(i, i + 1));
            sent++;
            i++;
            await new Promise((r) => setTimeout(r, 2));
          } else {
            upstream.write(chunk.subarray(i));
            sent += chunk.length - i;
            break;
          }
        }
      });
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  const relayPort = await listen(relay);
  return {
    port: relayPort,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => relay.close(r));
    },
  };
}

function h2get(session: ClientHttp2Session, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    let status = 0;
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve({ status, body: Buffer.concat(chunks).toString('utf8') }));
    stream.on('error', reject);
    stream.end();
  });
}

describe('the gateway listener: HTTP/1.1 and HTTP/2 on one cleartext port', () => {
  let server: Server;
  let port: number;
  /** What the handler saw, per path. */
  const seen: { path: string; httpVersion: string }[] = [];
  /** Responses the handler keeps open (path /hang), to look at them after the client's reset. */
  const hanging: ServerResponse[] = [];
  /** Responses that closed, by path. */
  const finished = new Map<string, ServerResponse>();
  before(async () => {
    server = createListener((req: IncomingMessage, res: ServerResponse) => {
      seen.push({ path: req.url ?? '', httpVersion: req.httpVersion });
      if (req.url === '/hang') {
        hanging.push(res);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('started');
        return;
      }
      req.resume();
      res.on('close', () => finished.set(req.url ?? '', res));
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`${req.httpVersion} ${req.url}`);
    });
    port = await listen(server);
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  test('an HTTP/1.1 request split into one-byte writes (its "P" a prefix of the preface) is HTTP/1.1', async () => {
    const socket = netConnect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    const ended = new Promise<void>((r) => socket.on('end', () => r()));
    await new Promise((r) => socket.once('connect', r));
    for (const byte of 'POST /one-byte HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n') {
      socket.write(byte);
      await new Promise((r) => setTimeout(r, 1));
    }
    await within('the answer', ended);
    const text = Buffer.concat(chunks).toString('latin1');
    assert.match(text, /^HTTP\/1\.1 200/);
    assert.match(text, /\r\n1\.1 \/one-byte\r\n/);
  });

  test('the HTTP/2 preface split into one-byte writes is HTTP/2', async () => {
    const relay = await dribblingRelay(port, 40);
    const session = http2Connect(`http://127.0.0.1:${relay.port}`);
    try {
      const r = await within('the answer', h2get(session, '/dribbled'));
      assert.equal(r.status, 200);
      assert.equal(r.body, '2.0 /dribbled');
    } finally {
      session.destroy();
      await relay.close();
    }
  });

  test('HTTP/1.1 keep-alive and HTTP/2 multiplexing both serve several requests per connection', async () => {
    const session = http2Connect(`http://127.0.0.1:${port}`);
    try {
      const answers = await within('the answers', Promise.all([h2get(session, '/a'), h2get(session, '/b'), h2get(session, '/c')]));
      assert.deepEqual(answers.map((a) => a.body), ['2.0 /a', '2.0 /b', '2.0 /c']);
    } finally {
      session.close();
    }
    const first = await fetch(`http://127.0.0.1:${port}/x`);
    assert.equal(await first.text(), '1.1 /x');
    const second = await fetch(`http://127.0.0.1:${port}/y`);
    assert.equal(await second.text(), '1.1 /y');
  });

  test("the HTTP/2 response: writableFinished once the answer is sent, not after the client's RST_STREAM; destroyed then", async () => {
    const session = http2Connect(`http://127.0.0.1:${port}`);
    try {
      await within('the answer', h2get(session, '/done'));
      await within('the close', (async () => {
        while (!finished.has('/done')) await new Promise((r) => setTimeout(r, 5));
      })());
      assert.equal(finished.get('/done')!.writableFinished, true);
      assert.equal(finished.get('/done')!.destroyed, true, 'closed after its answer');

      const before = hanging.length;
      const stream = session.request({ ':path': '/hang' });
      stream.on('error', () => undefined);
      stream.end();
      await within('the first bytes', new Promise((r) => stream.once('data', r)));
      const res = hanging[before]!;
      assert.equal(res.destroyed, false);
      const resClosed = closed(res);
      stream.close(constants.NGHTTP2_CANCEL);
      await within("the response's close", resClosed);
      assert.equal(res.writableFinished, false, 'a reset stream is not a finished answer');
      assert.equal(res.destroyed, true);
    } finally {
      session.close();
    }
  });
});

describe('the gateway listener: silent connections and shutdown', () => {
  test('a connection that sends nothing is dropped after headersTimeout', async () => {
    const server = createListener((_req, res) => res.end());
    server.headersTimeout = 200;
    const port = await listen(server);
    try {
      const socket = netConnect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      await within('the drop', closed(socket));
    } finally {
      await new Promise((r) => server.close(r));
    }
  });

  test('close() ends idle HTTP/2 sessions and undecided connections; closeAllConnections() cuts streams in flight', async () => {
    let held: ServerResponse | null = null;
    const server = createListener((req, res) => {
      if (req.url === '/hang') {
        held = res;
        res.writeHead(200);
        res.write('x');
        return;
      }
      res.end('ok');
    });
    const port = await listen(server);
    const idle = http2Connect(`http://127.0.0.1:${port}`);
    const busy = http2Connect(`http://127.0.0.1:${port}`);
    const silent = netConnect(port, '127.0.0.1');
    silent.on('error', () => undefined);
    const silentConnected = new Promise((r) => silent.once('connect', r));
    try {
      await within('the idle session', h2get(idle, '/'));
      const stream = busy.request({ ':path': '/hang' });
      stream.on('error', () => undefined);
      stream.end();
      await within('the first bytes', new Promise((r) => stream.once('data', r)));
      await within('the silent connection', silentConnected);
      const idleClosed = closed(idle);
      const silentClosed = closed(silent);
      const streamClosed = closed(stream);
      let serverClosed = false;
      const closing = new Promise<void>((r) =>
        server.close(() => {
          serverClosed = true;
          r();
        }),
      );
      await within('the idle session to end', idleClosed);
      await within('the undecided connection to end', silentClosed);
      assert.equal(serverClosed, false, 'the stream in flight keeps the server open (the grace)');
      assert.ok(held);
      server.closeAllConnections();
      await within('the stream in flight to be cut', streamClosed);
      await within('the server to close', closing);
    } finally {
      idle.destroy();
      busy.destroy();
      silent.destroy();
    }
  });
});

describe('loadTls', () => {
  test('no tls: cleartext', () => {
    assert.equal(loadTls(null), null);
  });

  test('the files read, an unreadable one named by its key, a key that is not the certificate named "tls"', () => {
    const cert = selfSignedCert();
    const other = selfSignedCert();
    try {
      const loaded = loadTls({ certFile: cert.certFile, keyFile: cert.keyFile });
      assert.ok(loaded && loaded.cert.equals(cert.ca));
      assert.throws(() => loadTls({ certFile: cert.certFile, keyFile: `${cert.keyFile}.absent` }), (err: unknown) => err instanceof ConfigError && err.key === 'tls.keyFile' && /ENOENT/.test(err.message));
      assert.throws(() => loadTls({ certFile: cert.certFile, keyFile: other.keyFile }), (err: unknown) => err instanceof ConfigError && err.key === 'tls');
      writeFileSync(other.certFile, 'not a certificate');
      assert.throws(() => loadTls({ certFile: other.certFile, keyFile: other.keyFile }), (err: unknown) => err instanceof ConfigError && err.key === 'tls');
    } finally {
      cert.remove();
      other.remove();
    }
  });
});
