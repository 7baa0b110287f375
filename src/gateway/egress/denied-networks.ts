/**
 * Networks the egress proxy never connects to, whatever a policy said. Policies decide on the name the agent
 * asked for, before any DNS lookup; a name is only a name, and `metadata.attacker.example` can resolve to the
 * cloud's instance metadata service (169.254.169.254), which hands out the node's credentials. So the addresses a
 * name resolves to are checked here, in the lookup of the very connection that uses them (no second lookup that a
 * rebinding DNS server could answer differently), and an address literal before connecting.
 *
 * Default (`egress.deniedNetworks` absent): link-local IPv4 and IPv6, where every major cloud's metadata service
 * and other host-local services live, plus the two metadata addresses outside them (AWS's IPv6 one, Alibaba's).
 * Configure more (e.g. `10.0.0.0/8`) to keep agents out of private ranges; `[]` turns the check off.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

export const DEFAULT_DENIED_NETWORKS: readonly string[] = ['169.254.0.0/16', 'fe80::/10', 'fd00:ec2::254/128', '100.100.100.200/32'];

/** Bounds the memo of checked addresses; it starts over when full. */
const SEEN_ENTRIES = 4096;

interface Network {
  text: string;
  list: BlockList;
}

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

/** Raised by the guarded lookup, and for an address literal: the connection is refused, not attempted. */
export class DeniedAddressError extends Error {
  readonly code = 'REINS_DENIED_ADDRESS';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly network: string,
  ) {
    super(
      host === address
        ? `Reins egress proxy: ${address} is in ${network}, a network agents may not reach (egress.deniedNetworks)`
        : `Reins egress proxy: ${host} resolves to ${address}, in ${network}, a network agents may not reach (egress.deniedNetworks)`,
    );
    this.name = 'DeniedAddressError';
  }

  /** What the audit event records of the refusal. */
  get denied(): { address: string; network: string; message: string } {
    return { address: this.address, network: this.network, message: this.message };
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

export class DeniedNetworks {
  private readonly all = new BlockList();
  private readonly networks: Network[] = [];

  /** Throws on an entry that is not a network; configuration validates the list first, naming the entry. */
  constructor(entries: readonly string[]) {
    for (const text of entries) {
      const parsed = parseNetwork(text);
      if ('error' in parsed) throw new Error(parsed.error);
      const list = new BlockList();
      list.addSubnet(parsed.network, parsed.prefix, parsed.family);
      this.all.addSubnet(parsed.network, parsed.prefix, parsed.family);
      this.networks.push({ text, list });
    }
  }

  get empty(): boolean {
    return this.networks.length === 0;
  }

  /** The denied network an address is in (as configured), or null. IPv4-mapped IPv6 addresses count as IPv4. */
  networkOf(address: string): string | null {
    let network = this.seen.get(address);
    if (network === undefined) {
      network = this.match(address);
      if (this.seen.size >= SEEN_ENTRIES) this.seen.clear();
      this.seen.set(address, network);
    }
    return network;
  }

  /**
   * Addresses already checked: agents reach the same few addresses again and again, and BlockList.check builds a
   * SocketAddress on every call (about 10 µs of a CONNECT's set-up). A pure function of the text, so remembering
   * it changes nothing.
   */
  private readonly seen = new Map<string, string | null>();

  private match(address: string): string | null {
    const version = isIP(address);
    if (version === 0) return null;
    const family = version === 4 ? 'ipv4' : 'ipv6';
    if (!this.all.check(address, family)) return null;
    return this.networks.find((n) => n.list.check(address, family))?.text ?? 'a denied network';
  }

  /** The refusal for a target that is an address literal in a denied network; null for names and other addresses. */
  refuseLiteral(host: string): DeniedAddressError | null {
    const network = isIP(host) === 0 ? null : this.networkOf(host);
    return network === null ? null : new DeniedAddressError(host, host, network);
  }

  /**
   * A `lookup` for net.connect and http.request: dns.lookup, then a refusal when any address the name resolved to
   * is denied. Any, not only the one tried first: a name answering both a public and a metadata address must not
   * get through on the order of the answers.
   */
  readonly lookup = (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, options as LookupAllOptions, (err, addresses: LookupAddress[] | string, family?: number) => {
      if (err) return callback(err, addresses as string, family);
      const list = typeof addresses === 'string' ? [{ address: addresses, family: family ?? 4 }] : addresses;
      for (const a of list) {
        const network = this.networkOf(a.address);
        if (network !== null) return callback(new DeniedAddressError(hostname, a.address, network), '', 0);
      }
      callback(null, addresses, family);
    });
  };
}
