/** Identity, tier, token and console-session routes (docs/api.md, "Identities and credentials"). */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import { ADMIN, ANY_DEVELOPER, READERS } from '../shared/access.js';
import { actorOf, developerOf, rateLimited } from './auth.js';
import type { CredentialThrottle } from './credential-throttle.js';
import { AppError, forbidden, invalid } from '../shared/errors.js';
import { AUTH_ERRORS, IdParams, IdentityIdQuery, responses } from '../shared/schemas.js';
import type { Db } from '../store/db.js';
import {
  createIdentity,
  deleteIdentity,
  type EndHoldings,
  getIdentity,
  listIdentities,
  requireIdentityId,
  setAutonomyTier,
} from './identities.js';
import type { IdentityChange } from './identity-change.js';
import { setOwners } from './owners.js';
import {
  CreateIdentityBody,
  IdentityQuery,
  IdentitySchema,
  MAX_OWNERS,
  MeSchema,
  MintOwnTokenBody,
  MintTokenBody,
  MintedTokenSchema,
  OWNER_RULE,
  SessionInfoSchema,
  SetOwnersBody,
  SetOwnersResultSchema,
  SetTierBody,
  SetTierResultSchema,
  SignInBody,
  TokenInfoSchema,
  TokenQuery,
} from './contract.js';
import { CSRF_HEADER, SESSION_COOKIE, signIn, signOut } from './sessions.js';
import { listTokens, mintToken, revokeToken } from './tokens.js';

export interface IdentityRouteDeps {
  db: Db;
  /** Applies a change this replica made to its own caches at once. */
  onIdentityChange: (change: IdentityChange) => void;
  /** A token this replica revoked: its caches drop it before the answer (other replicas hear NOTIFY). */
  onTokenRevoked?: (tokenId: string) => void;
  /** Ends what a deleted identity had elsewhere (grants, requests, held calls), in the deletion's transaction. */
  endHoldings?: EndHoldings;
  sessionTtlSeconds: number;
  /** `auth.tokenSignIn`: who may sign in to the console with a token (default all). */
  tokenSignIn?: 'all' | 'admins' | 'off';
  /** Counts failed sign-ins per address and answers 429 past the limit. */
  throttle?: CredentialThrottle;
}

/** The session cookie's attributes: HttpOnly, SameSite=Strict, whole site, Secure over https; `expires` when setting it. */
function sessionCookie(protocol: string, expires?: Date) {
  return { httpOnly: true, sameSite: 'strict' as const, secure: protocol === 'https', path: '/', ...(expires ? { expires } : {}) };
}

function parseFutureDate(raw: string | undefined, field: string): Date | undefined {
  if (raw === undefined) return undefined;
  const d = new Date(raw);
  if (Number.isNaN(d.getTime())) throw invalid(`${field}: must be an ISO 8601 date-time`);
  return d;
}

export function registerIdentityRoutes(fastify: FastifyInstance, deps: IdentityRouteDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = deps;

  app.get('/api/v1/identities', {
    config: { access: READERS },
    schema: {
      tags: ['identities'],
      summary: 'List identities with kind, role and tier',
      querystring: IdentityQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(IdentitySchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const { kind } = request.query;
      return { items: await listIdentities(db, kind ? { kind } : {}) };
    },
  });

  app.post('/api/v1/identities', {
    config: { access: ADMIN },
    schema: {
      tags: ['identities'],
      summary: 'Create an agent or developer identity',
      body: CreateIdentityBody,
      response: responses({ 201: IdentitySchema }, ...AUTH_ERRORS, 409, 415),
    },
    handler: async (request, reply) => {
      const body = request.body;
      const { value, change } = await createIdentity(db, actorOf(request), body);
      deps.onIdentityChange(change);
      return reply.status(201).send(value);
    },
  });

  app.get('/api/v1/identities/detail', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['identities'],
      summary: 'One identity (admins and viewers: any; developers: their own)',
      querystring: IdentityIdQuery,
      response: responses({ 200: IdentitySchema }, ...AUTH_ERRORS, 404),
    },
    handler: async (request) => {
      const id = requireIdentityId(request.query.id);
      const actor = developerOf(request);
      if (actor.role === 'developer' && actor.identityId !== id) throw forbidden('developers can read only their own identity');
      return getIdentity(db, id);
    },
  });

  app.delete('/api/v1/identities', {
    config: { access: ADMIN },
    schema: {
      tags: ['identities'],
      summary: 'Delete an identity and its credentials; its grants, requests and held calls end with it',
      description:
        'In one transaction: its tokens and console sessions go, its active grants are revoked, its pending and under-review ' +
        'requests are denied with a reason, its pending held calls (made by it or as it, an agent) are stopped, and its ' +
        'notifications removed; each is audited. An identity created later with the same id inherits none of it.',
      querystring: IdentityIdQuery,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok'), id: Type.String() }) }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const id = requireIdentityId(request.query.id);
      const { change } = await deleteIdentity(db, actorOf(request), id, deps.endHoldings);
      deps.onIdentityChange(change);
      return { status: 'ok' as const, id };
    },
  });

  app.put('/api/v1/identities/autonomy-tier', {
    config: { access: ADMIN },
    schema: {
      tags: ['identities'],
      summary: 'Set or clear (with "") an agent\'s autonomy tier',
      description:
        'The tier applies to later requests on every replica (NOTIFY at once, periodic re-read as the safety net). ' +
        'An agent with no tier resolves to T2.',
      querystring: IdentityIdQuery,
      body: SetTierBody,
      response: responses(
        { 200: SetTierResultSchema },
        ...AUTH_ERRORS,
        404,
        415,
      ),
    },
    handler: async (request) => {
      const id = requireIdentityId(request.query.id);
      const { value, change } = await setAutonomyTier(db, actorOf(request), id, request.body.tier);
      deps.onIdentityChange(change);
      return value;
    },
  });

  app.put('/api/v1/identities/owners', {
    config: { access: ADMIN },
    schema: {
      tags: ['identities'],
      summary: "Replace an agent's owners: the developers whose personal access tokens may name it in X-Reins-Agent",
      description:
        `${OWNER_RULE}; at most ${MAX_OWNERS}. A developer named by X-Reins-Agent to an agent that does not list them is refused (403, audited). ` +
        'The change applies to later requests on every replica (NOTIFY at once, periodic re-read as the safety net). ' +
        'Deleting a developer removes the entries naming them.',
      querystring: IdentityIdQuery,
      body: SetOwnersBody,
      response: responses(
        { 200: SetOwnersResultSchema },
        ...AUTH_ERRORS,
        404,
        415,
      ),
    },
    handler: async (request) => {
      const id = requireIdentityId(request.query.id);
      const { value, change } = await setOwners(db, actorOf(request), id, request.body.owners);
      deps.onIdentityChange(change);
      return value;
    },
  });

  app.post('/api/v1/tokens', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['credentials'],
      summary: 'Mint a personal access token (developer identity) or an agent key (agent identity)',
      description: 'Admins mint for anyone; others only for themselves. The secret is in `token`, shown once.',
      body: MintTokenBody,
      response: responses({ 201: MintedTokenSchema }, ...AUTH_ERRORS, 404, 415),
    },
    handler: async (request, reply) => {
      const body = request.body;
      const identityId = requireIdentityId(body.identityId, 'identityId');
      const expiresAt = parseFutureDate(body.expiresAt, 'expiresAt');
      const minted = await mintToken(db, actorOf(request), { identityId, name: body.name, ...(expiresAt ? { expiresAt } : {}) });
      return reply.status(201).send({ ...minted.info, token: minted.token });
    },
  });

  app.get('/api/v1/tokens', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['credentials'],
      summary: 'List tokens without their secrets (admins: all; others: their own)',
      querystring: TokenQuery,
      response: responses({ 200: Type.Object({ items: Type.Array(TokenInfoSchema) }) }, ...AUTH_ERRORS),
    },
    handler: async (request) => {
      const q = request.query;
      const actor = developerOf(request);
      if (actor.role !== 'admin') {
        if (q.identityId !== undefined && q.identityId !== actor.identityId) throw forbidden('only an admin can list another identity\'s tokens');
        return { items: await listTokens(db, { identityId: actor.identityId, ...(q.kind ? { kind: q.kind } : {}) }) };
      }
      return { items: await listTokens(db, { ...(q.identityId ? { identityId: q.identityId } : {}), ...(q.kind ? { kind: q.kind } : {}) }) };
    },
  });

  app.delete('/api/v1/tokens/:id', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['credentials'],
      summary: 'Revoke a token at once (admins: any; others: their own)',
      params: IdParams,
      response: responses({ 200: TokenInfoSchema }, ...AUTH_ERRORS, 404, 409),
    },
    handler: async (request) => {
      const revoked = await revokeToken(db, actorOf(request), request.params.id);
      deps.onTokenRevoked?.(revoked.id);
      return revoked;
    },
  });

  app.post('/api/v1/runtime/sensor-tokens', {
    config: { access: ADMIN },
    schema: {
      tags: ['runtime'],
      summary: 'Mint a runtime sensor token, shown once; it can call only the sensor ingest routes',
      body: MintOwnTokenBody,
      response: responses({ 201: MintedTokenSchema }, ...AUTH_ERRORS, 415),
    },
    handler: async (request, reply) => {
      const body = request.body;
      const expiresAt = parseFutureDate(body.expiresAt, 'expiresAt');
      const minted = await mintToken(db, actorOf(request), { identityId: null, kind: 'sensor', name: body.name, ...(expiresAt ? { expiresAt } : {}) });
      return reply.status(201).send({ ...minted.info, token: minted.token });
    },
  });

  app.post('/api/v1/auth/session', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: 'Console sign-in: exchange a personal access token for an HttpOnly session cookie',
      body: SignInBody,
      description:
        'Failed sign-ins count toward the failed-credential limit of the client address (http.failedAuthLimit per ' +
        'http.failedAuthWindowSeconds); past it the answer is 429 rate_limited with Retry-After.',
      response: responses({ 200: SessionInfoSchema }, 400, 401, 403, 415, 429),
    },
    handler: async (request, reply) => {
      if (deps.tokenSignIn === 'off') throw new AppError('forbidden', 'token sign-in is switched off here (auth.tokenSignIn: off); sign in with the identity provider');
      const wait = deps.throttle?.retryAfter(request.ip) ?? null;
      if (wait !== null) throw rateLimited(reply, wait);
      const refused = (reason: string) => deps.throttle?.failed(request.ip, 'sign-in', reason);
      const s = await signIn(db, request.body.token, deps.sessionTtlSeconds, { ip: request.ip, refused, adminsOnly: deps.tokenSignIn === 'admins' });
      reply.setCookie(SESSION_COOKIE, s.cookieValue, sessionCookie(request.protocol, s.expiresAt));
      return { identityId: s.identityId, role: s.role, csrfToken: s.csrfToken, expiresAt: s.expiresAt.toISOString() };
    },
  });

  app.delete('/api/v1/auth/session', {
    config: { access: 'public' },
    schema: {
      tags: ['console'],
      summary: 'Sign out: ends the console session and clears its cookie',
      description: `With a live session cookie this is a state change like any other: it needs the session's CSRF token in ${CSRF_HEADER} (403 csrf_required without it).`,
      response: responses({ 200: Type.Object({ status: Type.Literal('ok') }) }, 403),
    },
    handler: async (request, reply) => {
      const actor = request.actor;
      if (actor?.kind === 'developer' && actor.via === 'session') {
        // Another site must not be able to sign the user out (a cross-site DELETE carries no header of ours).
        if (request.headers[CSRF_HEADER] !== actor.csrfToken) throw new AppError('csrf_required', `send the session's CSRF token in the ${CSRF_HEADER} header`);
        await signOut(db, actor);
      }
      // The clearing cookie has the attributes of the one it replaces.
      reply.clearCookie(SESSION_COOKIE, sessionCookie(request.protocol));
      return { status: 'ok' as const };
    },
  });

  app.get('/api/v1/auth/me', {
    config: { access: ANY_DEVELOPER },
    schema: {
      tags: ['console'],
      summary: 'Who is signed in',
      response: responses(
        {
          200: MeSchema,
        },
        401,
        403,
      ),
    },
    handler: async (request) => {
      const actor = developerOf(request);
      const identity = await getIdentity(db, actor.identityId).catch(() => {
        throw new AppError('unauthenticated', 'the signed-in identity no longer exists');
      });
      return {
        id: actor.identityId,
        kind: 'developer' as const,
        role: actor.role,
        displayName: identity.displayName,
        via: actor.via,
        ...(actor.via === 'session' ? { csrfToken: actor.csrfToken } : {}),
      };
    },
  });
}
