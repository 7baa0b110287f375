/**
 * Sends a governed call upstream over a keep-alive pool per provider origin and streams the answer back as
 * it arrives: status, provider errors and end-to-end headers pass through, bodies byte for byte.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Pool, util } from 'undici';
import { HOP_BY_HOP_HEADERS } from '../../shared/hop-by-hop.js';

/** RFC 9110 hop-by-hop headers plus those the gateway sets itself. */
const HOP_BY_HOP = new Set([...HOP_BY_HOP_HEADERS, 'host', 'content-length']);

/**
 * Request headers never forwarded: the client's credential (a Reins secret, in whichever header its SDK uses) and anything that would
 * sign or identify the caller to the provider as someone else; Reins' own headers; cookies for Reins' origin.
 */
const NEVER_UPSTREAM = new Set(['authorization', 'x-api-key', 'api-key', 'x-goog-api-key', 'cookie', 'x-amz-security-token', 'x-amz-date', 'x-amz-content-sha256', 'accept-encoding', 'expect']);

/** Response headers never passed back: cookies are for the provider's origin, not Reins'. */
const NEVER_DOWNSTREAM = new Set(['set-cookie', 'alt-svc', 'strict-transport-security']);

export function upstreamHeaders(client: IncomingHttpHeaders, credential: Record<string, string>): Record<string, string> {
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

/**
 * The answer's headers for the client. `sameBody`: the body goes to the client byte for byte, so the upstream's
 * content-length holds and is kept (the client then reads a sized body instead of a chunked one; a body cut short
 * is still an error for it). A body Reins rewrites gets its own framing.
 */
export function downstreamHeaders(upstream: IncomingHttpHeaders, sameBody = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (sameBody && upstream['content-length'] !== undefined) out['content-length'] = upstream['content-length'];
  const connectionListed = listedInConnection(upstream.connection);
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || NEVER_DOWNSTREAM.has(n) || connectionListed.has(n)) continue;
    out[n] = value;
  }
  return out;
}

/** An upstream answer's headers as undici's dispatcher hands them over: `[name, value, name, value, …]` in bytes. */
export interface AnswerHeaders {
  /** Lower-case name to value (a repeated name: every value, in order), for the gateway's own reading. */
  byName: Record<string, string | string[]>;
  /** What `downstreamHeaders` keeps, as the flat `[name, value, …]` list `writeHead` takes (repeats kept as lines). */
  forClient: string[];
}

/**
 * `downstreamHeaders` on the raw list: one pass that both reads the answer's headers and picks the client's, without
 * the header object undici's `request()` builds and Node's `writeHead` then walks again.
 */
export function answerHeaders(raw: readonly Buffer[], sameBody = false): AnswerHeaders {
  const byName: Record<string, string | string[]> = {};
  const names: string[] = [];
  const values: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = util.headerNameToString(raw[i]!);
    const value = raw[i + 1]!.toString('latin1');
    names.push(name);
    values.push(value);
    const seen = byName[name];
    // An own property only: a header named like an Object.prototype member ("constructor") must not find it.
    if (seen === undefined || !Object.hasOwn(byName, name)) {
      if (name === '__proto__') Object.defineProperty(byName, name, { value, enumerable: true, configurable: true, writable: true });
      else byName[name] = value;
    } else if (typeof seen === 'string') byName[name] = [seen, value];
    else seen.push(value);
  }
  const connectionListed = listedInConnection(Object.hasOwn(byName, 'connection') ? byName.connection : undefined);
  const forClient: string[] = [];
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!;
    if (n === 'content-length' ? !sameBody : HOP_BY_HOP.has(n) || NEVER_DOWNSTREAM.has(n) || connectionListed.has(n)) continue;
    forClient.push(n, values[i]!);
  }
  return { byName, forClient };
}

const NONE: ReadonlySet<string> = new Set();

function listedInConnection(value: string | string[] | undefined): ReadonlySet<string> {
  // Most requests name nothing but keep-alive here: no set to build.
  if (value === undefined || value === 'keep-alive' || value === 'close') return NONE;
  const joined = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(joined.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== ''));
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
