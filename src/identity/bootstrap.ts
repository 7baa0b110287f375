/**
 * REINS_BOOTSTRAP_ADMIN_TOKEN: when no admin exists, create developer identity `default/admin` with role
 * admin and that secret as its personal access token. Replicas starting together serialize on an
 * advisory lock, so exactly one creates it.
 */
import { recordAudit } from '../audit/audit.js';
import type { Db } from '../store/db.js';
import type { Actor } from '../shared/actor.js';
import { hashSecret, mintIn } from './tokens.js';

const BOOTSTRAP_LOCK = 72_657_302;
export const BOOTSTRAP_ADMIN_ID = 'default/admin';

export type BootstrapOutcome = 'created' | 'admin-exists';

export async function bootstrapAdmin(db: Db, secret: string): Promise<BootstrapOutcome> {
  const actor: Actor = { kind: 'system', name: 'bootstrap' };
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [BOOTSTRAP_LOCK]);
    const admins = await tx.query(`SELECT 1 FROM identities WHERE role = 'admin' LIMIT 1`);
    if (admins.rows.length > 0) return 'admin-exists';
    const existing = await tx.query<{ kind: string }>('SELECT kind FROM identities WHERE id = $1', [BOOTSTRAP_ADMIN_ID]);
    if (existing.rows[0]) {
      if (existing.rows[0].kind !== 'developer') throw new Error(`${BOOTSTRAP_ADMIN_ID} exists as an agent; cannot bootstrap an admin`);
      await tx.query(`UPDATE identities SET role = 'admin', updated_at = now() WHERE id = $1`, [BOOTSTRAP_ADMIN_ID]);
    } else {
      await tx.query(`INSERT INTO identities (id, kind, role, display_name) VALUES ($1, 'developer', 'admin', 'Bootstrap admin')`, [
        BOOTSTRAP_ADMIN_ID,
      ]);
    }
    await recordAudit(tx, { type: 'control', action: 'identity.create', actor, subject: BOOTSTRAP_ADMIN_ID, data: { kind: 'developer', role: 'admin', bootstrap: true } });
    const known = await tx.query('SELECT 1 FROM tokens WHERE secret_hash = $1', [hashSecret(secret)]);
    if (known.rows.length === 0) await mintIn(tx, actor, { identityId: BOOTSTRAP_ADMIN_ID, name: 'bootstrap', secret });
    return 'created';
  });
}

/** `reins admin create`: a new admin identity and its first personal access token. */
export async function createAdmin(db: Db, id: string, tokenName = 'cli'): Promise<{ token: string }> {
  const actor: Actor = { kind: 'system', name: 'cli' };
  return db.transaction(async (tx) => {
    const r = await tx.query(
      `INSERT INTO identities (id, kind, role, display_name) VALUES ($1, 'developer', 'admin', '') ON CONFLICT (id) DO NOTHING RETURNING id`,
      [id],
    );
    if (r.rows.length === 0) {
      const row = await tx.query<{ kind: string; role: string | null }>('SELECT kind, role FROM identities WHERE id = $1', [id]);
      if (row.rows[0]?.role !== 'admin') throw new Error(`${id} already exists and is not an admin`);
    } else {
      await recordAudit(tx, { type: 'control', action: 'identity.create', actor, subject: id, data: { kind: 'developer', role: 'admin' } });
    }
    const minted = await mintIn(tx, actor, { identityId: id, name: tokenName });
    return { token: minted.token };
  });
}
