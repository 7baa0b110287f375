/**
 * The egress proxy's contract with the rest of Reins: what a governed connection looks like, and the hooks the
 * identity store, policy engine and audit writer fill in. The proxy knows nothing of identities, policies or
 * storage; it asks these hooks.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FailedAuthGate } from '../../shared/failed-auth.js';
import type { DeniedNetworks } from './denied-networks.js';

/** What `authenticate` is given: the Reins token the client sent in `Proxy-Authorization`, and all its headers. */
export interface EgressCredential {
  secret: string;
  headers: IncomingHttpHeaders;
}

/**
 * `http`: a plain request in absolute-URI form, which Reins forwards and could read. `https`: a CONNECT tunnel,
 * opaque to Reins (it is TLS in practice; whatever runs inside, Reins only sees host, port and byte counts).
 */
export type EgressScheme = 'http' | 'https';

/** One governed request (plain HTTP) or tunnel (CONNECT), as the policy sees it. */
export interface EgressRequest<C> {
  caller: C;
  /** Lower-cased, trailing dot removed, IDNs in punycode, IPv4 in dotted form, IPv6 without brackets (`::1`). */
  host: string;
  port: number;
  scheme: EgressScheme;
  /** The HTTP method of a plain request; `CONNECT` for a tunnel. */
  method: string;
}

export type EgressDecision =
  /** `upstreamHeaders` (plain requests only): added to the request, replacing the client's: Reins' trace context. */
  | { outcome: 'allow'; upstreamHeaders?: Readonly<Record<string, string>> }
  /** `message` is the whole sentence the client shows: which policy, its message, what the person can do. */
  | { outcome: 'deny'; message: string };

/**
 * How a decided request or tunnel ended. `forwarded`: the origin answered and the answer reached the client
 * (for a tunnel: it was open and closed without a client-side error); `refused`: `decide` denied it;
 * `address_denied`: `decide` allowed it, but the host is, or resolved to, an address in `egress.deniedNetworks`
 * (the client got 403 and nothing was sent);
 * `upstream_unreachable`: no connection to the origin (the client got 502), or the origin broke off mid-answer;
 * `client_aborted`: the client went away first.
 */
export type EgressEnd = 'forwarded' | 'refused' | 'address_denied' | 'upstream_unreachable' | 'client_aborted';

export interface EgressResult {
  /** The status the client got: the origin's, or 200 for an established tunnel, 403, 502; 499 if none was sent. */
  status: number;
  end: EgressEnd;
  /**
   * Bytes from client to origin and back. Plain HTTP: body bytes only (the headers are rewritten on the way).
   * Tunnels: every byte through the tunnel over its whole life (TLS records included).
   */
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
  /** With `address_denied`: the address refused, the configured network it is in, and the sentence the client got. */
  deniedAddress?: DeniedAddress;
}

export interface DeniedAddress {
  address: string;
  network: string;
  message: string;
}

/**
 * `authenticate` and `decide` may answer without a promise when they have nothing to wait for (a cached
 * credential, a decision from memory): the proxy then goes on in the same tick. Either may also throw or reject;
 * the client then gets a 500 and nothing reaches the origin.
 */
export interface EgressHooks<C> {
  /** The caller a Reins token belongs to, or null when it is unknown, revoked or expired. */
  authenticate(credential: EgressCredential): C | null | Promise<C | null>;
  decide(request: EgressRequest<C>): EgressDecision | Promise<EgressDecision>;
  /** Called exactly once per decided request or tunnel, when it is over. Must not throw (a throw is logged). */
  completed(request: EgressRequest<C>, result: EgressResult): void;
}

export interface EgressLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface EgressProxyOptions {
  log?: EgressLog;
  /** How long to wait for the TCP connection to an origin before answering 502. Default 10 s. */
  connectTimeoutMs?: number;
  /** Addresses never connected to, whatever a policy said (checked on the resolved address). Absent: none. */
  deniedNetworks?: DeniedNetworks;
  /**
   * Reins' other listening ports (the HTTP port): never connected to on this host's own addresses (loopback,
   * unspecified, its interfaces), whatever `deniedNetworks` says. The proxy's own port is added when it listens.
   */
  ownPorts?: readonly number[];
  /**
   * Failed proxy logins counted per client address (the socket's); past the limit the proxy answers 429 with
   * Retry-After instead of looking the credential up.
   */
  failedAuth?: FailedAuthGate;
}
