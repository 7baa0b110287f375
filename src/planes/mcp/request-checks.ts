/**
 * What the MCP proxy reads of a request before deciding anything: the route (`/mcp/{name}`), the Reins token, and
 * whether the 2026-07-28 revision's `Mcp-Method` / `Mcp-Name` headers agree with the body.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Inbound } from './json-rpc.js';

/** The built-in Reins MCP server's name: its requests are routed elsewhere. */
export const BUILT_IN_SERVER = 'reins';

/** Where SEP-2243's `Mcp-Name` header comes from in the body, by method. */
const NAME_PARAM: Record<string, 'name' | 'uri'> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'resources/subscribe': 'uri',
  'resources/unsubscribe': 'uri',
};

export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** `/mcp/{name}` with what follows the name ('' or a sub-path); null outside `/mcp/`. */
export function routeOf(url: string): { name: string; rest: string } | null {
  const path = pathOf(url);
  if (!path.startsWith('/mcp/')) return null;
  const tail = path.slice('/mcp/'.length);
  const slash = tail.indexOf('/');
  return slash < 0 ? { name: tail, rest: '' } : { name: tail.slice(0, slash), rest: tail.slice(slash) };
}

/** Whether a request belongs to the MCP proxy: under `/mcp/`, but not the built-in `/mcp/reins`. */
export function isMcpRequest(url: string | undefined): boolean {
  const route = url === undefined ? null : routeOf(url);
  return route !== null && route.name !== BUILT_IN_SERVER;
}

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

export function bearerToken(authorization: string | undefined): string | null {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  return m?.[1] ?? null;
}

export function decodeHeaderValue(value: string): string {
  // SEP-2243's sentinel for values outside the header character set.
  const m = /^=\?base64\?(.*)\?=$/i.exec(value);
  return m ? Buffer.from(m[1] ?? '', 'base64').toString('utf8') : value;
}

/**
 * The 2026-07-28 revision mirrors the method and the tool (or prompt, or resource) into `Mcp-Method` and
 * `Mcp-Name` so that intermediaries can route on them. Reins decides on the body; a header that says
 * otherwise could make an upstream or a middlebox act on a different tool than the one decided, so a
 * mismatch is refused (HTTP 400, -32020) rather than forwarded. Absent headers are not required here.
 */
export function headerMismatch(headers: IncomingHttpHeaders, m: Inbound): string | null {
  const method = header(headers, 'mcp-method');
  const name = header(headers, 'mcp-name');
  if (m.kind !== 'request' && m.kind !== 'notification') return null;
  if (method !== undefined && method !== m.method) return `Header mismatch: Mcp-Method is "${method}" but the body's method is "${m.method}"`;
  if (name === undefined || m.kind !== 'request') return null;
  const param = NAME_PARAM[m.method];
  const bodyName = param === undefined ? undefined : m.params?.[param];
  if (typeof bodyName === 'string' && decodeHeaderValue(name) !== bodyName) {
    return `Header mismatch: Mcp-Name is "${name}" but the body's params.${param} is "${bodyName}"`;
  }
  return null;
}

/** The protocol keys of a request's `_meta` (the stateless revision carries client info and version there). */
export function protocolMeta(params: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const meta = params?._meta;
  if (typeof meta !== 'object' || meta === null) return undefined;
  const out = Object.fromEntries(Object.entries(meta).filter(([k]) => k.startsWith('io.modelcontextprotocol/')));
  return Object.keys(out).length > 0 ? out : undefined;
}

