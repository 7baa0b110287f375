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
 * Whether an answer's header (lower-case name) goes back to the client. `sameBody`: the body goes to the client byte
 * for byte, so the upstream's content-length holds and is kept (the client then reads a sized body instead of a
 * chunked one; a body cut short is still an error for it). A body Reins rewrites gets its own framing.
 */
function goesDownstream(name: string, sameBody: boolean, connectionListed: ReadonlySet<string>): boolean {
  if (name === 'content-length') return sameBody;
  return !HOP_BY_HOP.has(name) && !NEVER_DOWNSTREAM.has(name) && !connectionListed.has(name);
}

/** The answer's headers for the client, from a header object (the MCP proxy's answers; see `goesDownstream`). */
export function downstreamHeaders(upstream: IncomingHttpHeaders, sameBody = false): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const connectionListed = listedInConnection(upstream.connection);
  for (const name in upstream) {
    const value = upstream[name];
    if (value === undefined) continue;
    const n = name.toLowerCase();
    if (goesDownstream(n, sameBody, connectionListed)) out[n] = value;
  }
  return out;
}

/**
 * An upstream answer's headers as undici's dispatcher hands them over (`[name, value, name, value, …]` in bytes),
 * read once: the lines the client gets (`goesDownstream`), and a lookup for the gateway's own reading. No object
 * keyed by header name is built: a fresh object given a dozen names one by one cost more than everything else here
 * (perf, 2026-11-28).
 */
export class AnswerHeaders {
  /** Every header as `[name, value, …]`, names lower-case, in the order they came. */
  private readonly lines: string[] = [];
  /** The headers the client gets, as the flat `[name, value, …]` list `writeHead` takes (repeats kept as lines). */
  readonly forClient: string[] = [];

  constructor(raw: readonly Buffer[], sameBody = false) {
    let connection: string | undefined;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = util.headerNameToString(raw[i]!);
      const value = raw[i + 1]!.toString('latin1');
      this.lines.push(name, value);
      if (name === 'connection') connection = connection === undefined ? value : `${connection},${value}`;
    }
    // A second pass: the names the answer lists in Connection are known only once every line is read.
    const listed = listedInConnection(connection);
    for (let i = 0; i < this.lines.length; i += 2) {
      if (goesDownstream(this.lines[i]!, sameBody, listed)) this.forClient.push(this.lines[i]!, this.lines[i + 1]!);
    }
  }

  /** The value of a header (lower-case name), the first when repeated; undefined when absent. */
  get(name: string): string | undefined {
    const lines = this.lines;
    for (let i = 0; i < lines.length; i += 2) if (lines[i] === name) return lines[i + 1];
    return undefined;
  }
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
