/** The signed-in person's notifications, newest first; the ones about a request link to it. */
import { useState } from 'react';
import { enc, messageOf, post, query } from '../api';
import { ErrorNote, Loading, Time } from '../components/ui';
import { Link } from '../router';
import type { Notification } from '../types';
import { useResource } from '../use-resource';

const KIND_LABEL: Record<string, string> = {
  request_submitted: 'Request submitted',
  request_approved: 'Request approved',
  request_under_review: 'Under Review',
  request_denied: 'Request denied',
  cosign_requested: 'Your co-signature is asked',
  grant_revoked: 'Grant revoked',
  grant_expired: 'Grant expired',
};

export function Notifications() {
  const [unread, setUnread] = useState(false);
  const list = useResource<{ items: Notification[] }>(`/api/v1/notifications${query({ unread: unread ? 'true' : '' })}`);
  const [error, setError] = useState<string | null>(null);
  const markRead = async (n: Notification) => {
    setError(null);
    try {
      await post(`/api/v1/notifications/${enc(n.id)}/read`);
      list.reload();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <section>
      <h1>Notifications</h1>
      <div className="filters">
        <label className="check">
          <input type="checkbox" checked={unread} onChange={(e) => setUnread(e.target.checked)} />
          <span>Unread only</span>
        </label>
      </div>
      <ErrorNote message={list.error ?? error} />
      {!list.data ? (
        list.loading ? <Loading what="notifications" /> : null
      ) : list.data.items.length === 0 ? (
        <p className="empty">No notifications.</p>
      ) : (
        <ul className="notifications">
          {list.data.items.map((n) => (
            <li key={n.id} className={n.readAt ? 'read' : 'unread'} data-notification={n.kind}>
              <div className="notification-head">
                <strong>{KIND_LABEL[n.kind] ?? n.kind}</strong> <Time iso={n.createdAt} />
              </div>
              <p className="user-text">{n.message}</p>
              <div className="actions">
                {n.requestId ? <Link to={`/approvals/requests/${encodeURIComponent(n.requestId)}`}>Open the request</Link> : null}
                {n.grantId ? <Link to={`/approvals/grants/${encodeURIComponent(n.grantId)}`}>Open the grant</Link> : null}
                {!n.readAt ? (
                  <button type="button" className="btn plain small" onClick={() => void markRead(n)}>
                    Mark as read
                  </button>
                ) : null}
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
