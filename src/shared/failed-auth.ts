/**
 * What a gateway plane sees of the failed-credential throttle (identity/credential-throttle.ts): the plane asks
 * before it looks a credential up, and reports a refused one, from raw node:http requests.
 */
import type { IncomingMessage } from 'node:http';

/** Where a credential was refused. */
export type AuthPlane = 'control' | 'sign-in' | 'llm' | 'mcp' | 'egress';

/** What a gateway plane is given: the throttle seen from raw node:http requests. */
export interface FailedAuthGate {
  /** Seconds until this request's client may present a credential again; null when it may now. */
  retryAfter(req: IncomingMessage): number | null;
  /** A credential this request's client presented was refused. */
  failed(req: IncomingMessage, plane: AuthPlane, reason: string): void;
}
