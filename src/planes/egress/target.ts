/**
 * Where a proxied request goes: the absolute URI of a plain request (`GET http://host:port/path`) or the
 * authority of a CONNECT (`host:port`). Pure parsing, no I/O.
 *
 * The host the policy decides on must be the host Reins connects to, so both forms go through the same WHATWG
 * URL host parser (the one clients use): `LOCALHOST.`, `0x7f.1` or `ex%61mple.com` arrive at `decide` as
 * `localhost`, `127.0.0.1` and `example.com`, never as a spelling a deny rule would miss.
 */

export interface EgressTarget {
  host: string;
  port: number;
}

export interface HttpTarget extends EgressTarget {
  /** Path and query as the client sent them (not re-encoded), fragment dropped; `/` when empty. */
  path: string;
  /** The `Host` header the origin gets: from the URI, never from the client's Host header. */
  authority: string;
}

export type Parsed<T> = { ok: true; target: T } | { ok: false; message: string };

// RFC 3986 reg-name characters (percent escapes included) plus non-ASCII, which the URL parser maps to punycode.
const REG_NAME = /^[A-Za-z0-9\-._~%!$&'()*+,;=\u0080-\uFFFF]+$/;
const IPV6_LITERAL = /^\[[0-9A-Fa-f:.]+\]$/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

function fail<T>(message: string): Parsed<T> {
  return { ok: false, message };
}

/** Hosts already parsed: an agent reaches the same few hosts again and again, and the URL parser is the
 * costliest step of reading a CONNECT (it is a pure function of the text, so remembering it changes nothing). */
const normalized = new Map<string, string | null>();
const NORMALIZED_ENTRIES = 4096;
/** Longer than any DNS name (253): not remembered, so the memo stays small whatever clients send. */
const NORMALIZED_LENGTH = 255;

/** The canonical host, or null when `raw` (bracketed for IPv6) is not a host. */
export function normalizeHost(raw: string): string | null {
  if (raw.length > NORMALIZED_LENGTH) return parseHost(raw);
  let host = normalized.get(raw);
  if (host === undefined) {
    host = parseHost(raw);
    if (normalized.size >= NORMALIZED_ENTRIES) normalized.clear();
    normalized.set(raw, host);
  }
  return host;
}

function parseHost(raw: string): string | null {
  if (!(IPV6_LITERAL.test(raw) || REG_NAME.test(raw))) return null;
  let hostname: string;
  try {
    hostname = new URL(`http://${raw}/`).hostname;
  } catch {
    return null;
  }
  if (hostname.startsWith('[')) return hostname.slice(1, -1);
  // A fully qualified name's root dot names the same host; without this `blocked.test.` would pass a rule on `blocked.test`.
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  return host === '' ? null : host;
}

/** 1-5 ASCII digits naming 1-65535 (a loop, not /^\d{1,5}$/: it runs on every CONNECT, code cold). */
function parsePort(raw: string): number | null {
  if (raw.length === 0 || raw.length > 5) return null;
  let port = 0;
  for (let i = 0; i < raw.length; i++) {
    const digit = raw.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return null;
    port = port * 10 + digit;
  }
  return port >= 1 && port <= 65535 ? port : null;
}

/** Splits `host[:port]` with IPv6 literals in brackets; port undefined when absent. */
function splitAuthority(authority: string): { host: string; port: string | undefined } | null {
  if (authority.startsWith('[')) {
    const close = authority.indexOf(']');
    if (close < 0) return null;
    const rest = authority.slice(close + 1);
    if (rest !== '' && !rest.startsWith(':')) return null;
    return { host: authority.slice(0, close + 1), port: rest === '' ? undefined : rest.slice(1) };
  }
  const colon = authority.lastIndexOf(':');
  if (colon < 0) return { host: authority, port: undefined };
  return { host: authority.slice(0, colon), port: authority.slice(colon + 1) };
}

export function formatAuthority(host: string, port: number, defaultPort: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return port === defaultPort ? h : `${h}:${port}`;
}

/** The target of `CONNECT host:port`: the port is required (RFC 9110 §9.3.6). */
export function parseConnectTarget(raw: string): Parsed<EgressTarget> {
  const parts = splitAuthority(raw);
  if (!parts || parts.port === undefined) return fail(`CONNECT needs a target of the form host:port (got "${raw}")`);
  const host = normalizeHost(parts.host);
  if (host === null) return fail(`"${parts.host}" in the CONNECT target is not a valid host name or IP address`);
  const port = parsePort(parts.port);
  if (port === null) return fail(`"${parts.port}" in the CONNECT target is not a port (1-65535)`);
  return { ok: true, target: { host, port } };
}

/** The target of a plain proxied request, which must be an absolute `http://` URI. */
export function parseHttpTarget(raw: string): Parsed<HttpTarget> {
  const scheme = SCHEME.exec(raw)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    return fail(
      `the Reins egress proxy needs an absolute URL in the request line (GET http://host/path), or CONNECT host:port for a tunnel; got "${raw}"`,
    );
  }
  if (scheme !== 'http') {
    // An https:// URL here would mean Reins opening TLS on the client's behalf, which it never does.
    return fail(
      scheme === 'https'
        ? 'https:// URLs cannot be sent to the proxy in absolute form; open a tunnel with CONNECT host:443 (what HTTPS_PROXY makes clients do)'
        : `the Reins egress proxy forwards only http:// URLs (and CONNECT tunnels), not ${scheme}://`,
    );
  }
  const afterScheme = raw.slice(scheme.length + 3);
  const end = afterScheme.search(/[/?#]/);
  const authority = end < 0 ? afterScheme : afterScheme.slice(0, end);
  let path = end < 0 ? '' : afterScheme.slice(end);
  if (authority.includes('@')) return fail('user info (user:password@) in the request URL is not forwarded; send an Authorization header instead');
  const parts = splitAuthority(authority);
  if (!parts || parts.host === '') return fail(`"${authority}" in the request URL is not a host[:port]`);
  const host = normalizeHost(parts.host);
  if (host === null) return fail(`"${parts.host}" in the request URL is not a valid host name or IP address`);
  // An empty port (`http://host:/`) means the default, as in RFC 3986 §3.2.3.
  const port = parts.port === undefined || parts.port === '' ? 80 : parsePort(parts.port);
  if (port === null) return fail(`"${parts.port ?? ''}" in the request URL is not a port (1-65535)`);
  const hash = path.indexOf('#');
  if (hash >= 0) path = path.slice(0, hash);
  if (path === '' || path.startsWith('?')) path = `/${path}`;
  return { ok: true, target: { host, port, path, authority: formatAuthority(host, port, 80) } };
}
