/**
 * Sign-in through the OpenID provider, on the store: the flow's transaction (what the callback must find again, on
 * any replica), and the sign-in itself, which follows the provider every time: the identity is created at the first
 * sign-in (just in time), its role is re-evaluated from the groups claim at every sign-in (a change audited with the
 * group that caused it), and a person the configuration does not let in gets no account, no session, and a reason.
 *
 * Why the store and not a sealed cookie for the transaction: replicas share the store already, so no extra key has
 * to be distributed to them, and taking the row (DELETE ... RETURNING) makes each transaction single-use. The browser
 * holds only a random value whose hash keys the row, in an HttpOnly cookie, so the flow belongs to the browser that
 * started it (a `state` from someone else's flow finds nothing).
 */
import { createHash, randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import type { Actor, Role } from '../shared/actor.js';
import { AppError } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { IdentityChange, IdentityKind } from './identity-change.js';
import type { FinishedFlow } from './oidc-client.js';
import { groupsOf, identityIdFor, roleFor, type OidcSettings } from './oidc-mapping.js';
import { newSessionSecrets, type SignedIn } from './sessions.js';
import { hashSecret } from './tokens.js';

/** How long a started sign-in may take at the provider before its callback is refused. */
export const TRANSACTION_TTL_SECONDS = 600;

/** Who changes identities on the provider's word, in the audit log (`system:oidc`). */
export const OIDC_ACTOR: Actor = { kind: 'system', name: 'oidc' };

export interface OidcTransaction {
  state: string;
  nonce: string;
  codeVerifier: string;
  returnTo: string;
}

function keyOf(cookieValue: string): string {
  return createHash('sha256').update(cookieValue).digest('hex');
}

/** Stores a started flow; returns the cookie value that finds it again. Expired flows are swept on the way. */
export async function saveTransaction(db: Db, tx: OidcTransaction): Promise<string> {
  const cookieValue = randomBytes(32).toString('base64url');
  await db.transaction(async (q) => {
    await q.query('DELETE FROM oidc_transactions WHERE expires_at < now()');
    await q.query(
      `INSERT INTO oidc_transactions (id_hash, state, nonce, code_verifier, return_to, expires_at)
       VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
      [keyOf(cookieValue), tx.state, tx.nonce, tx.codeVerifier, tx.returnTo, TRANSACTION_TTL_SECONDS],
    );
  });
  return cookieValue;
}

/** Takes (and so ends) the flow the cookie names, if it is still open; null otherwise. */
export async function takeTransaction(db: Db, cookieValue: string): Promise<OidcTransaction | null> {
  if (cookieValue.length < 16 || cookieValue.length > 128) return null;
  const r = await db.query<{ state: string; nonce: string; code_verifier: string; return_to: string }>(
    'DELETE FROM oidc_transactions WHERE id_hash = $1 AND expires_at > now() RETURNING state, nonce, code_verifier, return_to',
    [keyOf(cookieValue)],
  );
  const row = r.rows[0];
  return row ? { state: row.state, nonce: row.nonce, codeVerifier: row.code_verifier, returnTo: row.return_to } : null;
}

export interface ProviderSignIn extends SignedIn {
  /** Set when this sign-in changed the identity's role or created it: what every replica's caches must hear. */
  change: IdentityChange | null;
}

type Outcome = { ok: true; value: ProviderSignIn } | { ok: false; reason: string; revokedTokens: string[] };

/**
 * Signs a person in from the provider's verified answer. Throws `sign_in_refused` (403) with the reason the person
 * sees when the configuration does not let them in; a refusal writes its audit event, creates nothing, and, for an
 * identity already linked to that person (the provider no longer lets them in), ends its console sessions and revokes
 * its personal access tokens (`onTokensRevoked` hears them after the commit, for this replica's caches).
 * Its role stays as it was.
 */
export async function signInWithProvider(
  db: Db,
  config: OidcSettings,
  flow: FinishedFlow,
  options: { ttlSeconds: number; ip: string; onTokensRevoked?: (tokenIds: string[]) => void },
): Promise<ProviderSignIn> {
  const { issuer, subject, claims } = flow;
  const groups = groupsOf(claims, config.groupsClaim);
  const match = roleFor(groups, config.roles);
  const mapped = identityIdFor(claims, config.identity);
  const who = { issuer, subject, ...(typeof claims[config.identity.claim] === 'string' ? { [config.identity.claim]: claims[config.identity.claim] } : {}) };

  const outcome = await db.transaction(async (tx): Promise<Outcome> => {
    const refuse = async (reason: string, identityId: string | null): Promise<Outcome> => {
      let sessionsEnded = 0;
      const revokedTokens: string[] = [];
      if (identityId) {
        const ended = await tx.query(`UPDATE console_sessions SET ended_at = now() WHERE identity_id = $1 AND ended_at IS NULL`, [identityId]);
        sessionsEnded = ended.rowCount ?? 0;
        const revoked = await tx.query<{ id: string; name: string }>(
          `UPDATE tokens SET revoked_at = now(), revoked_by = 'system:oidc' WHERE identity_id = $1 AND kind = 'personal' AND revoked_at IS NULL RETURNING id, name`,
          [identityId],
        );
        for (const t of revoked.rows) {
          revokedTokens.push(t.id);
          await recordAudit(tx, { type: 'control', action: 'token.revoke', actor: OIDC_ACTOR, subject: identityId, data: { tokenId: t.id, kind: 'personal', name: t.name, reason: 'the identity provider no longer lets this person in' } });
          await notify(tx, Channels.token, { id: t.id, op: 'revoke' });
        }
      }
      await recordAudit(tx, {
        type: 'control',
        action: 'session.refused',
        outcome: 'refused',
        actor: OIDC_ACTOR,
        subject: identityId ?? (mapped.ok ? mapped.value : null),
        data: { via: 'oidc', ...who, groupsClaim: config.groupsClaim, groups, reason, sessionsEnded, tokensRevoked: revokedTokens.length, ip: options.ip },
      });
      return { ok: false, reason, revokedTokens };
    };

    // Two sign-ins of one person at once (two tabs, two replicas) take turns: the first links, the second finds the
    // link. Then, on a first sign-in, the identity id is locked the same way (two accounts mapping to one id).
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`reins:oidc-subject:${issuer}|${subject}`]);
    // The person is their (issuer, subject); the mapped claim only names the identity at the first sign-in.
    const linked = await tx.query<{ identity_id: string }>('SELECT identity_id FROM oidc_links WHERE issuer = $1 AND subject = $2 FOR UPDATE', [issuer, subject]);
    let identityId = linked.rows[0]?.identity_id ?? null;
    let existing: { kind: IdentityKind; role: Role | null } | null = null;
    if (identityId) {
      const r = await tx.query<{ kind: IdentityKind; role: Role | null }>('SELECT kind, role FROM identities WHERE id = $1 FOR UPDATE', [identityId]);
      existing = r.rows[0] ?? null;
    } else {
      if (!mapped.ok) return refuse(mapped.reason, null);
      identityId = mapped.value;
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`reins:oidc-identity:${identityId}`]);
      const r = await tx.query<{ kind: IdentityKind; role: Role | null; linked: boolean }>(
        'SELECT kind, role, EXISTS (SELECT 1 FROM oidc_links l WHERE l.identity_id = identities.id) AS linked FROM identities WHERE id = $1 FOR UPDATE',
        [identityId],
      );
      const row = r.rows[0];
      if (row?.kind === 'agent') return refuse(`${identityId} is an agent identity; a person cannot sign in as it`, null);
      if (row?.linked) return refuse(`${identityId} belongs to another account at the identity provider; ask an administrator`, null);
      existing = row ? { kind: row.kind, role: row.role } : null;
    }
    if (!match) {
      return refuse(
        `you are in none of the groups that give a Reins role (claim "${config.groupsClaim}"); ask your administrator to add you to one`,
        linked.rows[0] ? identityId : null,
      );
    }

    let change: IdentityChange | null = null;
    const displayName = typeof claims.name === 'string' ? claims.name.slice(0, 200) : '';
    const cause = { claim: config.groupsClaim, group: match.group, groups };
    if (!existing) {
      const r = await tx.query<{ revision: string }>(
        `INSERT INTO identities (id, kind, role, display_name) VALUES ($1, 'developer', $2, $3) ON CONFLICT (id) DO NOTHING RETURNING revision::text AS revision`,
        [identityId, match.role, displayName],
      );
      // Created meanwhile through the API (not through a sign-in, which holds the lock): the next sign-in adopts it.
      if (!r.rows[0]) throw new AppError('conflict', `${identityId} was created meanwhile; sign in again`);
      await recordAudit(tx, { type: 'control', action: 'identity.create', actor: OIDC_ACTOR, subject: identityId, data: { kind: 'developer', role: match.role, via: 'oidc', ...who, ...cause } });
      change = { id: identityId, op: 'upsert', kind: 'developer', tier: null, revision: r.rows[0]!.revision };
    } else if (existing.role !== match.role) {
      const r = await tx.query<{ revision: string }>(
        `UPDATE identities SET role = $2, revision = nextval('identity_revision_seq'), updated_at = now() WHERE id = $1 RETURNING revision::text AS revision`,
        [identityId, match.role],
      );
      await recordAudit(tx, {
        type: 'control',
        action: 'identity.role_change',
        actor: OIDC_ACTOR,
        subject: identityId,
        data: { oldRole: existing.role, newRole: match.role, via: 'oidc', ...who, ...cause },
      });
      change = { id: identityId, op: 'upsert', kind: 'developer', tier: null, revision: r.rows[0]!.revision };
    }
    if (change) await notify(tx, Channels.identity, change);
    await tx.query(
      `INSERT INTO oidc_links (issuer, subject, identity_id, groups) VALUES ($1, $2, $3, $4)
       ON CONFLICT (issuer, subject) DO UPDATE SET groups = EXCLUDED.groups, last_sign_in_at = now()`,
      [issuer, subject, identityId, JSON.stringify(groups)],
    );

    const s = newSessionSecrets();
    const ttl = Math.min(options.ttlSeconds, config.maxSessionSeconds);
    const expiresAt = new Date(Date.now() + ttl * 1000);
    await tx.query(
      `INSERT INTO console_sessions (id, secret_hash, csrf_token, identity_id, token_id, via, expires_at) VALUES ($1, $2, $3, $4, NULL, 'oidc', $5)`,
      [s.id, hashSecret(s.cookieValue), s.csrfToken, identityId, expiresAt],
    );
    const actor: Actor = { kind: 'developer', identityId, role: match.role, via: 'session', tokenId: null, sessionId: s.id, csrfToken: s.csrfToken, issuedBy: identityId };
    await recordAudit(tx, { type: 'control', action: 'session.create', actor, subject: identityId, data: { sessionId: s.id, via: 'oidc', ...who, role: match.role, ip: options.ip } });
    return { ok: true, value: { cookieValue: s.cookieValue, csrfToken: s.csrfToken, identityId, role: match.role, expiresAt, change } };
  });
  if (!outcome.ok) {
    if (outcome.revokedTokens.length > 0) options.onTokensRevoked?.(outcome.revokedTokens);
    throw new AppError('sign_in_refused', outcome.reason);
  }
  return outcome.value;
}

/** Whether a session was signed in through the provider (for RP-initiated logout at sign-out). */
export async function sessionVia(q: Queryable, sessionId: string): Promise<'token' | 'oidc' | null> {
  const r = await q.query<{ via: 'token' | 'oidc' }>('SELECT via FROM console_sessions WHERE id = $1', [sessionId]);
  return r.rows[0]?.via ?? null;
}
