/**
 * Who decides on an access request, a grant or a held call, as the pure decision cores see it
 * (approvals/decision-state.ts, held-calls/held-call-state.ts): an id and a role, where the role 'system' is the
 * time-driven decider (grant expiry, an approval window elapsing) that no person has. Not the identity `Actor`
 * (shared/actor.ts), which says how a request authenticated; `deciderOf` maps one to the other.
 */
import type { Actor } from './actor.js';

export type Vote = 'approve' | 'deny';

// 'system' is the time-driven decider (grant expiry, approval window elapsing); no person has it.
export type DeciderRole = 'admin' | 'viewer' | 'developer' | 'system';

/** Who decides, taken from the credential or signed-in session, never from a request body. */
export interface Decider {
  id: string;
  role: DeciderRole;
  /** Who minted the credential the decider decides with, when known. */
  issuedBy?: string | null;
}

/**
 * Whether the decider decides as the requester: the requester herself, or anyone holding a token the requester
 * minted (an admin who mints a token for someone else and decides with it is still deciding her own request).
 */
export function actsAs(actor: Decider, requester: string | null): boolean {
  return requester !== null && (actor.id === requester || actor.issuedBy === requester);
}

export const SYSTEM_DECIDER: Decider = { id: 'system', role: 'system' };

/** The decision core's view of a caller: the identity id and role from the credential or session. */
export function deciderOf(caller: Actor): Decider {
  if (caller.kind === 'developer') return { id: caller.identityId, role: caller.role, issuedBy: caller.issuedBy ?? null };
  if (caller.kind === 'system') return { id: `system:${caller.name}`, role: 'system' };
  return { id: caller.kind === 'agent' ? caller.identityId : `sensor:${caller.name}`, role: 'developer' };
}
