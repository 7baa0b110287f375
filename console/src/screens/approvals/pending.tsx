/**
 * Pending: access requests that are pending or Under Review, and held calls waiting for a decision
 * (admins and viewers; a developer sees their own requests only).
 */
import { useCallback } from 'react';
import { ErrorNote, IdList, Loading, StateBadge } from '../../components/ui';
import { isReader, useMe } from '../../session';
import { RequestCells } from './table-cells';
import type { AccessRequest, HeldCall } from '../../types';
import { useResource } from '../../use-resource';
import { usePolling } from '../../use-polling';
import { HeldCalls } from './held-calls';
import type { OutcomeReport } from './outcome';
import { pendingCoSigners, RequestActions } from './request-actions';

export function Pending({ onOutcome }: { onOutcome: (report: OutcomeReport) => void }) {
  const me = useMe();
  const reader = isReader(me.role);
  const pending = useResource<{ items: AccessRequest[] }>('/api/v1/access-requests?state=pending');
  const review = useResource<{ items: AccessRequest[] }>('/api/v1/access-requests?state=under_review');
  const held = useResource<{ items: HeldCall[] }>(reader ? '/api/v1/held-calls?state=pending' : null);
  const reloadPending = pending.reload;
  const reloadReview = review.reload;
  const reloadHeld = held.reload;
  const reload = useCallback(() => {
    reloadPending();
    reloadReview();
    if (reader) reloadHeld();
  }, [reloadPending, reloadReview, reloadHeld, reader]);
  usePolling(reload, 10_000);

  const report = (r: OutcomeReport) => {
    onOutcome(r);
    reload();
  };
  const requests = [...(review.data?.items ?? []), ...(pending.data?.items ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt));

  return (
    <>
      <div className="section-head">
        <h2>Requests</h2>
        <button type="button" className="btn plain small" onClick={reload}>
          Refresh
        </button>
      </div>
      {me.role === 'developer' ? <p className="muted">Your own requests. Requests you are asked to co-sign open from your notifications.</p> : null}
      <ErrorNote message={pending.error ?? review.error} />
      {!pending.data && pending.loading ? <Loading what="requests" /> : <RequestTable requests={requests} onOutcome={report} />}
      {reader ? (
        <>
          <div className="section-head">
            <h2>Held calls</h2>
          </div>
          <p className="muted">
            Live LLM requests and MCP tool calls parked by an Approve policy. Releasing resumes every attached call as if the policy had allowed it.
          </p>
          <ErrorNote message={held.error} />
          {held.data ? <HeldCalls items={held.data.items} onOutcome={report} /> : held.loading ? <Loading what="held calls" /> : null}
        </>
      ) : null}
    </>
  );
}

function RequestTable({ requests, onOutcome }: { requests: AccessRequest[]; onOutcome: (r: OutcomeReport) => void }) {
  if (requests.length === 0) return <p className="empty">No pending requests.</p>;
  return (
    <table className="table requests">
      <thead>
        <tr>
          <th>Submitted</th>
          <th>Requester</th>
          <th>Request</th>
          <th>Justification</th>
          <th>Co-signers</th>
          <th>State</th>
          <th>Actions</th>
        </tr>
      </thead>
      <tbody>
        {requests.map((r) => (
          <tr key={r.id} data-request={r.id}>
            <RequestCells request={r} />
            <td>
              <IdList ids={r.requiredApprovers} />
              {r.state === 'under_review' ? (
                <div className="muted">
                  waiting for: <IdList ids={pendingCoSigners(r)} empty="nobody" />
                </div>
              ) : null}
            </td>
            <td>
              <StateBadge state={r.state} />
            </td>
            <td>
              <RequestActions request={r} onOutcome={onOutcome} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
