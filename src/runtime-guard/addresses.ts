/** Address literals the engine treats specially, without a parser dependency: the sensor reports IPv4. */

/** The cloud instance metadata service on every major cloud (and AWS's IPv6 endpoint). */
export const IMDS_ADDRESSES: ReadonlySet<string> = new Set(['169.254.169.254', 'fd00:ec2::254']);

/** NodeLocal DNSCache's usual listen address. */
export const NODELOCAL_DNS_ADDRESS = '169.254.20.10';

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function isIpLiteral(text: string): boolean {
  return IPV4.test(text) || text.includes(':');
}

/**
 * An IPv6 literal. Spec "Limits" (address family): the sensor observes IPv4 only and IPv6 traffic yields no row and
 * no marker, so the engine drops IPv6 destinations (and a DNS answer whose first address is IPv6 gives no destIP).
 */
export function isIpv6(ip: string): boolean {
  return ip.includes(':');
}

function ipv4ToInt(ip: string): number | null {
  const m = IPV4.exec(ip);
  if (!m) return null;
  let value = 0;
  for (let i = 1; i <= 4; i++) {
    const octet = Number(m[i]);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

/** An IPv4 CIDR (`10.244.1.0/24`) as [first, last] address numbers; null for anything else (IPv6 included). */
export function parseIpv4Cidr(cidr: string): [number, number] | null {
  const slash = cidr.indexOf('/');
  if (slash < 0) return null;
  const base = ipv4ToInt(cidr.slice(0, slash));
  const bits = Number(cidr.slice(slash + 1));
  if (base === null || !Number.isInteger(bits) || bits < 0 || bits > 32) return null;
  const size = 2 ** (32 - bits);
  const first = Math.floor(base / size) * size;
  return [first, first + size - 1];
}

/** True when the IPv4 address lies inside one of the ranges. */
export function inIpv4Ranges(ip: string, ranges: ReadonlyArray<readonly [number, number]>): boolean {
  if (ranges.length === 0) return false;
  const value = ipv4ToInt(ip);
  if (value === null) return false;
  for (const [first, last] of ranges) if (value >= first && value <= last) return true;
  return false;
}

/**
 * kube-apiserver refuses a Service range wider than /12 for IPv4 (`--service-cluster-ip-range`: "the mask must be >= 12"),
 * so a covering prefix wider than that cannot be one Service range.
 */
export const WIDEST_SERVICE_PREFIX = 12;

/**
 * The narrowest IPv4 CIDR holding every address given (IPv6 and malformed ones ignored), or null when there is none or
 * it would be wider than `widest` bits. Used for the Service range when the API does not expose it: every ClusterIP lies
 * in the cluster's Service range, so the narrowest prefix holding them all lies inside it too (one range), never past it.
 */
export function coveringIpv4Cidr(addresses: Iterable<string>, widest = WIDEST_SERVICE_PREFIX): string | null {
  let low = Infinity;
  let high = -Infinity;
  for (const ip of addresses) {
    const value = ipv4ToInt(ip);
    if (value === null) continue;
    if (value < low) low = value;
    if (value > high) high = value;
  }
  if (low === Infinity) return null;
  let bits = 32;
  while (bits > 0 && Math.floor(low / 2 ** (32 - bits)) !== Math.floor(high / 2 ** (32 - bits))) bits -= 1;
  if (bits < widest) return null;
  const size = 2 ** (32 - bits);
  const first = Math.floor(low / size) * size;
  const octets = [first >>> 24, (first >>> 16) & 255, (first >>> 8) & 255, first & 255];
  return `${octets.join('.')}/${bits}`;
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
