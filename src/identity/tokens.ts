/**
 * Credentials: personal access tokens (developers), agent keys (agents) and sensor tokens (runtime
 * sensors). A secret is 32 random bytes, shown once at minting and stored only as its SHA-256: a
 * high-entropy secret needs no slow hash, and a lookup by hash is one indexed read. Revocation and expiry
 * are checked on every authentication, so they take effect at once.
 */
import { hash, randomBytes } from 'node:crypto';
import { recordAudit } from '../audit/audit.js';
import { AppError, forbidden, invalid, notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { Actor, Role } from '../shared/actor.js';
import type { IdentityKind } from './identity-change.js';
import type { TokenInfo, TokenKind } from './contract.js';

export type { TokenKind } from './contract.js';


// Distinct, greppable prefixes so secret scanners and our own redaction can recognise Reins credentials.
const PREFIX: Record<TokenKind, string> = { personal: 'reins_pat_', agent: 'reins_agent_', sensor: 'reins_sensor_' };

export function generateSecret(kind: TokenKind): string {
  return PREFIX[kind] + randomBytes(32).toString('base64url');
}

/** What listings show of a secret: its kind prefix and four characters, enough to tell tokens apart. */
export function displayPrefix(secret: string): string {
  const known = Object.values(PREFIX).find((p) => secret.startsWith(p));
  return known ? secret.slice(0, known.length + 4) : `${secret.slice(0, 4)}…`;
}

export function hashSecret(secret: string): string {
  // The one-shot hash: no Hash object per call (every governed call authenticates; 0.8 against 2.3 µs here).
  return hash('sha256', secret, 'hex');
}

interface TokenRow {
  id: string;
  kind: TokenKind;
  identity_id: string | null;
  name: string;
  display_prefix: string;
  created_by: string | null;
  created_at: Date;
  expires_at: Date | null;
  revoked_at: Date | null;
  last_used_at: Date | null;
}

const COLUMNS = 'id, kind, identity_id, name, display_prefix, created_by, created_at, expires_at, revoked_at, last_used_at';

function toInfo(r: TokenRow): TokenInfo {
  return {
    id: r.id,
    kind: r.kind,
    identityId: r.identity_id,
    name: r.name,
    prefix: r.display_prefix,
    createdBy: r.created_by,
    createdAt: r.created_at.toISOString(),
    expiresAt: r.expires_at?.toISOString() ?? null,
    revokedAt: r.revoked_at?.toISOString() ?? null,
    lastUsedAt: r.last_used_at?.toISOString() ?? null,
  };
}

function newTokenId(): string {
  return `tok_${randomBytes(12).toString('base64url')}`;
}

export interface MintInput {
  identityId: string | null;
  name: string;
  expiresAt?: Date | null;
  /** Only sensor tokens are minted without an identity. */
  kind?: 'sensor';
  /** Mint this exact secret (the bootstrap admin token); otherwise a fresh random one. */
  secret?: string;
}

export interface Minted {
  token: string;
  info: TokenInfo;
}

/**
 * Mints a credential. Admins mint for anyone; everyone else only for themselves (docs/api.md). The kind
 * follows the identity: a developer gets a personal access token, an agent an agent key.
 */
export async function mintToken(db: Db, actor: Actor, input: MintInput): Promise<Minted> {
  if (!input.name.trim()) throw invalid('name: must not be empty');
  if (input.expiresAt && input.expiresAt.getTime() <= Date.now()) throw invalid('expiresAt: must be in the future');
  return db.transaction((tx) => mintIn(tx, actor, input));
}

export async function mintIn(tx: Queryable, actor: Actor, input: MintInput): Promise<Minted> {
  let kind: TokenKind;
  if (input.kind === 'sensor') {
    kind = 'sensor';
  } else {
    if (!input.identityId) throw invalid('identityId: is required');
    const r = await tx.query<{ kind: IdentityKind; role: Role | null }>('SELECT kind, role FROM identities WHERE id = $1', [input.identityId]);
    const identity = r.rows[0];
    if (!identity) throw notFound(`identity ${input.identityId} does not exist`);
    const isAdmin = actor.kind === 'system' || (actor.kind === 'developer' && actor.role === 'admin');
    const isSelf = actor.kind === 'developer' && actor.identityId === input.identityId;
    if (!isAdmin && !isSelf) throw forbidden('only an admin can mint a token for another identity');
    // A personal token of another admin would let its minter decide as that admin (her own requests included).
    // Admins mint their own personal tokens; the CLI (an operator with the store) and the bootstrap may mint any.
    if (!isSelf && actor.kind === 'developer' && identity.kind === 'developer' && identity.role === 'admin') {
      throw forbidden(`${input.identityId} is an admin: only ${input.identityId} can mint her own personal access tokens`);
    }
    kind = identity.kind === 'agent' ? 'agent' : 'personal';
  }
  const secret = input.secret ?? generateSecret(kind);
  const id = newTokenId();
  const r = await tx.query<TokenRow>(
    `INSERT INTO tokens (id, kind, identity_id, name, secret_hash, display_prefix, created_by, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
    [id, kind, kind === 'sensor' ? null : input.identityId, input.name, hashSecret(secret), displayPrefix(secret), actorLabel(actor), input.expiresAt ?? null],
  );
  const info = toInfo(r.rows[0]!);
  await recordAudit(tx, {
    type: 'control',
    action: 'token.create',
    actor,
    subject: input.identityId,
    data: { tokenId: id, kind, name: input.name, expiresAt: info.expiresAt },
  });
  return { token: secret, info };
}

function actorLabel(actor: Actor): string {
  return actor.kind === 'developer' || actor.kind === 'agent' ? actor.identityId : `${actor.kind}:${'name' in actor ? actor.name : ''}`;
}

export async function listTokens(q: Queryable, filter: { identityId?: string; kind?: TokenKind }): Promise<TokenInfo[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (filter.identityId) {
    params.push(filter.identityId);
    where.push(`identity_id = $${params.length}`);
  }
  if (filter.kind) {
    params.push(filter.kind);
    where.push(`kind = $${params.length}`);
  }
  const r = await q.query<TokenRow>(
    `SELECT ${COLUMNS} FROM tokens ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY created_at DESC, id`,
    params,
  );
  return r.rows.map(toInfo);
}

/** Revokes at once. Admins revoke any token; others only their own. A revoked token: 409. */
export async function revokeToken(db: Db, actor: Actor, tokenId: string): Promise<TokenInfo> {
  return db.transaction(async (tx) => {
    const r = await tx.query<TokenRow>(`SELECT ${COLUMNS} FROM tokens WHERE id = $1 FOR UPDATE`, [tokenId]);
    const row = r.rows[0];
    const isAdmin = actor.kind === 'system' || (actor.kind === 'developer' && actor.role === 'admin');
    const isOwner = actor.kind === 'developer' && row?.identity_id === actor.identityId;
    // Someone else's token is reported as absent, so ids cannot be probed.
    if (!row || (!isAdmin && !isOwner)) throw notFound(`token ${tokenId} does not exist`);
    if (row.revoked_at) throw new AppError('already_revoked', `token ${tokenId} was already revoked`);
    const u = await tx.query<TokenRow>(
      `UPDATE tokens SET revoked_at = now(), revoked_by = $2 WHERE id = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
      [tokenId, actorLabel(actor)],
    );
    await tx.query('UPDATE console_sessions SET ended_at = now() WHERE token_id = $1 AND ended_at IS NULL', [tokenId]);
    await recordAudit(tx, {
      type: 'control',
      action: 'token.revoke',
      actor,
      subject: row.identity_id,
      data: { tokenId, kind: row.kind, name: row.name },
    });
    await notify(tx, Channels.token, { id: tokenId, op: 'revoke' });
    return toInfo(u.rows[0]!);
  });
}

export interface Credential {
  tokenId: string;
  /** Who minted it (`created_by`): an identity id or `system:<name>`. */
  issuedBy: string | null;
  kind: TokenKind;
  identityId: string | null;
  identityKind: IdentityKind | null;
  role: Role | null;
  name: string;
}

/**
 * Looks a presented secret up. Null for an unknown, revoked or expired credential: the caller answers 401
 * without saying which, so a stolen-but-revoked token teaches nothing.
 */
export async function authenticateSecret(q: Queryable, secret: string): Promise<Credential | null> {
  if (secret.length < 16 || secret.length > 512) return null;
  const r = await q.query<{
    id: string;
    kind: TokenKind;
    identity_id: string | null;
    name: string;
    identity_kind: IdentityKind | null;
    role: Role | null;
    created_by: string | null;
  }>(
    `SELECT t.id, t.kind, t.identity_id, t.name, i.kind AS identity_kind, i.role, t.created_by
       FROM tokens t LEFT JOIN identities i ON i.id = t.identity_id
      WHERE t.secret_hash = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`,
    [hashSecret(secret)],
  );
  const row = r.rows[0];
  if (!row) return null;
  if (row.kind !== 'sensor' && !row.identity_kind) return null;
  return { tokenId: row.id, issuedBy: row.created_by, kind: row.kind, identityId: row.identity_id, identityKind: row.identity_kind, role: row.role, name: row.name };
}
