/** Notifications: written with the decisions that cause them (same transaction), read by their recipient. */
import type { Queryable } from '../store/db.js';
import type { Notification, NotificationFilter } from './contract.js';

export async function addNotification(tx: Queryable, recipient: string, kind: string, message: string, refs: { requestId?: string; grantId?: string }, data: Record<string, unknown> = {}): Promise<void> {
  await tx.query('INSERT INTO notifications (recipient, kind, message, request_id, grant_id, data) VALUES ($1, $2, $3, $4, $5, $6)', [
    recipient,
    kind,
    message,
    refs.requestId ?? null,
    refs.grantId ?? null,
    JSON.stringify(data),
  ]);
}

/** One notification per admin identity at this moment: the admin audience. */
export async function notifyAdmins(tx: Queryable, kind: string, message: string, refs: { requestId?: string; grantId?: string }): Promise<void> {
  const admins = await tx.query<{ id: string }>(`SELECT id FROM identities WHERE kind = 'developer' AND role = 'admin'`);
  for (const a of admins.rows) await addNotification(tx, a.id, kind, message, refs);
}

/** The recipient's own notifications, newest first. */
export async function listNotifications(q: Queryable, recipient: string, filter: NotificationFilter): Promise<Notification[]> {
  const r = await q.query<{ id: string; kind: string; message: string; request_id: string | null; grant_id: string | null; created_at: Date; read_at: Date | null }>(
    `SELECT id::text AS id, kind, message, request_id, grant_id, created_at, read_at FROM notifications
      WHERE recipient = $1 ${filter.unread ? 'AND read_at IS NULL' : ''} ORDER BY notifications.id DESC LIMIT 200`,
    [recipient],
  );
  return r.rows.map((n) => ({ id: n.id, kind: n.kind, message: n.message, requestId: n.request_id, grantId: n.grant_id, createdAt: n.created_at.toISOString(), readAt: n.read_at?.toISOString() ?? null }));
}

/** Marks one of the recipient's notifications read; false when there is no such notification of theirs. */
export async function markNotificationRead(q: Queryable, recipient: string, id: string): Promise<boolean> {
  if (!/^\d{1,18}$/.test(id)) return false;
  const r = await q.query(`UPDATE notifications SET read_at = COALESCE(read_at, now()) WHERE id = $1::bigint AND recipient = $2`, [id, recipient]);
  return r.rowCount > 0;
}
