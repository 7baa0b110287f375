/**
 * What a deleted identity had in the approval workflow ends with it, in the deletion's own transaction: its
 * pending and under-review requests are denied with a reason, its active grants revoked (announced, so every
 * replica's grant lookup drops them at once), and its notifications removed. A new identity created later
 * with the same id therefore inherits nothing; the lists a developer sees of their own requests and grants
 * also start at their identity's creation (see `ownSince` in access-requests.ts).
 */
import { recordAudit } from '../audit/audit.js';
import type { Actor } from '../shared/actor.js';
import { actorId } from '../shared/actor.js';
import { Channels, notify, type Queryable } from '../store/db.js';

export interface EndedHoldings {
  requestsDenied: number;
  grantsRevoked: number;
  notificationsRemoved: number;
}

export async function endApprovalsOf(tx: Queryable, actor: Actor, identityId: string): Promise<EndedHoldings> {
  const reason = `the requester's identity ${identityId} was deleted`;
  const requests = await tx.query<{ id: string }>(
    `UPDATE access_requests SET state = 'denied', denial_reason = $2, decision_count = decision_count + 1, updated_at = now()
      WHERE requester = $1 AND state IN ('pending', 'under_review') RETURNING id`,
    [identityId, reason],
  );
  for (const { id } of requests.rows) {
    await recordAudit(tx, { type: 'control', action: 'access_request.deny', actor, subject: identityId, data: { requestId: id, reason, cause: 'identity_deleted' } });
  }
  const grants = await tx.query<{ id: string; request_id: string }>(
    `UPDATE grants SET state = 'revoked', revoked_at = now(), revoked_by = $2 WHERE developer_id = $1 AND state = 'active' RETURNING id, request_id`,
    [identityId, actorId(actor)],
  );
  for (const g of grants.rows) {
    await recordAudit(tx, { type: 'control', action: 'grant.revoke', actor, subject: identityId, data: { grantId: g.id, requestId: g.request_id, cause: 'identity_deleted' } });
    await notify(tx, Channels.gatewayRules, { kind: 'grant', id: g.id });
  }
  const notes = await tx.query('DELETE FROM notifications WHERE recipient = $1', [identityId]);
  return { requestsDenied: requests.rows.length, grantsRevoked: grants.rows.length, notificationsRemoved: notes.rowCount ?? 0 };
}
