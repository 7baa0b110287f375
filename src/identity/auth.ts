/**
 * Authentication and role enforcement for the control plane. The actor comes from the credential
 * (`Authorization: Bearer`) or the console session cookie, never from the body.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../shared/actor.js';
import { bearerSecret } from '../shared/bearer.js';
import { authenticateSession, CSRF_HEADER, SESSION_COOKIE } from './sessions.js';
import { authenticateSecret } from './tokens.js';
import type { Db } from '../store/db.js';
import type { Access } from '../shared/access.js';
import type { CredentialThrottle } from './credential-throttle.js';
import { AppError } from '../shared/errors.js';

declare module 'fastify' {
  interface FastifyRequest {
    actor: Actor | null;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Records when a token was last used, at most once a minute per token and replica, off the request path:
 * a listing can show stale tokens without a write on every call.
 */
export class TokenUseRecorder {
  private readonly lastWrite = new Map<string, number>();
  constructor(
    private readonly db: Db,
    private readonly intervalMs = 60_000,
  ) {}

  touch(tokenId: string): void {
    const now = Date.now();
    if (now - (this.lastWrite.get(tokenId) ?? 0) < this.intervalMs) return;
    this.lastWrite.set(tokenId, now);
    if (this.lastWrite.size > 100_000) this.lastWrite.clear();
    this.db.query('UPDATE tokens SET last_used_at = now() WHERE id = $1', [tokenId]).catch(() => {
      this.lastWrite.delete(tokenId);
    });
  }
}

export async function resolveActor(db: Db, request: FastifyRequest, uses?: TokenUseRecorder): Promise<Actor | null> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const secret = bearerSecret(header);
    if (!secret) throw new AppError('unauthenticated', 'Authorization must be "Bearer <token>"');
    const c = await authenticateSecret(db, secret);
    if (!c) throw new AppError('unauthenticated', 'the token is unknown, revoked or expired');
    uses?.touch(c.tokenId);
    switch (c.kind) {
      case 'personal':
        return { kind: 'developer', identityId: c.identityId!, role: c.role!, via: 'token', tokenId: c.tokenId, issuedBy: c.issuedBy };
      case 'agent':
        return { kind: 'agent', identityId: c.identityId!, tokenId: c.tokenId };
      case 'sensor':
        return { kind: 'sensor', tokenId: c.tokenId, name: c.name };
    }
  }
  const cookie = request.cookies?.[SESSION_COOKIE];
  if (cookie) {
    const s = await authenticateSession(db, cookie);
    if (!s) return null;
    return { kind: 'developer', identityId: s.identityId, role: s.role, via: 'session', tokenId: s.tokenId, sessionId: s.sessionId, csrfToken: s.csrfToken, issuedBy: s.issuedBy };
  }
  return null;
}

export function checkAccess(access: Access, actor: Actor | null, request: FastifyRequest): void {
  if (access === 'public' || access === 'gateway') return;
  if (!actor) throw new AppError('unauthenticated', 'this route needs a credential: Authorization: Bearer <token>');
  if (access === 'sensor') {
    if (actor.kind !== 'sensor') throw new AppError('forbidden', 'this route is for runtime sensor tokens only');
    return;
  }
  if (actor.kind !== 'developer') {
    throw new AppError('forbidden', `${actor.kind === 'agent' ? 'an agent key' : 'a sensor token'} cannot call the control plane`);
  }
  if (!access.roles.includes(actor.role)) {
    throw new AppError('forbidden', `this needs the ${access.roles.join(' or ')} role; ${actor.identityId} is ${actor.role}`);
  }
  if (actor.via === 'session' && !SAFE_METHODS.has(request.method)) {
    const sent = request.headers[CSRF_HEADER];
    if (sent !== actor.csrfToken) throw new AppError('csrf_required', `send the session's CSRF token in the ${CSRF_HEADER} header`);
  }
}

/** The 429 of an address with too many failed credentials (see credential-throttle.ts). */
export function rateLimited(reply: FastifyReply, retryAfterSeconds: number): AppError {
  reply.header('retry-after', String(retryAfterSeconds));
  return new AppError('rate_limited', `too many failed authentications from your address; retry in ${retryAfterSeconds} s`);
}

export function registerAuth(app: FastifyInstance, db: Db, throttle?: CredentialThrottle): void {
  const uses = new TokenUseRecorder(db);
  app.decorateRequest('actor', null);
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.config?.access === undefined) {
      throw new Error(`route ${route.method} ${route.url} declares no access rule`);
    }
  });
  // onRequest: before the body is parsed or validated, so an unauthenticated caller learns nothing about input rules.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const access = request.routeOptions.config.access;
    // The data plane authenticates for itself; no control-plane lookup on its hot path.
    if (access === undefined || access === 'gateway') return;
    // Public routes still learn who is calling when a credential is sent (e.g. sign-out); a bad one is not a failure there.
    if (access === 'public') {
      request.actor = await resolveActor(db, request).catch(() => null);
      return;
    }
    const presented = request.headers.authorization !== undefined || request.cookies?.[SESSION_COOKIE] !== undefined;
    if (presented && throttle) {
      const wait = throttle.retryAfter(request.ip);
      if (wait !== null) throw rateLimited(reply, wait);
    }
    try {
      request.actor = await resolveActor(db, request, uses);
    } catch (err) {
      if (err instanceof AppError && err.code === 'unauthenticated') throttle?.failed(request.ip, 'control', err.message);
      throw err;
    }
    if (request.actor === null && presented) throttle?.failed(request.ip, 'control', 'the console session is unknown, ended or expired');
    checkAccess(access, request.actor, request);
  });
}

/** The actor of a route whose access rule guarantees one. */
export function actorOf(request: FastifyRequest): Actor {
  if (!request.actor) throw new AppError('unauthenticated', 'this route needs a credential');
  return request.actor;
}

export function developerOf(request: FastifyRequest): Extract<Actor, { kind: 'developer' }> {
  const actor = actorOf(request);
  if (actor.kind !== 'developer') throw new AppError('forbidden', 'this route is for developer identities');
  return actor;
}
