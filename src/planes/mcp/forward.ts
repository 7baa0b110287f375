/**
 * The wire between the gateway and an upstream MCP server: which of the client's headers go up (a short list,
 * never its Authorization, which is the Reins token), and a keep-alive pool per upstream origin.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Pool } from 'undici';

/**
 * The streamable HTTP transport's own headers, the 2026-07-28 revision's routing headers (SEP-2243), and the
 * body's description. Everything else a client sends (its Authorization, cookies, X-Reins-*) stays here.
 */
const FORWARDED = new Set([
  'accept',
  'content-type',
  'user-agent',
  'last-event-id',
  'mcp-session-id',
  'mcp-protocol-version',
  'mcp-method',
  'mcp-name',
  // W3C trace context: the client's trace continues at the server (Reins' own span replaces the parent when exporting).
  'traceparent',
  'tracestate',
]);

function forwarded(name: string): boolean {
  return FORWARDED.has(name) || name.startsWith('mcp-param-');
}

/** The client's transport headers, then the server's configured ones (which win, e.g. its Authorization). */
export function upstreamHeaders(client: IncomingHttpHeaders, configured: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  // for-in and Object.assign rather than Object.entries and a spread: this runs on every forwarded POST, and on
  // Node 20's V8 the spread of two header objects into a third was a few µs of it.
  for (const name in client) {
    const value = client[name];
    if (value === undefined || !forwarded(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The proxy reads tools/list results and call answers on the way: they must arrive as sent, not compressed.
  out['accept-encoding'] = 'identity';
  return Object.assign(out, configured);
}

/** A configured server resolved once: the pool's origin, the request path, its headers in lower case. */
export interface Upstream {
  name: string;
  origin: string;
  path: string;
  headers: Readonly<Record<string, string>>;
}

export function resolveUpstream(name: string, url: string, headers: Readonly<Record<string, string>>): Upstream {
  const u = new URL(url);
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v;
  return { name, origin: u.origin, path: `${u.pathname}${u.search}`, headers: lower };
}

export class McpUpstreams {
  private readonly pools = new Map<string, Pool>();

  pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      // A GET stream may sit quiet for as long as the server has nothing to say, and a tool may run for
      // minutes before its SSE answer: no body timeout. The client's own request timeout (the MCP SDK's is
      // 60 s) ends a call it gave up on, and its hang-up aborts the upstream request.
      pool = new Pool(origin, { connections: 64, headersTimeout: 600_000, bodyTimeout: 0, keepAliveTimeout: 30_000 });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /** Lets requests in flight finish for a moment, then cuts what is still open (GET streams never end). */
  async close(graceMs = 2_000): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.allSettled(
      pools.map(async (p) => {
        let timer: NodeJS.Timeout | undefined;
        const grace = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), graceMs)));
        const closed = await Promise.race([p.close().then(() => 'closed' as const), grace]);
        clearTimeout(timer);
        if (closed === 'late') await p.destroy();
      }),
    );
  }
}
