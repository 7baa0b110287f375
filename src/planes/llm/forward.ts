/**
 * What a governed call sends upstream: the client's headers less its credential and the hop-by-hop ones, and a
 * keep-alive pool per provider origin. The answer comes back through shared/answer-relay.ts.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';
import { listedInConnection } from '../../shared/answer-headers.js';
import { HOP_BY_HOP_HEADERS } from '../../shared/hop-by-hop.js';

/** RFC 9110 hop-by-hop headers plus those the gateway sets itself. */
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS, 'host', 'content-length']);

/**
 * Request headers never forwarded: the client's credential (a Reins secret, in whichever header its SDK uses) and anything that would
 * sign or identify the caller to the provider as someone else; Reins' own headers; cookies for Reins' origin.
 */
const NEVER_UPSTREAM = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'x-amz-security-token', 'x-amz-date', 'x-amz-content-sha256', 'accept-encoding', 'expect']);

export function upstreamHeaders(client: IncomingHttpHeaders, credential: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  const connectionListed = listedInConnection(client.connection);
  // for-in and Object.assign rather than Object.entries and a spread: this runs on every call, and on Node 20's V8
  // the spread of two header objects into a third took about 5 µs of a call at the gateway's maximum (perf).
  for (const name in client) {
    const value = client[name];
    if (value === undefined) continue;
    const n = name.toLowerCase();
    // HTTP/2 pseudo-headers (`:path`, `:authority`, …) describe the client's request to Reins, not the upstream's.
    if (n.charCodeAt(0) === 58 /* : */ || HOP_BY_HOP.has(n) || NEVER_UPSTREAM.has(n) || connectionListed.has(n) || n.startsWith('x-reins-')) continue;
    out[n] = Array.isArray(value) ? value.join(', ') : value;
  }
  // Asking for identity keeps the bytes the client gets equal to the bytes metered, and content-length honest.
  out['accept-encoding'] = 'identity';
  return Object.assign(out, credential);
}

/** One keep-alive pool per upstream origin, closed with the server. */
export class Upstreams {
  private readonly pools = new Map<string, Pool>();

  /** Keyed by the configured base URL as written, so the request path parses no URL. */
  pool(baseUrl: string): Pool {
    let pool = this.pools.get(baseUrl);
    if (!pool) {
      const key = new URL(baseUrl).origin;
      // Long generations stream for minutes; the provider, not the gateway, decides when a body is too slow.
      pool = new Pool(key, { connections: 128, headersTimeout: 600_000, bodyTimeout: 600_000, keepAliveTimeout: 30_000 });
      this.pools.set(baseUrl, pool);
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.pools.values()].map((p) => p.close()));
    this.pools.clear();
  }
}
