/**
 * Everything the proxy answers itself, in one vocabulary: a kind, its status, a text/plain body with the
 * sentence the person sees (curl, pip and git print a proxy's body; none of them parse JSON from it).
 */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export type EgressErrorKind =
  | 'bad_request'
  | 'headers_too_large'
  | 'proxy_auth_required'
  | 'rate_limited'
  | 'denied'
  | 'address_denied'
  | 'upgrade_unsupported'
  | 'upstream_unreachable'
  | 'internal_error';

const STATUS: Record<EgressErrorKind, number> = {
  bad_request: 400,
  headers_too_large: 431,
  proxy_auth_required: 407,
  rate_limited: 429,
  denied: 403,
  address_denied: 403,
  upgrade_unsupported: 501,
  upstream_unreachable: 502,
  internal_error: 500,
};

export interface EgressAnswer {
  kind: EgressErrorKind;
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function egressAnswer(kind: EgressErrorKind, message: string): EgressAnswer {
  const body = `${message}\n`;
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    'x-reins-egress': kind,
  };
  if (kind === 'proxy_auth_required') headers['proxy-authenticate'] = 'Basic realm="reins"';
  return { kind, status: STATUS[kind], headers, body };
}

/** Answers a plain request. The connection stays open for the client's next request unless the answer is late. */
export function sendAnswer(res: ServerResponse, a: EgressAnswer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(a.status, a.headers);
  res.end(a.body);
}

/**
 * Answers on a raw socket (a CONNECT, a parse error) and closes it: after a refused CONNECT the client opens a
 * new connection, which is what curl, undici and Node's agents do anyway.
 */
export function writeRawAnswer(socket: Duplex, a: EgressAnswer): void {
  if (socket.destroyed || !socket.writable) {
    socket.destroy();
    return;
  }
  const head = [`HTTP/1.1 ${a.status} ${STATUS_CODES[a.status] ?? ''}`];
  for (const [name, value] of Object.entries(a.headers)) head.push(`${name}: ${value}`);
  head.push('connection: close', '', '');
  socket.end(head.join('\r\n') + a.body);
}
