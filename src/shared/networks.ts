/**
 * IP networks as configuration writes them (`10.0.0.0/8`, `fd00::/8`, one address), and the networks the egress
 * proxy denies by default. Configuration validates `egress.deniedNetworks` with these; the egress proxy's guard
 * (planes/egress/denied-networks.ts) builds its lists from them.
 */
import { isIP } from 'node:net';

export const DEFAULT_DENIED_NETWORKS: readonly string[] = [
  '127.0.0.0/8', // loopback: this host's own services (databases, caches, Reins itself)
  '::1/128',
  '0.0.0.0/8', // unspecified: connecting to it reaches this host
  '::/128',
  '169.254.0.0/16', // link-local: AWS, GCP and Azure metadata (169.254.169.254), ECS task metadata, host-local services
  'fe80::/10',
  '10.0.0.0/8', // RFC 1918 private ranges: the cluster, the VPC, the office network
  '172.16.0.0/12',
  '192.168.0.0/16',
  '100.64.0.0/10', // shared address space (RFC 6598): carrier NAT, Alibaba's metadata 100.100.100.200
  'fc00::/7', // unique local IPv6: private IPv6 networks, AWS's IPv6 metadata fd00:ec2::254
];

/** `10.0.0.0/8`, `fd00::/8`, or one address (a /32 or /128). Null with the reason when it is neither. */
export function parseNetwork(text: string): { network: string; prefix: number; family: 'ipv4' | 'ipv6' } | { error: string } {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const version = isIP(address);
  if (version === 0) return { error: `"${text}" is not an IP network: write an address or address/prefix, e.g. 10.0.0.0/8 or fd00::/8` };
  const max = version === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > max) return { error: `"${text}": the prefix length must be a whole number from 0 to ${max}` };
  return { network: address, prefix: Number(prefixText), family: version === 4 ? 'ipv4' : 'ipv6' };
}
