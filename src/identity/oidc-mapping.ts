/**
 * What an OpenID provider's claims mean in Reins, pure: which identity a person is (`auth.oidc.identity`) and which
 * role their groups give them (`auth.oidc.roles`). The rules are documented in docs/sign-in.md; a refusal carries the
 * sentence the person sees on the sign-in page.
 */
import type { Role } from '../shared/actor.js';
import { parseIdentityId } from '../shared/ids.js';

/**
 * `auth.oidc` as this folder reads it: config.ts's `OidcConfig` (validated there; identity/ does not import config/,
 * the composition root hands it over and TypeScript checks the two shapes agree).
 */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  clientSecret?: string;
  redirectUrl: string;
  scopes: string[];
  identity: { claim: string; namespace: string };
  roles: { admin: string[]; viewer: string[]; developer: string[] };
  groupsClaim: string;
  maxSessionSeconds: number;
  displayName: string;
}

export type Mapped<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * The identity id for a person: `<namespace>/<name>`, the name being the claim's value lowercased and, for an e-mail
 * address (a value with one "@"), the part before the "@" (`Alice.Smith@example.com` -> `people/alice.smith`). A name
 * that is not a valid identity name (characters other than a-z 0-9 . _ -, more than 253 of them, not starting and
 * ending with a letter or digit) is refused, never rewritten: rewriting could make two people one identity. An
 * `email` claim whose `email_verified` is false is refused too.
 */
export function identityIdFor(claims: Record<string, unknown>, mapping: OidcSettings['identity']): Mapped<string> {
  const raw = claims[mapping.claim];
  if (typeof raw !== 'string' || raw.trim() === '') {
    return { ok: false, reason: `the identity provider sent no "${mapping.claim}" claim (auth.oidc.identity.claim); ask your administrator to release it to Reins` };
  }
  if (mapping.claim === 'email' && claims.email_verified === false) {
    return { ok: false, reason: `the e-mail address ${raw} is not verified at the identity provider` };
  }
  const value = raw.trim().toLowerCase();
  const at = value.indexOf('@');
  const name = at > 0 && at === value.lastIndexOf('@') ? value.slice(0, at) : value;
  const id = `${mapping.namespace}/${name}`;
  if (!parseIdentityId(id)) {
    return {
      ok: false,
      reason: `"${raw}" (claim ${mapping.claim}) does not make a valid identity name: lowercase letters, digits, ".", "_" and "-", starting and ending with a letter or digit`,
    };
  }
  return { ok: true, value: id };
}

/** The groups claim as a list of strings (a single string counts as one group; anything else as none). */
export function groupsOf(claims: Record<string, unknown>, groupsClaim: string): string[] {
  const raw = claims[groupsClaim];
  if (typeof raw === 'string') return [raw];
  if (Array.isArray(raw)) return raw.filter((g): g is string => typeof g === 'string');
  return [];
}

/**
 * The most privileged role a group gives, checked in this order: admin, viewer, developer. Viewer before developer:
 * a viewer reads everything and decides nothing, and `developer: ["*"]` (everyone) must not hide a group the
 * configuration names for viewers. `"*"` matches anyone, with or without groups.
 */
export const ROLE_PRECEDENCE: readonly Role[] = ['admin', 'viewer', 'developer'];

export interface RoleMatch {
  role: Role;
  /** The group that gave it (`*` for the wildcard). */
  group: string;
}

export function roleFor(groups: string[], roles: OidcSettings['roles']): RoleMatch | null {
  const held = new Set(groups);
  for (const role of ROLE_PRECEDENCE) {
    for (const group of roles[role]) {
      if (group === '*' || held.has(group)) return { role, group };
    }
  }
  return null;
}
