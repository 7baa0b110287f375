/** History: grants that ended (revoked or expired) and requests that were decided. */
import { useState } from 'react';
import { query } from '../../api';
import { ErrorNote, IdList, Loading, StateBadge, Time } from '../../components/ui';
import { GrantCells, RequestCells } from './table-cells';
import type { AccessRequest, Grant } from '../../types';
import { useResource } from '../../use-resource';
import { GrantFilters } from './granted';

export function History() {
  const [filters, setFilters] = useState({ developerId: '', policyName: '' });
  const grants = useResource<{ items: Grant[] }>(
    `/api/v1/policy-exceptions/history${query({ developerId: filters.developerId.trim(), policyName: filters.policyName.trim() })}`,
  );
  const approved = useResource<{ items: AccessRequest[] }>('/api/v1/access-requests?state=approved');
  const denied = useResource<{ items: AccessRequest[] }>('/api/v1/access-requests?state=denied');
  const decided = [...(approved.data?.items ?? []), ...(denied.data?.items ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt));

  return (
    <>
      <h2>Ended grants</h2>
      <GrantFilters {...filters} onChange={setFilters} />
      <ErrorNote message={grants.error} />
      {grants.data ? <EndedGrants grants={grants.data.items} /> : grants.loading ? <Loading what="grant history" /> : null}
      <h2>Decided requests</h2>
      <ErrorNote message={approved.error ?? denied.error} />
      {approved.data && denied.data ? <DecidedRequests requests={decided} /> : <Loading what="decided requests" />}
    </>
  );
}

function EndedGrants({ grants }: { grants: Grant[] }) {
  if (grants.length === 0) return <p className="empty">No revoked or expired grants.</p>;
  return (
    <table className="table grants-history">
      <thead>
        <tr>
          <th>Developer</th>
          <th>Grant</th>
          <th>State</th>
          <th>Approvers</th>
          <th>Granted</th>
          <th>Ended</th>
        </tr>
      </thead>
      <tbody>
        {grants.map((g) => (
          <tr key={g.id} data-grant={g.id}>
            <GrantCells grant={g} />
            <td>
              <StateBadge state={g.state} />
              {g.revokedBy ? <div className="muted">by {g.revokedBy}</div> : null}
            </td>
            <td>
              <IdList ids={g.approvers} />
            </td>
            <td>
              <Time iso={g.createdAt} />
            </td>
            <td>
              <Time iso={g.state === 'revoked' ? g.revokedAt : g.expiresAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function DecidedRequests({ requests }: { requests: AccessRequest[] }) {
  if (requests.length === 0) return <p className="empty">No decided requests.</p>;
  return (
    <table className="table requests-history">
      <thead>
        <tr>
          <th>Submitted</th>
          <th>Requester</th>
          <th>Request</th>
          <th>Justification</th>
          <th>Outcome</th>
          <th>Decided by</th>
        </tr>
      </thead>
      <tbody>
        {requests.map((r) => (
          <tr key={r.id} data-request={r.id}>
            <RequestCells request={r} />
            <td>
              <StateBadge state={r.state} />
              {r.denialReason ? <p className="user-text">{r.denialReason}</p> : null}
            </td>
            <td>
              <IdList ids={r.decisions.map((d) => d.approver)} empty="—" />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
