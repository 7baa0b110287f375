/**
 * Header rewriting for plain proxied requests. Unlike the LLM gateway, the origin's credentials (Authorization,
 * cookies) are the client's own business and pass through; only the hop-by-hop headers of RFC 9110 §7.6.1 and
 * the client's Reins token (Proxy-Authorization) stop at the proxy. Raw header lists keep order, case and
 * repeated fields (several Set-Cookie) intact.
 */
import type { IncomingMessage } from 'node:http';
import { HOP_BY_HOP_HEADERS } from '../../shared/hop-by-hop.js';

const HOP_BY_HOP = new Set(HOP_BY_HOP_HEADERS);

/**
 * Also dropped on the way up: Host is rewritten from the URI, and Expect is answered by the proxy itself (it
 * says 100 Continue only after the policy allowed the request, so a refused upload is never sent).
 */
const SET_BY_PROXY = new Set(['host', 'expect']);

function connectionListed(raw: string[]): Set<string> {
  const listed = new Set<string>();
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'connection') continue;
    for (const token of raw[i + 1]!.split(',')) {
      const t = token.trim().toLowerCase();
      if (t !== '') listed.add(t);
    }
  }
  return listed;
}

function filter(raw: string[], drop: (name: string) => boolean): string[] {
  const listed = connectionListed(raw);
  const out: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || listed.has(n) || drop(n)) continue;
    out.push(name, raw[i + 1]!);
  }
  return out;
}

/** The headers the origin gets, as a flat raw list, with Host first; `extra` replaces the client's fields of those names. */
export function upstreamRequestHeaders(req: IncomingMessage, authority: string, extra?: Readonly<Record<string, string>>): string[] {
  const replaced = extra ? new Set(Object.keys(extra).map((n) => n.toLowerCase())) : null;
  const out = ['Host', authority, ...filter(req.rawHeaders, (n) => SET_BY_PROXY.has(n) || (replaced !== null && replaced.has(n)))];
  if (extra) for (const [name, value] of Object.entries(extra)) out.push(name, value);
  const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
  // Node frames a body-less POST as an empty chunked body; an explicit zero keeps the client's framing.
  if (!hasBody && !BODYLESS_BY_DEFAULT.has(req.method ?? 'GET')) out.push('Content-Length', '0');
  return out;
}

/** Methods Node sends without a body (and without Content-Length) when none is written. */
const BODYLESS_BY_DEFAULT = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);

/** The headers the client gets from the origin's answer. Content-Length is end-to-end and kept. */
export function downstreamResponseHeaders(res: IncomingMessage): string[] {
  return filter(res.rawHeaders, () => false);
}
