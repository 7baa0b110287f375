/**
 * Addresses the egress proxy never connects to, whatever a policy said. Policies decide on the name the agent
 * asked for, before any DNS lookup; a name is only a name, and `metadata.attacker.example` can resolve to the
 * cloud's instance metadata service (169.254.169.254), `localhost.attacker.example` to this very host. So the
 * addresses a name resolves to are checked here, in the lookup of the very connection that uses them (no second
 * lookup that a rebinding DNS server could answer differently), and an address literal before connecting.
 *
 * Two rules:
 * - `egress.deniedNetworks`. Default (the key absent; `DEFAULT_DENIED_NETWORKS`, shared/networks.ts): loopback,
 *   the unspecified addresses, link-local (where every major cloud's metadata service lives), the private ranges (RFC 1918, unique local IPv6) and the shared
 *   address space 100.64.0.0/10 (carrier NAT; Alibaba's metadata 100.100.100.200), as Stripe's Smokescreen does.
 *   A configured list replaces the default; `[]` turns this rule off.
 * - Reins' own ports, always: the proxy never connects to Reins' own listening ports (the HTTP port: control plane
 *   and gateway; the egress port) on this host's own addresses (loopback, unspecified, every interface address),
 *   whatever `deniedNetworks` says. An agent key must not reach the control plane through the proxy.
 *
 * Every spelling of an address counts as the address it is: the URL parser already turned `0`, `127.1`,
 * `0x7f000001` or `2130706433` into dotted IPv4; an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`)
 * is checked as its IPv4 address; and an unspecified address (0.0.0.0/8, `::`, `::ffff:0.0.0.0`), which reaches a
 * listener on this host, is denied wherever loopback is.
 */
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { parseNetwork } from '../../shared/networks.js';

/** Bounds the memo of checked addresses; it starts over when full. */
const SEEN_ENTRIES = 4096;

interface Network {
  text: string;
  list: BlockList;
}

/** What the network of an own-port refusal is called, in the audit event and the client's sentence. */
export const OWN_PORT_NETWORK = 'Reins itself';

/** Raised by the guarded lookup, and for an address literal: the connection is refused, not attempted. */
export class DeniedAddressError extends Error {
  readonly code = 'REINS_DENIED_ADDRESS';
  constructor(
    readonly host: string,
    readonly address: string,
    readonly network: string,
    /** Set when the refusal is the own-port rule: the Reins port asked for. */
    readonly ownPort?: number,
  ) {
    super(
      ownPort !== undefined
        ? host === address
          ? `Reins egress proxy: ${address}:${ownPort} is Reins itself; agents may not reach Reins through its egress proxy`
          : `Reins egress proxy: ${host} resolves to ${address}, and ${address}:${ownPort} is Reins itself; agents may not reach Reins through its egress proxy`
        : host === address
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
export type GuardedLookup = (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback) => void;

/** `fe80::1%eth0` -> `fe80::1`: BlockList never matches an address with a zone. */
function withoutZone(address: string): string {
  const zone = address.indexOf('%');
  return zone < 0 ? address : address.slice(0, zone);
}

function familyOf(address: string): 'ipv4' | 'ipv6' | null {
  const version = isIP(address);
  return version === 4 ? 'ipv4' : version === 6 ? 'ipv6' : null;
}

/** 0.0.0.0/8 and `::`, IPv4-mapped spellings included (BlockList matches `::ffff:0:0` against 0.0.0.0/8). */
const UNSPECIFIED = new BlockList();
UNSPECIFIED.addSubnet('0.0.0.0', 8, 'ipv4');
UNSPECIFIED.addAddress('::', 'ipv6');

/** This host whatever its interfaces: loopback and the unspecified addresses. */
const THIS_HOST = new BlockList();
THIS_HOST.addSubnet('127.0.0.0', 8, 'ipv4');
THIS_HOST.addAddress('::1', 'ipv6');
THIS_HOST.addSubnet('0.0.0.0', 8, 'ipv4');
THIS_HOST.addAddress('::', 'ipv6');

/** Whether an unspecified address (0.0.0.0/8, `::`, `::ffff:0.0.0.0`): connecting to one reaches this host. */
export function isUnspecified(address: string): boolean {
  const bare = withoutZone(address);
  const family = familyOf(bare);
  return family !== null && UNSPECIFIED.check(bare, family);
}

/**
 * Whether an address is this host's own: loopback, unspecified, or one of its interfaces' addresses (read at each
 * call: addresses come and go, and this is only asked of connections to one of Reins' own ports).
 */
export function isOwnAddress(address: string): boolean {
  const bare = withoutZone(address);
  const family = familyOf(bare);
  if (family === null) return false;
  if (THIS_HOST.check(bare, family)) return true;
  const own = new BlockList();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const a = withoutZone(entry.address);
      const f = familyOf(a);
      if (f) own.addAddress(a, f);
    }
  }
  return own.check(bare, family);
}

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

  /**
   * The denied network an address is in (as configured), or null. IPv4-mapped IPv6 addresses count as IPv4; an
   * unspecified address counts as loopback too (it reaches this host), so a list denying 127.0.0.0/8 or ::1
   * denies 0.0.0.0 and `::` with it.
   */
  networkOf(address: string): string | null {
    let network = this.seen.get(address);
    if (network === undefined) {
      network = this.classify(address);
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

  private classify(address: string): string | null {
    const bare = withoutZone(address);
    const direct = this.match(bare);
    if (direct !== null || !isUnspecified(bare)) return direct;
    return this.match('127.0.0.1') ?? this.match('::1');
  }

  private match(address: string): string | null {
    const family = familyOf(address);
    if (family === null) return null;
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
  readonly lookup: GuardedLookup = (hostname, options, callback) => {
    guardedLookup(hostname, options, callback, (address) => {
      const network = this.networkOf(address);
      return network === null ? null : new DeniedAddressError(hostname, address, network);
    });
  };
}

function guardedLookup(
  hostname: string,
  options: LookupOneOptions | LookupAllOptions,
  callback: LookupCallback,
  refuse: (address: string) => DeniedAddressError | null,
): void {
  dnsLookup(hostname, options as LookupAllOptions, (err, addresses: LookupAddress[] | string, family?: number) => {
    if (err) return callback(err, addresses as string, family);
    const list = typeof addresses === 'string' ? [{ address: addresses, family: family ?? 4 }] : addresses;
    for (const a of list) {
      const refusal = refuse(a.address);
      if (refusal) return callback(refusal, '', 0);
    }
    callback(null, addresses, family);
  });
}

/**
 * Both rules for one connection: the denied networks (null: none) and Reins' own ports on this host's addresses.
 * `ownPorts` is read at each connection (the egress port is known once the proxy listens).
 */
export class AddressGuard {
  constructor(
    private readonly denied: DeniedNetworks | null,
    private readonly ownPorts: ReadonlySet<number>,
  ) {}

  /** The refusal for a target that is an address literal: in a denied network, or this host on a Reins port. */
  refuseLiteral(host: string, port: number): DeniedAddressError | null {
    if (isIP(host) === 0) return null;
    if (this.ownPorts.has(port) && isOwnAddress(host)) return new DeniedAddressError(host, host, OWN_PORT_NETWORK, port);
    return this.denied?.refuseLiteral(host) ?? null;
  }

  /**
   * The `lookup` for a connection to `port`, undefined when there is nothing to check (no denied networks and not
   * a Reins port): then Node's own lookup runs, with no detour.
   */
  lookupFor(port: number): GuardedLookup | undefined {
    if (!this.ownPorts.has(port)) return this.denied?.lookup;
    const denied = this.denied;
    return (hostname, options, callback) =>
      guardedLookup(hostname, options, callback, (address) => {
        if (isOwnAddress(address)) return new DeniedAddressError(hostname, address, OWN_PORT_NETWORK, port);
        const network = denied?.networkOf(address) ?? null;
        return network === null ? null : new DeniedAddressError(hostname, address, network);
      });
  }
}
