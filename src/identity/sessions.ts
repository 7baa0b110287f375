/**
 * Console sign-in: a personal access token is exchanged for a session, carried in an HttpOnly,
 * SameSite=Strict cookie. State-changing calls made with the cookie (sign-out included) must also send the session's CSRF
 * token in `X-CSRF-Token` (double submit): SameSite already stops cross-site posts in current browsers,
 * the header covers the rest. A session ends at sign-out, at expiry, or when its token is revoked.
 */
import { randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import { AppError } from '../shared/errors.js';
import type { Db, Queryable } from '../store/db.js';
import type { Actor, Role } from '../shared/actor.js';
import { authenticateSecret, hashSecret } from './tokens.js';

export const SESSION_COOKIE = 'reins_session';
export const CSRF_HEADER = 'x-csrf-token';

export interface SignedIn {
  cookieValue: string;
  csrfToken: string;
  identityId: string;
  role: Role;
  expiresAt: Date;
}

/**
 * `source.refused` hears a failed sign-in with its reason (never the secret): the failed-credential throttle counts
 * it and audits it aggregated per address (`auth.failed`), so that failures cannot grow the audit log one by one.
 */
export async function signIn(
  db: Db,
  secret: string,
  ttlSeconds: number,
  source: { ip: string; refused?: (reason: string) => void; adminsOnly?: boolean },
): Promise<SignedIn> {
  const credential = await authenticateSecret(db, secret);
  if (!credential || credential.kind !== 'personal' || !credential.identityId || !credential.role) {
    source.refused?.(credential ? 'not a personal access token' : 'unknown, revoked or expired token');
    throw new AppError('unauthenticated', 'sign-in needs a valid personal access token');
  }
  // auth.tokenSignIn: admins: the token form is the break-glass way in; everyone else signs in with the provider.
  if (source.adminsOnly && credential.role !== 'admin') {
    throw new AppError('forbidden', 'token sign-in is for admins only here (auth.tokenSignIn: admins); sign in with the identity provider');
  }
  const cookieValue = `reins_sess_${randomBytes(32).toString('base64url')}`;
  const csrfToken = randomBytes(24).toString('base64url');
  const id = `ses_${randomBytes(12).toString('base64url')}`;
  const expiresAt = new Date(Date.now() + ttlSeconds * 1000);
  const actor: Actor = { kind: 'developer', identityId: credential.identityId, role: credential.role, via: 'token', tokenId: credential.tokenId, issuedBy: credential.issuedBy };
  await db.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO console_sessions (id, secret_hash, csrf_token, identity_id, token_id, expires_at) VALUES ($1, $2, $3, $4, $5, $6)`,
      [id, hashSecret(cookieValue), csrfToken, credential.identityId, credential.tokenId, expiresAt],
    );
    await recordAudit(tx, {
      type: 'control',
      action: 'session.create',
      actor,
      subject: credential.identityId,
      data: { sessionId: id, tokenId: credential.tokenId, ip: source.ip },
    });
  });
  return { cookieValue, csrfToken, identityId: credential.identityId, role: credential.role, expiresAt };
}

/** A new session's secrets: the cookie value (stored hashed), its CSRF token and id. */
export function newSessionSecrets(): { cookieValue: string; csrfToken: string; id: string } {
  return {
    cookieValue: `reins_sess_${randomBytes(32).toString('base64url')}`,
    csrfToken: randomBytes(24).toString('base64url'),
    id: `ses_${randomBytes(12).toString('base64url')}`,
  };
}

export interface SessionCredential {
  sessionId: string;
  csrfToken: string;
  identityId: string;
  role: Role;
  /** The personal access token that signed in; null when the identity provider signed the session in. */
  tokenId: string | null;
  /** Who minted the token that signed in (the identity itself for a session signed in through the provider). */
  issuedBy: string | null;
}

export async function authenticateSession(q: Queryable, cookieValue: string): Promise<SessionCredential | null> {
  if (cookieValue.length < 16 || cookieValue.length > 512) return null;
  // A token session lives while its token does; a provider session (no token) until it ends or expires
  // (its expiry is bounded by auth.oidc.maxSessionSeconds, see oidc-sign-in.ts).
  const r = await q.query<{ id: string; csrf_token: string; identity_id: string; role: Role | null; token_id: string | null; created_by: string | null }>(
    `SELECT s.id, s.csrf_token, s.identity_id, i.role, s.token_id, CASE WHEN s.token_id IS NULL THEN s.identity_id ELSE t.created_by END AS created_by
       FROM console_sessions s
       JOIN identities i ON i.id = s.identity_id
       LEFT JOIN tokens t ON t.id = s.token_id
      WHERE s.secret_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now()
        AND (s.token_id IS NULL OR (t.id IS NOT NULL AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())))`,
    [hashSecret(cookieValue)],
  );
  const row = r.rows[0];
  if (!row || !row.role) return null;
  return { sessionId: row.id, csrfToken: row.csrf_token, identityId: row.identity_id, role: row.role, tokenId: row.token_id, issuedBy: row.created_by };
}

export async function signOut(db: Db, actor: Extract<Actor, { via: 'session' }>): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('UPDATE console_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL', [actor.sessionId]);
    await recordAudit(tx, { type: 'control', action: 'session.end', actor, subject: actor.identityId, data: { sessionId: actor.sessionId } });
  });
}
