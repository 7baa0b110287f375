/**
 * Failed credentials, throttled per client address, on every plane: a bad bearer token on the control plane, a
 * failed console sign-in, a bad Reins key on the LLM and MCP gateways, a bad proxy login on the egress proxy.
 *
 * - Counting: failures per client address over a fixed window (`http.failedAuthWindowSeconds`, default 60 s)
 *   that starts at the address's first failure. Successes are not counted and reset nothing. The address is the
 *   socket's remote address, or behind `http.trustProxy` the forwarded client address as Fastify computes
 *   `request.ip` (the egress proxy, a forward proxy on its own port, always takes the socket's).
 * - Throttling: once an address has `http.failedAuthLimit` failures (default 20) in its window, every credential
 *   it presents, good or bad, is answered 429 with `Retry-After` (the seconds left in the window), in the plane's
 *   own protocol, without being looked up. A good token from another address is unaffected. Per replica.
 * - Audit, bounded: the first failure of an address in a window is one `auth.failed` event (plane and reason);
 *   when the window ends, one `auth.failed` event with `summary: true` counts its failures and throttled attempts
 *   (when there was more than the first). At most two events per address and window, never one per attempt.
 * - Memory, bounded: at most `maxAddresses` addresses are tracked (default 10,000). Past that, failures of new
 *   addresses are counted together in one overflow entry for the audit, and those addresses are not throttled
 *   (throttling them together would let an attacker lock everyone else out).
 */
import type { IncomingMessage } from 'node:http';
import type { AuditInput } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import type { AuthPlane, FailedAuthGate } from '../shared/failed-auth.js';

export interface CredentialThrottleOptions {
  /** Failures per address and window after which the address gets 429. */
  limit: number;
  windowSeconds: number;
  maxAddresses?: number;
  /** Where the aggregated `auth.failed` events go (the batched audit writer). */
  audit: (event: AuditInput) => void;
  now?: () => number;
}

interface Entry {
  address: string;
  started: number;
  failures: number;
  /** Attempts answered 429 in this window. */
  throttled: number;
  planes: Partial<Record<AuthPlane, number>>;
}

const ACTOR: Actor = { kind: 'system', name: 'credential-throttle' };
/** The overflow entry's address in its audit events. */
export const OTHER_ADDRESSES = '(other addresses: too many to track one by one)';
const DEFAULT_MAX_ADDRESSES = 10_000;

/** `::ffff:192.0.2.1` (a dual-stack socket's IPv4 client) counts as `192.0.2.1`. */
function keyOf(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The client address of a raw request, as Fastify computes `request.ip`: with trustProxy, the leftmost X-Forwarded-For. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? '';
}

export class CredentialThrottle {
  private readonly entries = new Map<string, Entry>();
  private overflow: Entry | null = null;
  private readonly windowMs: number;
  private readonly maxAddresses: number;
  private readonly now: () => number;
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly options: CredentialThrottleOptions) {
    this.windowMs = options.windowSeconds * 1000;
    this.maxAddresses = options.maxAddresses ?? DEFAULT_MAX_ADDRESSES;
    this.now = options.now ?? Date.now;
  }

  /** Addresses tracked now (for tests and metrics). */
  get tracked(): number {
    return this.entries.size;
  }

  /** Seconds until `address` may present a credential again, counting this attempt as throttled; null when it may now. */
  retryAfter(address: string): number | null {
    // The common case on the data plane's hot path: nobody has failed lately.
    if (this.entries.size === 0) return null;
    const entry = this.entries.get(keyOf(address));
    if (entry === undefined || entry.failures < this.options.limit) return null;
    const left = entry.started + this.windowMs - this.now();
    if (left <= 0) return null;
    entry.throttled += 1;
    return Math.max(1, Math.ceil(left / 1000));
  }

  /** A credential from `address` was refused: counted, and audited if it is the window's first. */
  failed(address: string, plane: AuthPlane, reason: string): void {
    const key = keyOf(address);
    const now = this.now();
    let entry = this.entries.get(key);
    if (entry !== undefined && now - entry.started >= this.windowMs) {
      this.entries.delete(key);
      this.summarise(entry, now);
      entry = undefined;
    }
    if (entry === undefined) {
      if (this.entries.size >= this.maxAddresses) this.sweep(now);
      if (this.entries.size >= this.maxAddresses) {
        entry = this.overflowEntry(now);
      } else {
        entry = { address: key, started: now, failures: 0, throttled: 0, planes: {} };
        this.entries.set(key, entry);
        this.startSweeping();
      }
      if (entry.failures === 0) this.record(entry, { plane, reason, windowSeconds: this.options.windowSeconds });
    }
    entry.failures += 1;
    entry.planes[plane] = (entry.planes[plane] ?? 0) + 1;
  }

  /** The gateway planes' view: the address from the raw request, by Fastify's rule when `trustProxy`. */
  gate(options: { trustProxy: boolean }): FailedAuthGate {
    return {
      retryAfter: (req) => (this.entries.size === 0 ? null : this.retryAfter(clientAddress(req, options.trustProxy))),
      failed: (req, plane, reason) => this.failed(clientAddress(req, options.trustProxy), plane, reason),
    };
  }

  /** Ends every window now: their summaries are audited (at shutdown, before the audit writer drains). */
  close(): void {
    this.stopSweeping();
    const now = this.now();
    for (const entry of this.entries.values()) this.summarise(entry, now);
    this.entries.clear();
    if (this.overflow) this.summarise(this.overflow, now);
    this.overflow = null;
  }

  /** Summarises and forgets the windows that have ended. */
  sweep(now = this.now()): void {
    for (const [key, entry] of this.entries) {
      if (now - entry.started < this.windowMs) continue;
      this.entries.delete(key);
      this.summarise(entry, now);
    }
    if (this.overflow && now - this.overflow.started >= this.windowMs) {
      this.summarise(this.overflow, now);
      this.overflow = null;
    }
    if (this.entries.size === 0 && this.overflow === null) this.stopSweeping();
  }

  private overflowEntry(now: number): Entry {
    if (this.overflow && now - this.overflow.started >= this.windowMs) {
      this.summarise(this.overflow, now);
      this.overflow = null;
    }
    this.overflow ??= { address: OTHER_ADDRESSES, started: now, failures: 0, throttled: 0, planes: {} };
    this.startSweeping();
    return this.overflow;
  }

  /** The window's summary, when there is more to say than its first failure's event said. */
  private summarise(entry: Entry, now: number): void {
    if (entry.failures <= 1 && entry.throttled === 0) return;
    this.record(entry, {
      summary: true,
      failures: entry.failures,
      throttled: entry.throttled,
      planes: entry.planes,
      from: new Date(entry.started).toISOString(),
      to: new Date(Math.min(now, entry.started + this.windowMs)).toISOString(),
    });
  }

  private record(entry: Entry, data: Record<string, unknown>): void {
    try {
      this.options.audit({ type: 'control', action: 'auth.failed', outcome: 'refused', actor: ACTOR, data: { address: entry.address, ...data } });
    } catch {
      // The audit writer refuses nothing it is given; a throw here must not turn a 401 into a 500.
    }
  }

  private startSweeping(): void {
    if (this.sweeper) return;
    this.sweeper = setInterval(() => this.sweep(), Math.min(this.windowMs, 60_000));
    this.sweeper.unref();
  }

  private stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }
}
