/** Grants: listing, reading and revoking (the grants an approval creates are request-decisions.ts's). */
import { recordAudit } from '../audit/audit.js';
import { credentialOf, type Actor } from '../shared/actor.js';
import { notFound } from '../shared/errors.js';
import { Channels, notify, type Db, type Queryable } from '../store/db.js';
import { deciderOf } from '../shared/decider.js';
import { refusalError } from '../shared/refusal.js';
import type { Grant, GrantFilter } from './contract.js';
import { decideGrant } from './decision-state.js';
import { addNotification, notifyAdmins } from './notifications.js';
import { GRANT_COLUMNS, SINCE_IDENTITY, describeGrant, effectiveGrantState, identityCreatedAt, isAdminOrViewer, toGrant, type GrantRow, type Settled } from './request-rows.js';

export async function listGrants(q: Queryable, caller: Actor, filter: GrantFilter & { history: boolean }): Promise<Grant[]> {
  const where = [filter.history ? `(state <> 'active' OR expires_at <= now())` : `state = 'active' AND expires_at > now()`];
  const params: unknown[] = [];
  const developer = isAdminOrViewer(caller) ? filter.developerId : caller.kind === 'developer' ? caller.identityId : '';
  if (developer) where.push(`developer_id = $${params.push(developer)}`);
  if (!isAdminOrViewer(caller)) where.push(SINCE_IDENTITY(`$${params.push(caller.kind === 'developer' ? caller.identityId : '')}`));
  if (filter.policyName) where.push(`policy_name = $${params.push(filter.policyName)}`);
  const r = await q.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id LIMIT 500`, params);
  return r.rows.map(toGrant);
}

export async function getGrant(q: Queryable, caller: Actor, id: string): Promise<Grant> {
  const r = await q.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1`, [id]);
  const row = r.rows[0];
  const mine = row && caller.kind === 'developer' && row.developer_id === caller.identityId && row.created_at.getTime() >= (await identityCreatedAt(q, caller));
  if (!row || !(isAdminOrViewer(caller) || mine)) throw notFound(`no grant ${id}`);
  return toGrant(row);
}

/** Revokes an active grant at once (admin); not active: 409. */
export async function revokeGrant(db: Db, caller: Actor, id: string): Promise<Grant> {
  const result = await db.transaction(async (tx): Promise<Settled<Grant>> => {
    const r = await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1 FOR UPDATE`, [id]);
    const row = r.rows[0];
    if (!row) {
      // Whoever may not revoke gets the role refusal whether or not the grant exists, so grant ids cannot be probed.
      const byRole = decideGrant({ state: null }, { kind: 'revoke' }, deciderOf(caller), Date.now());
      if (!byRole.ok && byRole.code === 'forbidden_role') return { refused: byRole };
      throw notFound(`no grant ${id}`);
    }
    const now = Date.now();
    const decision = decideGrant({ state: effectiveGrantState(row, now), expiresAt: row.expires_at.getTime() }, { kind: 'revoke' }, deciderOf(caller), now);
    if (!decision.ok) return { refused: decision };
    await tx.query(`UPDATE grants SET state = 'revoked', revoked_at = now(), revoked_by = $2 WHERE id = $1 AND state = 'active'`, [id, deciderOf(caller).id]);
    for (const effect of decision.effects) {
      if (effect.type === 'notify_requester') await addNotification(tx, row.developer_id, 'grant_revoked', `${deciderOf(caller).id} revoked your grant for ${describeGrant(row)}.`, { requestId: row.request_id, grantId: id });
      if (effect.type === 'notify_admins') await notifyAdmins(tx, 'grant_revoked', `${deciderOf(caller).id} revoked ${row.developer_id}'s grant for ${describeGrant(row)}.`, { requestId: row.request_id, grantId: id });
      if (effect.type === 'audit') {
        await recordAudit(tx, { type: 'control', action: effect.action, actor: caller, subject: row.developer_id, data: { grantId: id, requestId: row.request_id, ...credentialOf(caller) } });
      }
    }
    await notify(tx, Channels.gatewayRules, { kind: 'grant', id });
    const updated = (await tx.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM grants WHERE id = $1`, [id])).rows[0]!;
    return { value: toGrant(updated) };
  });
  if (result.refused) {
    await recordAudit(db, { type: 'control', action: 'grant.revoke', actor: caller, outcome: 'refused', subject: id, data: { grantId: id, code: result.refused.code } });
    throw refusalError(result.refused);
  }
  return result.value;
}
