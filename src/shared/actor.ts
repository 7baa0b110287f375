/**
 * Who is acting, as established from the credential or the signed-in session, never from a request
 * body. Requester, approver and voter are always taken from here.
 */
export const ROLES = ['admin', 'viewer', 'developer'] as const;
export type Role = (typeof ROLES)[number];

export type Actor =
  | { kind: 'developer'; identityId: string; role: Role; via: 'token'; tokenId: string; issuedBy?: string | null }
  // tokenId: the personal access token that signed in; null for a session signed in through the identity provider.
  | { kind: 'developer'; identityId: string; role: Role; via: 'session'; tokenId: string | null; sessionId: string; csrfToken: string; issuedBy?: string | null }
  | { kind: 'agent'; identityId: string; tokenId: string }
  | { kind: 'sensor'; tokenId: string; name: string }
  | { kind: 'system'; name: string };

export type DeveloperActor = Extract<Actor, { kind: 'developer' }>;

/*
 * `issuedBy` is who minted the credential behind a developer actor (the token's `created_by`: an identity id,
 * or `system:<name>` for the bootstrap token and the CLI). A decision made with a token the requester issued
 * counts as the requester's own: an admin cannot mint a token for someone else and approve her own request
 * with it (see shared/decider.ts, `actsAs`).
 */

/** The id recorded in the audit log for this actor. */
export function actorId(actor: Actor): string {
  switch (actor.kind) {
    case 'developer':
    case 'agent':
      return actor.identityId;
    case 'sensor':
      return `sensor:${actor.name}`;
    case 'system':
      return `system:${actor.name}`;
  }
}

export const SYSTEM_CLI: Actor = { kind: 'system', name: 'cli' };

/** The credential a decision was made with, for its audit event: the token and who minted it. */
export function credentialOf(actor: Actor): { tokenId?: string; tokenIssuer?: string | null; sessionId?: string } {
  if (actor.kind === 'developer' && actor.tokenId === null && actor.via === 'session') return { sessionId: actor.sessionId, tokenIssuer: actor.issuedBy ?? null };
  if (actor.kind === 'developer') return { tokenId: actor.tokenId!, tokenIssuer: actor.issuedBy ?? null };
  return {};
}
