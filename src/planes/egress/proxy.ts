/**
 * The egress plane: an HTTP forward proxy for governed agents (`HTTPS_PROXY=http://agent:<token>@reins:port`).
 *
 * Plain requests arrive in absolute-URI form (`GET http://host/path`) and are forwarded with their bodies
 * streamed both ways; `CONNECT host:port` opens a byte tunnel that Reins never looks into. Each one: the Reins
 * token in Proxy-Authorization -> `hooks.authenticate` -> `hooks.decide` on caller, host, port, scheme and
 * method -> 403 with the policy's sentence, or connect -> `hooks.completed` once when it is over. Nothing reaches
 * an origin before `decide` said allow. The module knows nothing of identities, policies or storage.
 */
import { Agent, createServer, request as httpRequest, type ClientRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect as netConnect, type AddressInfo, type NetConnectOpts, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { egressAnswer, sendAnswer, writeRawAnswer, type EgressAnswer } from './answers.js';
import { ConnectDeadlines } from './connect-deadlines.js';
import { proxySecret } from './credential.js';
import { AddressGuard, DeniedAddressError } from './denied-networks.js';
import { downstreamResponseHeaders, upstreamRequestHeaders } from './headers.js';
import { parseConnectTarget, parseHttpTarget, type EgressTarget } from './target.js';
import type { EgressDecision, EgressEnd, EgressHooks, EgressLog, EgressProxyOptions, EgressRequest, EgressResult, EgressScheme } from './types.js';

export type * from './types.js';
export type { EgressErrorKind } from './answers.js';

export interface EgressProxy {
  server: Server;
  /** Starts listening; resolves with the bound address (port 0 picks a free one). */
  listen(port: number, host?: string): Promise<AddressInfo>;
  /** Stops accepting, cuts open requests and tunnels, closes the upstream pool. */
  close(): Promise<void>;
}

const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const NO_LOG: EgressLog = { warn: () => undefined, error: () => undefined };

const MISSING_TOKEN =
  'Reins egress proxy: send your Reins token as the proxy password (HTTPS_PROXY=http://agent:<token>@host:port) ' +
  'or as Proxy-Authorization: Bearer <token>';
const UNKNOWN_TOKEN = 'Reins egress proxy: the Reins token is unknown, revoked or expired';

/** Too many failed logins from this address: 429, and when to try again. */
function rateLimited(retryAfterSeconds: number): EgressAnswer {
  const answer = egressAnswer('rate_limited', `Reins egress proxy: too many failed logins from your address; retry in ${retryAfterSeconds} s`);
  answer.headers['retry-after'] = String(retryAfterSeconds);
  return answer;
}

type Admission<C> =
  | { admitted: true; request: EgressRequest<C>; upstreamHeaders?: Readonly<Record<string, string>> | undefined }
  | { admitted: false; answer: EgressAnswer };

export function createEgressProxy<C>(hooks: EgressHooks<C>, options: EgressProxyOptions = {}): EgressProxy {
  const log = options.log ?? NO_LOG;
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  // Reins' own ports: the HTTP port given, this proxy's own port added once it listens.
  const ownPorts = new Set<number>(options.ownPorts ?? []);
  const guard = new AddressGuard(options.deniedNetworks && !options.deniedNetworks.empty ? options.deniedNetworks : null, ownPorts);
  // Uploads and downloads through a proxy can take long; only the headers have a deadline.
  const server = createServer({ requestTimeout: 0, headersTimeout: 60_000 });
  // Idle upstream sockets are dropped after 4 s, before a typical origin's 5 s keep-alive would close them under us.
  const agent = new Agent({ keepAlive: true, timeout: 4_000, scheduling: 'lifo' });
  const tunnels = new Set<Duplex>();
  const deadlines = new ConnectDeadlines();
  const failedAuth = options.failedAuth;

  function completer(request: EgressRequest<C>, started: number): (result: Omit<EgressResult, 'durationMs'>) => void {
    let reported = false;
    return (result) => {
      if (reported) return;
      reported = true;
      try {
        // Not `{ ...result, durationMs }`: a property after a leading spread takes a slow path on Node 20's V8 (0.7 µs).
        hooks.completed(request, {
          status: result.status,
          end: result.end,
          bytesUp: result.bytesUp,
          bytesDown: result.bytesDown,
          durationMs: performance.now() - started,
          deniedAddress: result.deniedAddress,
        });
      } catch (err) {
        log.error({ err }, 'egress completed hook threw');
      }
    };
  }

  /**
   * Credential, caller, decision. A refusal is reported to `completed` here, since it was decided. Without a
   * promise when the hooks answer without one (a cached credential, a remembered decision): a tunnel then
   * starts connecting in the same tick, with no trip through the microtask queue.
   */
  function admit(req: IncomingMessage, target: EgressTarget, scheme: EgressScheme, method: string, started: number): Admission<C> | Promise<Admission<C>> {
    const headers = req.headers;
    const secret = proxySecret(headers['proxy-authorization']);
    if (secret === null) return { admitted: false, answer: egressAnswer('proxy_auth_required', MISSING_TOKEN) };
    const wait = failedAuth?.retryAfter(req) ?? null;
    if (wait !== null) return { admitted: false, answer: rateLimited(wait) };
    const caller = hooks.authenticate({ secret, headers });
    if (caller instanceof Promise) return caller.then((c) => decideFor(req, c, target, scheme, method, started));
    return decideFor(req, caller, target, scheme, method, started);
  }

  function decideFor(req: IncomingMessage, caller: C | null, target: EgressTarget, scheme: EgressScheme, method: string, started: number): Admission<C> | Promise<Admission<C>> {
    if (caller === null) {
      failedAuth?.failed(req, 'egress', 'unknown, revoked or expired token');
      return { admitted: false, answer: egressAnswer('proxy_auth_required', UNKNOWN_TOKEN) };
    }
    const request: EgressRequest<C> = { caller, host: target.host, port: target.port, scheme, method };
    const decision = hooks.decide(request);
    if (decision instanceof Promise) return decision.then((d) => admission(request, d, started));
    return admission(request, decision, started);
  }

  function admission(request: EgressRequest<C>, decision: EgressDecision, started: number): Admission<C> {
    if (decision.outcome === 'deny') {
      const answer = egressAnswer('denied', decision.message);
      completer(request, started)({ status: answer.status, end: 'refused', bytesUp: 0, bytesDown: 0 });
      return { admitted: false, answer };
    }
    return decision.upstreamHeaders ? { admitted: true, request, upstreamHeaders: decision.upstreamHeaders } : { admitted: true, request };
  }

  /** `admit` as a promise in every case, a throwing hook included. */
  function admitLater(req: IncomingMessage, target: EgressTarget, scheme: EgressScheme, method: string, started: number): Promise<Admission<C>> {
    return new Promise((resolve) => resolve(admit(req, target, scheme, method, started)));
  }

  function hookFailure(err: unknown): EgressAnswer {
    log.error({ err }, 'egress hook failed');
    return egressAnswer('internal_error', 'Reins could not check this request (the failure has been logged); retry shortly');
  }

  /** Refuses a plain request. A body the client is still sending is not read: the connection closes after the answer. */
  function refuse(req: IncomingMessage, res: ServerResponse, answer: EgressAnswer): void {
    if (!req.complete && (req.headers['content-length'] ?? '0') !== '0') res.setHeader('connection', 'close');
    else if (!req.complete && req.headers['transfer-encoding'] !== undefined) res.setHeader('connection', 'close');
    sendAnswer(res, answer);
  }

  function handleRequest(req: IncomingMessage, res: ServerResponse, expectsContinue: boolean): void {
    const started = performance.now();
    const parsed = parseHttpTarget(req.url ?? '');
    if (!parsed.ok) return refuse(req, res, egressAnswer('bad_request', parsed.message));
    const target = parsed.target;
    const method = req.method ?? 'GET';
    let clientGone = false;
    res.once('close', () => {
      clientGone = true;
    });
    // Always a promise here: a refusal then finds the rest of a small body already read, and keeps the connection.
    admitLater(req, target, 'http', method, started).then(
      (admission) => {
        if (!admission.admitted) return refuse(req, res, admission.answer);
        // The client left while the hooks were deciding: nothing to forward it to.
        if (clientGone) return completer(admission.request, started)({ status: 499, end: 'client_aborted', bytesUp: 0, bytesDown: 0 });
        // 100 Continue only now: a refused upload never leaves the client.
        if (expectsContinue) res.writeContinue();
        forward(req, res, target.path, target.authority, admission.request, started, admission.upstreamHeaders);
      },
      (err: unknown) => refuse(req, res, hookFailure(err)),
    );
  }

  function forward(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    authority: string,
    request: EgressRequest<C>,
    started: number,
    extraHeaders?: Readonly<Record<string, string>>,
  ): void {
    const complete = completer(request, started);
    let bytesUp = 0;
    let bytesDown = 0;
    let status = 499;
    let upstreamFailed = false;
    const finish = (end: EgressEnd) => complete({ status, end, bytesUp, bytesDown });
    const refuseAddress = (err: DeniedAddressError) => {
      const answer = egressAnswer('address_denied', err.message);
      status = answer.status;
      refuse(req, res, answer);
      complete({ status, end: 'address_denied', bytesUp: 0, bytesDown: 0, deniedAddress: err.denied });
    };
    const literal = guard.refuseLiteral(request.host, request.port);
    if (literal) return refuseAddress(literal);
    const lookup = guard.lookupFor(request.port);

    const upstream: ClientRequest = httpRequest({
      host: request.host,
      port: request.port,
      method: req.method,
      path,
      headers: upstreamRequestHeaders(req, authority, extraHeaders),
      setHost: false,
      agent,
      ...(lookup ? { lookup } : {}),
    });
    watchConnect(upstream, request, connectTimeoutMs, deadlines);

    upstream.on('error', (err) => {
      if (err instanceof DeniedAddressError) return refuseAddress(err);
      if (status !== 499 || res.headersSent || res.destroyed) {
        upstreamFailed = true;
        res.destroy();
        return;
      }
      log.warn({ err, host: request.host, port: request.port }, 'egress upstream unreachable');
      const answer = egressAnswer('upstream_unreachable', `Reins could not reach ${authority}: ${(err as Error).message}`);
      status = answer.status;
      refuse(req, res, answer);
      finish('upstream_unreachable');
    });

    upstream.once('response', (answer) => {
      status = answer.statusCode ?? 502;
      answer.on('error', () => undefined); // an aborted answer is handled on 'close'
      answer.on('data', (chunk: Buffer) => {
        bytesDown += chunk.length;
      });
      answer.once('close', () => {
        // The origin broke off mid-answer: the client must not take a truncated body for a whole one.
        if (!answer.complete) {
          upstreamFailed = true;
          res.destroy();
        }
      });
      res.writeHead(status, answer.statusMessage, downstreamResponseHeaders(answer));
      answer.pipe(res);
    });

    res.once('close', () => {
      if (!res.writableFinished) upstream.destroy();
      if (res.writableFinished) finish('forwarded');
      else finish(upstreamFailed ? 'upstream_unreachable' : 'client_aborted');
    });

    req.on('error', () => undefined); // a client that goes away is handled on res 'close'
    req.on('data', (chunk: Buffer) => {
      bytesUp += chunk.length;
    });
    req.pipe(upstream);
  }

  function handleConnect(req: IncomingMessage, client: Duplex, head: Buffer): void {
    const started = performance.now();
    let clientFailed = false;
    let clientClosed = false;
    client.on('error', () => {
      clientFailed = true;
    });
    client.once('close', () => {
      clientClosed = true;
    });
    const parsed = parseConnectTarget(req.url ?? '');
    if (!parsed.ok) return writeRawAnswer(client, egressAnswer('bad_request', parsed.message));
    const target = parsed.target;
    const admitted = (admission: Admission<C>): void => {
      if (!admission.admitted) return writeRawAnswer(client, admission.answer);
      const complete = completer(admission.request, started);
      if (clientClosed) {
        complete({ status: 499, end: 'client_aborted', bytesUp: 0, bytesDown: 0 });
        return;
      }
      tunnel(client, head, admission.request, complete, () => clientFailed);
    };
    const failed = (err: unknown): void => writeRawAnswer(client, hookFailure(err));
    let admission: Admission<C> | Promise<Admission<C>>;
    try {
      admission = admit(req, target, 'https', 'CONNECT', started);
    } catch (err) {
      return failed(err);
    }
    if (admission instanceof Promise) admission.then(admitted, failed);
    else admitted(admission);
  }

  function tunnel(
    client: Duplex,
    head: Buffer,
    request: EgressRequest<C>,
    complete: (result: Omit<EgressResult, 'durationMs'>) => void,
    clientFailed: () => boolean,
  ): void {
    const refuseAddress = (err: DeniedAddressError) => {
      complete({ status: 403, end: 'address_denied', bytesUp: 0, bytesDown: 0, deniedAddress: err.denied });
      writeRawAnswer(client, egressAnswer('address_denied', err.message));
    };
    const literal = guard.refuseLiteral(request.host, request.port);
    if (literal) return refuseAddress(literal);
    // No Nagle on either leg: a tunnel relays small TLS records that must not wait for an ACK.
    const connectOptions: NetConnectOpts = { host: request.host, port: request.port, noDelay: true };
    const lookup = guard.lookupFor(request.port);
    if (lookup) connectOptions.lookup = lookup;
    const upstream: Socket = netConnect(connectOptions);
    (client as Partial<Socket>).setNoDelay?.(true);
    tunnels.add(client);
    tunnels.add(upstream);
    let established = false;
    let closed = 0;
    deadlines.add(upstream, connectTimeoutMs, () => upstream.destroy(new Error(`connection timed out after ${connectTimeoutMs} ms`)));

    const onClosed = () => {
      closed += 1;
      if (closed < 2) return;
      tunnels.delete(client);
      tunnels.delete(upstream);
      if (!established) return;
      complete({ status: 200, end: clientFailed() ? 'client_aborted' : 'forwarded', bytesUp: upstream.bytesWritten, bytesDown: upstream.bytesRead });
    };
    // Whichever side closes first, the other gets what is already in flight and then closes too.
    client.once('close', () => {
      if (!established) {
        upstream.destroy();
        complete({ status: 499, end: 'client_aborted', bytesUp: 0, bytesDown: 0 });
      } else if (clientFailed()) upstream.destroy();
      else upstream.destroySoon();
      onClosed();
    });
    upstream.once('close', () => {
      deadlines.cancel(upstream);
      if (established) endSoon(client);
      onClosed();
    });
    upstream.on('error', (err) => {
      if (established || client.destroyed) return;
      if (err instanceof DeniedAddressError) return refuseAddress(err);
      log.warn({ err, host: request.host, port: request.port }, 'egress upstream unreachable');
      const answer = egressAnswer('upstream_unreachable', `Reins could not reach ${request.host}:${request.port}: ${err.message}`);
      complete({ status: answer.status, end: 'upstream_unreachable', bytesUp: 0, bytesDown: 0 });
      writeRawAnswer(client, answer);
    });
    upstream.once('connect', () => {
      deadlines.cancel(upstream);
      if (client.destroyed) return;
      established = true;
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      relay(upstream, client);
      relay(client, upstream);
    });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => handleRequest(req, res, false));
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => handleRequest(req, res, true));
  server.on('connect', (req: IncomingMessage, socket: Duplex, head: Buffer) => handleConnect(req, socket, head));
  // No 'upgrade' listener on purpose: Node then serves an Upgrade request as a plain one and the Upgrade header,
  // hop-by-hop, is dropped, so the origin answers without switching protocols. WebSocket clients tunnel instead.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === 'ECONNRESET' || err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || !socket.writable) {
      socket.destroy();
      return;
    }
    const answer =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? egressAnswer('headers_too_large', 'the request headers are larger than the Reins egress proxy accepts')
        : egressAnswer('bad_request', `malformed HTTP request (${err.code ?? 'parse error'}): send GET http://host/path HTTP/1.1 or CONNECT host:port HTTP/1.1`);
    writeRawAnswer(socket, answer);
  });

  return {
    server,
    listen(port: number, host?: string): Promise<AddressInfo> {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const address = server.address() as AddressInfo;
          ownPorts.add(address.port);
          resolve(address);
        });
      });
    },
    async close(): Promise<void> {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      for (const socket of tunnels) socket.destroy();
      deadlines.close();
      agent.destroy();
      await closed;
    },
  };
}

/** A connect deadline for a plain request's upstream socket (a reused keep-alive socket is already connected). */
function watchConnect(upstream: ClientRequest, target: EgressTarget, timeoutMs: number, deadlines: ConnectDeadlines): void {
  upstream.once('socket', (socket: Socket) => {
    if (!socket.connecting) return;
    deadlines.add(socket, timeoutMs, () => upstream.destroy(new Error(`connection to ${target.host}:${target.port} timed out after ${timeoutMs} ms`)));
    socket.once('connect', () => deadlines.cancel(socket));
    socket.once('close', () => deadlines.cancel(socket));
  });
}

/**
 * Bytes from one side of a tunnel to the other as they arrive, the reader paused while the writer's buffer is
 * full, and the writer ended when the reader ends: what `pipe` does for a tunnel, without the bookkeeping of
 * its listeners on both sides, set up and torn down for every connection.
 */
function relay(from: Duplex, to: Duplex): void {
  const resume = () => from.resume();
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) {
      from.pause();
      to.once('drain', resume);
    }
  });
  from.once('end', () => to.end());
  if (!from.readableFlowing) from.resume();
}

/** Ends a socket once what was written to it is flushed. */
function endSoon(socket: Duplex): void {
  if (socket.writableEnded) {
    if (socket.writableFinished) socket.destroy();
    else socket.once('finish', () => socket.destroy());
    return;
  }
  socket.end(() => socket.destroy());
}
