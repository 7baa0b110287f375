/**
 * Policies in the store: the I/O edge of the policy engine. Each change is one transaction holding the
 * row, its audit event and the NOTIFY that makes every replica reload and recompile the set.
 */
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { AppError, notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import { BUILT_IN_POLICIES, SUPERSEDED_BUILT_IN_VERSIONS } from './built-in-policies.js';
import type { Policy, PolicyKind } from './compile-policy.js';
import type { GovernedCallType } from '../shared/governed-call.js';

interface PolicyRow {
  name: string;
  kind: PolicyKind;
  applies_to: GovernedCallType[];
  match: string;
  message: string;
  approval_window_seconds: number | null;
  enabled: boolean;
  built_in: boolean;
}

const COLUMNS = 'name, kind, applies_to, match, message, approval_window_seconds, enabled, built_in';

function toPolicy(row: PolicyRow): Policy {
  return {
    name: row.name,
    kind: row.kind,
    appliesTo: row.applies_to,
    match: row.match,
    message: row.message,
    ...(row.approval_window_seconds === null ? {} : { approvalWindowSeconds: row.approval_window_seconds }),
    enabled: row.enabled,
    builtIn: row.built_in,
  };
}

/** Every policy in evaluation order: built-ins first (seeded first), then by creation. */
export async function listPolicies(q: Queryable): Promise<Policy[]> {
  const r = await q.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies ORDER BY position`);
  return r.rows.map(toPolicy);
}

export async function getPolicy(q: Queryable, name: string): Promise<Policy> {
  const r = await q.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE name = $1`, [name]);
  const row = r.rows[0];
  if (!row) throw notFound(`no policy named ${name}`);
  return toPolicy(row);
}

const UPGRADE_ACTOR: Actor = { kind: 'system', name: 'upgrade' };

/**
 * Ships the built-in policies into a store that lacks them, and moves a built-in still exactly as an earlier
 * release shipped it to the current version (audited `policy.upgrade`); an edited built-in is left as the admin made
 * it. Conditional on the old text, so replicas starting together upgrade it once.
 */
export async function seedBuiltInPolicies(db: Db): Promise<void> {
  await db.transaction(async (tx) => {
    let added = 0;
    for (const old of SUPERSEDED_BUILT_IN_VERSIONS) {
      const current = BUILT_IN_POLICIES.find((p) => p.name === old.name);
      if (!current) continue;
      const r = await tx.query(
        `UPDATE policies SET match = $2, message = $3 WHERE name = $1 AND built_in AND match = $4 AND message = $5`,
        [old.name, current.match, current.message, old.match, old.message],
      );
      if (r.rowCount > 0) {
        added += r.rowCount;
        await recordAudit(tx, {
          type: 'control',
          action: 'policy.upgrade',
          actor: UPGRADE_ACTOR,
          subject: old.name,
          data: { policy: old.name, oldMatch: old.match, match: current.match },
        });
      }
    }
    for (const p of BUILT_IN_POLICIES) {
      const r = await tx.query(
        `INSERT INTO policies (name, kind, applies_to, match, message, approval_window_seconds, enabled, built_in)
         VALUES ($1, $2, $3, $4, $5, $6, $7, true) ON CONFLICT (name) DO NOTHING`,
        [p.name, p.kind, p.appliesTo, p.match, p.message, p.approvalWindowSeconds ?? null, p.enabled],
      );
      added += r.rowCount;
    }
    if (added > 0) await notify(tx, Channels.policy, { op: 'seed' });
  });
}

function auditData(p: Policy): Record<string, unknown> {
  return { policy: p.name, kind: p.kind, appliesTo: p.appliesTo, match: p.match, enabled: p.enabled, builtIn: p.builtIn };
}

export async function createPolicy(db: Db, actor: Actor, policy: Policy): Promise<Policy> {
  return db.transaction(async (tx) => {
    const r = await tx.query<PolicyRow>(
      `INSERT INTO policies (name, kind, applies_to, match, message, approval_window_seconds, enabled, built_in)
       VALUES ($1, $2, $3, $4, $5, $6, $7, false) ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`,
      [policy.name, policy.kind, policy.appliesTo, policy.match, policy.message, policy.approvalWindowSeconds ?? null, policy.enabled],
    );
    const row = r.rows[0];
    if (!row) throw new AppError('already_exists', `a policy named ${policy.name} already exists; change it with PUT /api/v1/policies/${policy.name}`);
    const created = toPolicy(row);
    await recordAudit(tx, { type: 'control', action: 'policy.create', actor, subject: created.name, data: auditData(created) });
    await notify(tx, Channels.policy, { op: 'create', name: created.name });
    return created;
  });
}

/** Replaces a policy's content; `builtIn` and the name stay what they are. */
export async function replacePolicy(db: Db, actor: Actor, policy: Policy): Promise<Policy> {
  return db.transaction(async (tx) => {
    const before = await tx.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE name = $1 FOR UPDATE`, [policy.name]);
    const old = before.rows[0];
    if (!old) throw notFound(`no policy named ${policy.name}`);
    const r = await tx.query<PolicyRow>(
      `UPDATE policies SET kind = $2, applies_to = $3, match = $4, message = $5, approval_window_seconds = $6, enabled = $7,
         revision = nextval('policy_revision_seq'), updated_at = now()
       WHERE name = $1 RETURNING ${COLUMNS}`,
      [policy.name, policy.kind, policy.appliesTo, policy.match, policy.message, policy.approvalWindowSeconds ?? null, policy.enabled],
    );
    const updated = toPolicy(r.rows[0]!);
    await recordAudit(tx, {
      type: 'control',
      action: 'policy.update',
      actor,
      subject: updated.name,
      data: { ...auditData(updated), before: auditData(toPolicy(old)) },
    });
    await notify(tx, Channels.policy, { op: 'update', name: updated.name });
    return updated;
  });
}

export async function deletePolicy(db: Db, actor: Actor, name: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = await tx.query<PolicyRow>(`SELECT ${COLUMNS} FROM policies WHERE name = $1 FOR UPDATE`, [name]);
    const row = r.rows[0];
    if (!row) throw notFound(`no policy named ${name}`);
    if (row.built_in) {
      throw new AppError(
        'built_in_policy',
        `${name} is a built-in Autonomy Governance policy: it cannot be deleted; disable it with PUT /api/v1/policies/${name} and "enabled": false`,
      );
    }
    await tx.query('DELETE FROM policies WHERE name = $1', [name]);
    await recordAudit(tx, { type: 'control', action: 'policy.delete', actor, subject: name, data: auditData(toPolicy(row)) });
    await notify(tx, Channels.policy, { op: 'delete', name });
  });
}
