/** Address literals the engine treats specially, without a parser dependency: the sensor reports IPv4. */

/** The cloud instance metadata service on every major cloud (and AWS's IPv6 endpoint). */
export const IMDS_ADDRESSES: ReadonlySet<string> = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** NodeLocal DNSCache's usual listen address. */
export const NODELOCAL_DNS_ADDRESS = '169.254.20.10';

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function isIpLiteral(text: string): boolean {
  return IPV4.test(text) || text.includes(':');
}

export function isImds(ip: string): boolean {
  return IMDS_ADDRESSES.has(ip.toLowerCase());
}

/** Link-local (169.254.0.0/16, fe80::/10), loopback (127.0.0.0/8, ::1) and unspecified addresses. */
export function isNodeOrLinkLocal(ip: string): boolean {
  if (ip.startsWith('169.254.') || ip.startsWith('127.') || ip === '0.0.0.0') return true;
  const lower = ip.toLowerCase();
  if (lower === '::1' || lower === '::') return true;
  return /^fe[89ab][0-9a-f]:/.test(lower);
}

/** An egress host as the gateway records it, reduced to what DNS and the sensor would call it. */
export function normalizeHost(raw: string): string {
  let host = raw.trim().toLowerCase();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracketed) return bracketed[1]!;
  const withPort = /^([^:]+):\d+$/.exec(host);
  if (withPort) host = withPort[1]!;
  while (host.endsWith('.')) host = host.slice(0, -1);
  return host;
}

/** A destination no identity was established for (rung R6): `ip:<address> (unattributed)`. */
export function unattributedName(ip: string): string {
  return `ip:${ip} (unattributed)`;
}
