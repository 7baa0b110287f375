/**
 * Identities: agents and developers, `<namespace>/<name>`. Service verbs take the store and the actor;
 * each change is one transaction holding its audit event and its NOTIFY.
 */
import { recordAudit } from '../audit/audit.js';
import { AppError, conflict, notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { Actor, Role } from '../shared/actor.js';
import { IDENTITY_ID_RULE, parseIdentityId } from '../shared/ids.js';
import { ownersOf, parseOwners, writeOwners } from './owners.js';
import type { Changed, IdentityChange, IdentityKind } from './identity-change.js';
import { isTier, resolveTier, type Tier } from './tiers.js';
import type { Identity, SetTierResult } from './contract.js';

interface IdentityRow {
  id: string;
  kind: IdentityKind;
  role: Role | null;
  autonomy_tier: Tier | null;
  display_name: string;
  created_at: Date;
  owners?: string[] | null;
}

const COLUMNS = 'id, kind, role, autonomy_tier, display_name, created_at';
/** An agent's owners beside its row (null for developers). */
const OWNERS = `CASE WHEN kind = 'agent' THEN ARRAY(SELECT o.owner FROM agent_owners o WHERE o.agent_id = identities.id ORDER BY o.owner) END AS owners`;

function toIdentity(r: IdentityRow): Identity {
  return {
    id: r.id,
    kind: r.kind,
    ...(r.role ? { role: r.role } : {}),
    autonomyTier: r.autonomy_tier ?? '',
    ...(r.kind === 'agent' ? { effectiveTier: resolveTier(r.autonomy_tier).autonomyTier, owners: r.owners ?? [] } : {}),
    displayName: r.display_name,
    createdAt: r.created_at.toISOString(),
  };
}

export function requireIdentityId(id: string | undefined, field = 'id'): string {
  if (id === undefined || id === '') throw new AppError('invalid_request', `query parameter "${field}" is required`);
  if (!parseIdentityId(id)) throw new AppError('invalid_identity_id', `${field}: ${IDENTITY_ID_RULE}`);
  return id;
}

export interface CreateIdentityInput {
  id: string;
  kind: IdentityKind;
  role?: Role;
  displayName?: string;
  /** Agents only. */
  owners?: unknown;
}

export async function createIdentity(db: Db, actor: Actor, input: CreateIdentityInput): Promise<Changed<Identity>> {
  if (!parseIdentityId(input.id)) throw new AppError('invalid_identity_id', `id: ${IDENTITY_ID_RULE}`);
  if (input.kind === 'agent' && input.role !== undefined) {
    throw new AppError('invalid_request', 'role: applies to developer identities only');
  }
  if (input.kind === 'developer' && input.owners !== undefined) {
    throw new AppError('invalid_request', 'owners: applies to agent identities only', { field: 'owners' });
  }
  const owners = input.kind === 'agent' && input.owners !== undefined ? parseOwners(input.owners) : [];
  const role = input.kind === 'developer' ? (input.role ?? 'developer') : null;
  return db.transaction(async (tx) => {
    const r = await tx.query<IdentityRow & { revision: string }>(
      `INSERT INTO identities (id, kind, role, display_name) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id) DO NOTHING RETURNING ${COLUMNS}, revision::text AS revision`,
      [input.id, input.kind, role, input.displayName ?? ''],
    );
    const row = r.rows[0];
    if (!row) throw new AppError('already_exists', `identity ${input.id} already exists`);
    if (owners.length > 0) await writeOwners(tx, input.id, owners);
    await recordAudit(tx, {
      type: 'control',
      action: 'identity.create',
      actor,
      subject: input.id,
      data: { kind: input.kind, ...(role ? { role } : {}), ...(input.kind === 'agent' ? { owners } : {}) },
    });
    const change: IdentityChange = { id: row.id, op: 'upsert', kind: row.kind, tier: null, ...(row.kind === 'agent' ? { owners } : {}), revision: row.revision };
    await announce(tx, change);
    return { value: toIdentity({ ...row, owners }), change };
  });
}

export async function listIdentities(q: Queryable, filter: { kind?: IdentityKind } = {}): Promise<Identity[]> {
  const r = filter.kind
    ? await q.query<IdentityRow>(`SELECT ${COLUMNS}, ${OWNERS} FROM identities WHERE kind = $1 ORDER BY id`, [filter.kind])
    : await q.query<IdentityRow>(`SELECT ${COLUMNS}, ${OWNERS} FROM identities ORDER BY id`);
  return r.rows.map(toIdentity);
}

export async function findIdentity(q: Queryable, id: string): Promise<Identity | null> {
  const r = await q.query<IdentityRow>(`SELECT ${COLUMNS}, ${OWNERS} FROM identities WHERE id = $1`, [id]);
  return r.rows[0] ? toIdentity(r.rows[0]) : null;
}

export async function getIdentity(q: Queryable, id: string): Promise<Identity> {
  const identity = await findIdentity(q, id);
  if (!identity) throw notFound(`identity ${id} does not exist`);
  return identity;
}

/**
 * What else ends with an identity, in the deletion's own transaction (its grants, requests, held calls): the
 * domains that hold them supply it, so this module need not know them. Returns figures for the audit event.
 */
export type EndHoldings = (tx: Queryable, actor: Actor, identityId: string) => Promise<Record<string, number>>;

export async function deleteIdentity(db: Db, actor: Actor, id: string, endHoldings?: EndHoldings): Promise<Changed<void>> {
  return db.transaction(async (tx) => {
    const r = await tx.query<{ kind: IdentityKind; role: Role | null }>('SELECT kind, role FROM identities WHERE id = $1 FOR UPDATE', [id]);
    const row = r.rows[0];
    if (!row) throw notFound(`identity ${id} does not exist`);
    if (row.role === 'admin') {
      // Lock every admin row so two concurrent deletions cannot both pass the check.
      const admins = await tx.query('SELECT id FROM identities WHERE role = $1 FOR UPDATE', ['admin']);
      if (admins.rows.length <= 1) throw conflict(`${id} is the last admin; create another admin first`);
    }
    const rev = await tx.query<{ revision: string }>(`SELECT nextval('identity_revision_seq')::text AS revision`);
    const ended = endHoldings ? await endHoldings(tx, actor, id) : {};
    await tx.query('DELETE FROM identities WHERE id = $1', [id]);
    await recordAudit(tx, { type: 'control', action: 'identity.delete', actor, subject: id, data: { kind: row.kind, ...ended } });
    const change: IdentityChange = { id, op: 'delete', kind: row.kind, tier: null, revision: rev.rows[0]!.revision };
    await announce(tx, change);
    return { value: undefined, change };
  });
}

/**
 * PUT autonomy-tier. `""` clears the assignment (the agent then resolves to T2). The change applies to
 * later requests only; audit events already written keep the tier they recorded.
 */
export async function setAutonomyTier(db: Db, actor: Actor, id: string, tier: unknown): Promise<Changed<SetTierResult>> {
  if (tier !== '' && !isTier(tier)) {
    throw new AppError('invalid_tier', 'tier: must be one of "T1", "T2", "T3", "T4", or "" to clear the assignment');
  }
  const next: Tier | null = tier === '' ? null : tier;
  return db.transaction(async (tx) => {
    const r = await tx.query<{ kind: IdentityKind; autonomy_tier: Tier | null }>(
      'SELECT kind, autonomy_tier FROM identities WHERE id = $1 FOR UPDATE',
      [id],
    );
    const row = r.rows[0];
    if (!row) throw notFound(`identity ${id} does not exist`);
    if (row.kind !== 'agent') throw new AppError('not_an_agent', `${id} is a developer identity; only agent identities have a tier`);
    const u = await tx.query<{ revision: string }>(
      `UPDATE identities SET autonomy_tier = $2, revision = nextval('identity_revision_seq'), updated_at = now()
       WHERE id = $1 RETURNING revision::text AS revision`,
      [id, next],
    );
    await recordAudit(tx, {
      type: 'control',
      action: 'identity.tier_set',
      actor,
      subject: id,
      data: { oldTier: row.autonomy_tier ?? '', newTier: next ?? '', effectiveTier: resolveTier(next).autonomyTier },
    });
    const change: IdentityChange = { id, op: 'upsert', kind: 'agent', tier: next, owners: await ownersOf(tx, id), revision: u.rows[0]!.revision };
    await announce(tx, change);
    return { value: { status: 'ok', tier: next ?? '', effectiveTier: resolveTier(next).autonomyTier }, change };
  });
}

function announce(tx: Queryable, change: IdentityChange): Promise<void> {
  return notify(tx, Channels.identity, change);
}
