/**
 * The gateway port's listener: HTTP/1.1 and HTTP/2 on one port, cleartext or TLS, every request handed to the
 * same handler.
 *
 * - Cleartext: HTTP/2 by prior knowledge (h2c, RFC 9113 §3.3), what the AWS SDK's default handler speaks to an
 *   `http://` endpoint. The first bytes of each connection decide: the HTTP/2 connection preface goes to the
 *   HTTP/2 server, anything else to the HTTP/1.1 server. (The HTTP/1.1 `Upgrade: h2c` dance is not offered:
 *   RFC 9113 deprecates it and no client of the gateway needs it.)
 * - TLS (`tls.certFile`/`tls.keyFile`): ALPN offers `h2` and `http/1.1`; a client that names neither gets HTTP/1.1.
 *
 * The returned object is the HTTP/1.1 `http.Server` Fastify listens on and tunes (timeouts, `close`), with its
 * connection handling replaced by the dispatch above; HTTP/2 sessions run on a `http2` server that never listens
 * itself. `close()`, `closeIdleConnections()` and `closeAllConnections()` reach the HTTP/2 sessions and the
 * connections still being dispatched too, so a replica's shutdown (graceful, then cut after its grace) covers them.
 *
 * HTTP/2 requests reach the handler as Node's compatibility objects (`Http2ServerRequest`/`Http2ServerResponse`),
 * which the data plane and Fastify use like `IncomingMessage`/`ServerResponse`. Two differences matter to it:
 * request headers include the pseudo-headers (`:path`, `:authority`, …; the LLM plane never forwards them), and
 * connection-specific response headers (`connection`, `keep-alive`, `transfer-encoding`, `upgrade`) are illegal
 * (the planes never send hop-by-hop headers). The response class below makes `destroyed` and `writableFinished`
 * mean what they mean on HTTP/1.1, RST_STREAM included.
 */
import { createServer as createHttp1Server, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttp2Server, Http2ServerResponse, type Http2Session } from 'node:http2';
import type { Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { createSecureContext, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { ConfigError, type Config } from '../config/config.js';

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

export interface ListenerOptions {
  /** PEM certificate (chain) and private key: serve TLS with ALPN. Absent: cleartext. */
  tls?: { cert: Buffer; key: Buffer } | null;
}

/**
 * Reads `tls.certFile` and `tls.keyFile` once, at start. A file that cannot be read, is not PEM, or a key that is not
 * the certificate's stops start-up with a message naming the key.
 */
export function loadTls(tls: Config['tls']): ListenerOptions['tls'] {
  if (!tls) return null;
  const read = (key: 'certFile' | 'keyFile'): Buffer => {
    try {
      return readFileSync(tls[key]);
    } catch (err) {
      throw new ConfigError(`tls.${key}`, `cannot read ${tls[key]}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const files = { cert: read('certFile'), key: read('keyFile') };
  try {
    createSecureContext(files);
  } catch (err) {
    throw new ConfigError('tls', `the certificate and key cannot serve TLS: ${(err as Error).message}`);
  }
  return files;
}

/** How long an HTTP/2 session may stay idle before the server closes it (see the 'session' handler). */
const HTTP2_IDLE_MS = 5_000;

/** RFC 9113 §3.4: every HTTP/2 connection starts with these 24 octets; no HTTP/1.1 request can. */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/**
 * Receive windows. HTTP/2's default, 64 KiB per stream and per connection, lets a client send 64 KiB per round
 * trip: a 4 MB image in a Bedrock call to a gateway 50 ms away would take 3 s to upload. A body is read as it
 * arrives (the data plane buffers it itself), so at most these windows wait in memory per stream and connection,
 * well inside Node's 10 MB `maxSessionMemory`.
 */
const STREAM_WINDOW = 1 << 20;
const SESSION_WINDOW = 4 << 20;

/** How long a new connection may stay silent (or a TLS handshake take) before it is dropped, when the HTTP/1.1
 * server's own `headersTimeout` is unset. */
const FIRST_BYTES_MS = 60_000;

/**
 * The two members of `ServerResponse` the planes read to tell a finished answer from a client that went away,
 * as HTTP/1.1 means them, on Node's HTTP/2 compatibility response:
 * - `destroyed`, checked before writing to a client that left (a held call whose client hung up, a keep-alive
 *   ping after a RST_STREAM), is missing from it;
 * - `writableFinished` is the stream's, which a RST_STREAM from the client also sets (Node ends the writable side
 *   of a stream the peer reset): here it is true only for an answer sent to its end, so a cancelled stream is
 *   reported `client_aborted` and its upstream call is cancelled, as on HTTP/1.1.
 * Defined on the prototype: Node's typings declare both as properties, the runtime class as neither (or a getter).
 */
class Http2Response extends Http2ServerResponse {}
Object.defineProperties(Http2Response.prototype, {
  destroyed: {
    get(this: Http2ServerResponse): boolean {
      return this.stream.destroyed;
    },
  },
  writableFinished: {
    get(this: Http2ServerResponse): boolean {
      return this.stream.writableFinished && !this.stream.aborted;
    },
  },
});

export function createListener(handler: RequestHandler, options: ListenerOptions = {}): Server {
  const server = createHttp1Server(handler);
  // Node's own HTTP/1.1 connection listener: called with the sockets the dispatch decides are HTTP/1.1.
  const http1 = server.listeners('connection')[0] as (this: Server, socket: Socket) => void;
  server.removeAllListeners('connection');

  const h2 = createHttp2Server({ Http2ServerResponse: Http2Response, settings: { initialWindowSize: STREAM_WINDOW } }, handler as never);
  const sessions = new Set<Http2Session>();
  h2.on('session', (session: Http2Session) => {
    sessions.add(session);
    session.setLocalWindowSize(SESSION_WINDOW);
    session.once('close', () => sessions.delete(session));
    // An idle session ends with GOAWAY (streams still open finish first) after HTTP2_IDLE_MS, shorter than HTTP/1.1's
    // keep-alive: the AWS SDK's HTTP/2 handler keeps its session open after `client.destroy()`, so a tool that made
    // its calls would wait for the server's GOAWAY before its process could exit.
    session.setTimeout(HTTP2_IDLE_MS, () => session.close());
  });
  // A session's protocol errors (a client sending garbage after the preface) end that session only; Node destroys it.
  h2.on('sessionError', () => undefined);

  /** Connections not yet handed to either server (silent so far, or in their TLS handshake). */
  const pending = new Set<Socket>();
  const firstBytesMs = () => (server.headersTimeout > 0 ? server.headersTimeout : FIRST_BYTES_MS);

  const toHttp1 = (socket: Socket) => http1.call(server, socket);
  const toHttp2 = (socket: Socket) => h2.emit('connection', socket);

  if (options.tls) {
    const front = createTlsServer({ cert: options.tls.cert, key: options.tls.key, ALPNProtocols: ['h2', 'http/1.1'], handshakeTimeout: firstBytesMs() });
    // The raw connections in their handshake, by peer address and port (one connection each on this port).
    const handshaking = new Map<string, Socket>();
    const peer = (s: Socket) => `${s.remoteAddress}|${s.remotePort}`;
    front.on('secureConnection', (socket: TLSSocket) => {
      const raw = handshaking.get(peer(socket));
      if (raw) {
        handshaking.delete(peer(socket));
        pending.delete(raw);
      }
      if (socket.alpnProtocol === 'h2') toHttp2(socket);
      else toHttp1(socket);
    });
    // A failed handshake (a plain-HTTP client, a client that does not trust the certificate) ends that connection
    // only; Node destroys it.
    front.on('tlsClientError', () => undefined);
    server.on('connection', (raw: Socket) => {
      const key = peer(raw);
      pending.add(raw);
      handshaking.set(key, raw);
      raw.once('close', () => {
        pending.delete(raw);
        if (handshaking.get(key) === raw) handshaking.delete(key);
      });
      front.emit('connection', raw);
    });
  } else {
    server.on('connection', (socket: Socket) => sniff(socket, pending, firstBytesMs(), toHttp1, toHttp2));
  }

  const close = server.close.bind(server);
  const closeIdle = server.closeIdleConnections.bind(server);
  const closeAll = server.closeAllConnections.bind(server);
  server.close = ((callback?: (err?: Error) => void) => {
    close(callback);
    // GOAWAY: no new streams; the streams in flight finish (the replica cuts them after its grace).
    for (const session of sessions) session.close();
    for (const socket of pending) socket.destroy();
    return server;
  }) as Server['close'];
  server.closeIdleConnections = () => {
    closeIdle();
    for (const session of sessions) session.close();
    for (const socket of pending) socket.destroy();
  };
  server.closeAllConnections = () => {
    closeAll();
    for (const session of sessions) session.destroy();
    for (const socket of pending) socket.destroy();
  };
  return server;
}

/**
 * Reads a cleartext connection's first bytes until they either are the HTTP/2 preface or cannot be, then hands the
 * socket, with those bytes put back, to the server of that protocol. A connection silent for `limitMs` is dropped.
 */
function sniff(socket: Socket, pending: Set<Socket>, limitMs: number, toHttp1: (s: Socket) => void, toHttp2: (s: Socket) => void): void {
  pending.add(socket);
  let head: Buffer | null = null;
  const timer = setTimeout(() => socket.destroy(), limitMs);
  const done = () => {
    clearTimeout(timer);
    pending.delete(socket);
    socket.off('data', onData);
    socket.off('error', onError);
    socket.off('end', onEnd);
    socket.off('close', done);
  };
  const onError = () => socket.destroy();
  const onEnd = () => socket.destroy();
  const onData = (chunk: Buffer) => {
    head = head === null ? chunk : Buffer.concat([head, chunk]);
    const n = Math.min(head.length, PREFACE.length);
    const isPreface = head.compare(PREFACE, 0, n, 0, n) === 0;
    if (isPreface && n < PREFACE.length) return; // a prefix of the preface so far: wait for the rest
    done();
    // Paused with the bytes put back: the chosen server reads them first, then the rest of the connection.
    socket.pause();
    socket.unshift(head);
    if (isPreface) toHttp2(socket);
    else toHttp1(socket);
    process.nextTick(() => socket.resume());
  };
  socket.on('data', onData);
  socket.on('error', onError);
  socket.on('end', onEnd);
  socket.once('close', done);
}
