/**
 * Who is acting, as established from the credential or the signed-in session, never from a request
 * body. Requester, approver and voter are always taken from here.
 */
export const ROLES = ['admin', 'viewer', 'developer'] as const;
export type Role = (typeof ROLES)[number];

export type Actor =
  | { kind: 'developer'; identityId: string; role: Role; via: 'token'; tokenId: string }
  | { kind: 'developer'; identityId: string; role: Role; via: 'session'; tokenId: string; sessionId: string; csrfToken: string }
  | { kind: 'agent'; identityId: string; tokenId: string }
  | { kind: 'sensor'; tokenId: string; name: string }
  | { kind: 'system'; name: string };

export type DeveloperActor = Extract<Actor, { kind: 'developer' }>;

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
