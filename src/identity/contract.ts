/**
 * The identities' and credentials' wire shapes, written once: the TypeBox schemas the routes validate and document
 * with, and their `Static<>` types, which the services return and the console imports (type-only). Keep this module
 * to schemas and types (and the plain lists they are built from): the console's compiler reads it.
 */
import { Type, type Static } from 'typebox';
import { ROLES, type Role } from '../shared/actor.js';
import { TIERS, type Tier } from './tiers.js';

/** At most this many owners per agent (owners.ts says why). */
export const MAX_OWNERS = 20;
export const OWNER_RULE =
  'each owner is a developer identity id (<namespace>/<name>) or a namespace rule <namespace>/* (every developer identity in that namespace)';

// Built from the lists the server checks against; a union built from an array has no precise static type, so it is given one.
export const TierSchema = Type.Unsafe<Tier>(Type.Union(TIERS.map((t) => Type.Literal(t))));
export const RoleSchema = Type.Unsafe<Role>(Type.Union(ROLES.map((r) => Type.Literal(r))));
export const IdentityKindSchema = Type.Union([Type.Literal('agent'), Type.Literal('developer')]);

export const IdentitySchema = Type.Object({
  id: Type.String(),
  kind: IdentityKindSchema,
  role: Type.Optional(RoleSchema),
  autonomyTier: Type.Union([TierSchema, Type.Literal('')], { description: '"" when no tier is assigned' }),
  effectiveTier: Type.Optional(Type.Union([TierSchema], { description: 'What policies see: the assigned tier, or T2 (agents only)' })),
  owners: Type.Optional(
    Type.Array(Type.String(), { description: 'Agents only: the developers who may name this agent in X-Reins-Agent (developer ids and <namespace>/* rules)' }),
  ),
  displayName: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
});
export type Identity = Static<typeof IdentitySchema>;

export const IdentityQuery = Type.Object({ kind: Type.Optional(IdentityKindSchema) }, { additionalProperties: false });

export const CreateIdentityBody = Type.Object(
  {
    id: Type.String({ description: '<namespace>/<name>' }),
    kind: IdentityKindSchema,
    role: Type.Optional(Type.Unsafe<Role>(Type.Union(ROLES.map((r) => Type.Literal(r)), { description: 'Developer identities only; default developer' }))),
    displayName: Type.Optional(Type.String({ maxLength: 200 })),
    owners: Type.Optional(Type.Array(Type.String(), { description: `Agent identities only. ${OWNER_RULE}; at most ${MAX_OWNERS}` })),
  },
  { additionalProperties: false },
);

// Any JSON value passes the schema so that a tier of the wrong type (3, null) is the contract's invalid_tier,
// as a wrong string is, and not a generic schema error.
export const SetTierBody = Type.Object(
  { tier: Type.Unknown({ description: 'A string: T1, T2, T3, T4, or "" to clear. Anything else (another string, a number, null) is 400 invalid_tier' }) },
  { additionalProperties: false },
);
export const SetTierResultSchema = Type.Object({ status: Type.Literal('ok'), tier: Type.Union([TierSchema, Type.Literal('')]), effectiveTier: TierSchema });
export type SetTierResult = Static<typeof SetTierResultSchema>;

export const SetOwnersBody = Type.Object({ owners: Type.Array(Type.String()) }, { additionalProperties: false });
export const SetOwnersResultSchema = Type.Object({ status: Type.Literal('ok'), id: Type.String(), owners: Type.Array(Type.String()) });
export type SetOwnersResult = Static<typeof SetOwnersResultSchema>;

export const TokenKindSchema = Type.Union([Type.Literal('personal'), Type.Literal('agent'), Type.Literal('sensor')]);
export type TokenKind = Static<typeof TokenKindSchema>;

export const TokenInfoSchema = Type.Object({
  id: Type.String(),
  kind: TokenKindSchema,
  identityId: Type.Union([Type.String(), Type.Null()]),
  name: Type.String(),
  prefix: Type.String({ description: 'The first characters of the secret, to tell tokens apart' }),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  revokedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});
export type TokenInfo = Static<typeof TokenInfoSchema>;
export const MintedTokenSchema = Type.Intersect([TokenInfoSchema, Type.Object({ token: Type.String({ description: 'The secret, shown once' }) })]);

const TokenName = Type.String({ minLength: 1, maxLength: 100 });
const IsoDate = Type.String({ format: 'date-time', description: 'ISO 8601 date-time' });
export const MintTokenBody = Type.Object({ identityId: Type.String(), name: TokenName, expiresAt: Type.Optional(IsoDate) }, { additionalProperties: false });
export const MintOwnTokenBody = Type.Object({ name: TokenName, expiresAt: Type.Optional(IsoDate) }, { additionalProperties: false });
export const TokenQuery = Type.Object({ identityId: Type.Optional(Type.String()), kind: Type.Optional(TokenKindSchema) }, { additionalProperties: false });

export const SignInBody = Type.Object({ token: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false });
export const SessionInfoSchema = Type.Object({
  identityId: Type.String(),
  role: RoleSchema,
  csrfToken: Type.String({ description: 'Send it in X-CSRF-Token on every state-changing call made with the cookie' }),
  expiresAt: Type.String({ format: 'date-time' }),
});

/** GET /api/v1/auth/me: who is signed in. */
export const MeSchema = Type.Object({
  id: Type.String(),
  kind: Type.Literal('developer'),
  role: RoleSchema,
  displayName: Type.String(),
  via: Type.Union([Type.Literal('token'), Type.Literal('session')]),
  csrfToken: Type.Optional(Type.String()),
});
export type Me = Static<typeof MeSchema>;
