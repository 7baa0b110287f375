/**
 * The owners of an agent identity: the developers whose personal access tokens may name the agent in
 * `X-Reins-Agent` and so act with its tier. A tier given to one agent must not be usable by every developer, so
 * the binding is the admin's: an entry is a developer identity id (`eng/alice`) or a namespace rule (`eng/*`,
 * every developer identity in that namespace). Checked on the request path from the tier cache, never the store.
 */
import { recordAudit } from '../audit/audit.js';
import { AppError, notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import type { Actor } from '../shared/actor.js';
import type { Changed, IdentityChange, IdentityKind } from './identity-change.js';
import { parseIdentityId } from '../shared/ids.js';
import { MAX_OWNERS, OWNER_RULE, type SetOwnersResult } from './contract.js';
import type { Tier } from './tiers.js';

/**
 * At most this many entries per agent: every change is announced with the whole list over NOTIFY (8000 bytes at
 * most; 20 ids of the longest length fit). A namespace rule covers a team in one entry.
 */
export { MAX_OWNERS, OWNER_RULE } from './contract.js';

const NAMESPACE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;


function isNamespaceRule(owner: string): boolean {
  return owner.endsWith('/*') && NAMESPACE.test(owner.slice(0, -2));
}

/** Whether an owner entry covers this developer: the same id, or a namespace rule of the developer's namespace. */
export function ownerCovers(owner: string, developerId: string): boolean {
  if (owner === developerId) return true;
  return owner.endsWith('/*') && developerId.startsWith(owner.slice(0, -1));
}

/** The owners list of a request body: validated, without duplicates, sorted. 400 naming `field` otherwise. */
export function parseOwners(raw: unknown, field = 'owners'): string[] {
  if (!Array.isArray(raw)) throw new AppError('invalid_request', `${field}: must be an array of strings; ${OWNER_RULE}`, { field });
  const owners = new Set<string>();
  raw.forEach((entry, i) => {
    if (typeof entry !== 'string' || (!isNamespaceRule(entry) && parseIdentityId(entry) === null)) {
      throw new AppError('invalid_request', `${field}[${i}]: ${JSON.stringify(typeof entry === 'string' ? entry.slice(0, 100) : entry ?? null)} is not an owner; ${OWNER_RULE}`, { field });
    }
    owners.add(entry);
  });
  if (owners.size > MAX_OWNERS) {
    throw new AppError('invalid_request', `${field}: at most ${MAX_OWNERS} entries; use a namespace rule (<namespace>/*) for a team`, { field });
  }
  return [...owners].sort();
}

/** An agent's owners, sorted. */
export async function ownersOf(q: Queryable, agentId: string): Promise<string[]> {
  const r = await q.query<{ owner: string }>('SELECT owner FROM agent_owners WHERE agent_id = $1 ORDER BY owner', [agentId]);
  return r.rows.map((row) => row.owner);
}

/**
 * Replaces an agent's owners inside the caller's transaction. A developer entry must name an existing developer
 * identity (locked, so that a concurrent deletion either comes first and fails this, or comes after and deletes
 * the entry with the developer).
 */
export async function writeOwners(tx: Queryable, agentId: string, owners: readonly string[], field = 'owners'): Promise<void> {
  const developers = owners.filter((o) => !o.endsWith('/*'));
  if (developers.length > 0) {
    const r = await tx.query<{ id: string; kind: IdentityKind }>('SELECT id, kind FROM identities WHERE id = ANY($1) FOR SHARE', [developers]);
    const kinds = new Map(r.rows.map((row) => [row.id, row.kind]));
    for (const id of developers) {
      const kind = kinds.get(id);
      if (kind !== 'developer') {
        throw new AppError(
          'invalid_request',
          kind === undefined
            ? `${field}: ${id} is not an identity in Reins; create the developer identity first, or use a namespace rule`
            : `${field}: ${id} is an agent identity; owners are developer identities`,
          { field },
        );
      }
    }
  }
  await tx.query('DELETE FROM agent_owners WHERE agent_id = $1', [agentId]);
  if (owners.length > 0) {
    await tx.query(
      `INSERT INTO agent_owners (agent_id, owner, developer_id)
       SELECT $1, o, CASE WHEN o LIKE '%/*' THEN NULL ELSE o END FROM unnest($2::text[]) AS o`,
      [agentId, owners],
    );
  }
}

/** PUT owners: replaces the list; announced like a tier change, so every replica applies it at once. */
export async function setOwners(db: Db, actor: Actor, id: string, raw: unknown): Promise<Changed<SetOwnersResult>> {
  const owners = parseOwners(raw);
  return db.transaction(async (tx) => {
    const r = await tx.query<{ kind: IdentityKind; autonomy_tier: Tier | null }>('SELECT kind, autonomy_tier FROM identities WHERE id = $1 FOR UPDATE', [id]);
    const row = r.rows[0];
    if (!row) throw notFound(`identity ${id} does not exist`);
    if (row.kind !== 'agent') throw new AppError('not_an_agent', `${id} is a developer identity; only agent identities have owners`);
    const before = await ownersOf(tx, id);
    await writeOwners(tx, id, owners);
    const u = await tx.query<{ revision: string }>(
      `UPDATE identities SET revision = nextval('identity_revision_seq'), updated_at = now() WHERE id = $1 RETURNING revision::text AS revision`,
      [id],
    );
    await recordAudit(tx, { type: 'control', action: 'identity.owners_set', actor, subject: id, data: { oldOwners: before, newOwners: owners } });
    const change: IdentityChange = { id, op: 'upsert', kind: 'agent', tier: row.autonomy_tier, owners, revision: u.rows[0]!.revision };
    await notify(tx, Channels.identity, change);
    return { value: { status: 'ok', id, owners }, change };
  });
}
