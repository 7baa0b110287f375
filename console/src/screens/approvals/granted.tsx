/** Granted: the active grants, filterable by developer and policy; admins revoke (at once, on every replica). */
import { useState } from 'react';
import { del, enc, query } from '../../api';
import { ConfirmDialog } from '../../components/dialogs';
import { ActionButton, ErrorNote, IdList, Loading, Time } from '../../components/ui';
import { subjectOf } from '../../format';
import { useMe, VIEWER_CANNOT } from '../../session';
import { GrantCells } from './table-cells';
import type { Grant } from '../../types';
import { useResource } from '../../use-resource';
import type { OutcomeReport } from './outcome';

export function GrantFilters({ developerId, policyName, onChange }: { developerId: string; policyName: string; onChange: (f: { developerId: string; policyName: string }) => void }) {
  const me = useMe();
  return (
    <div className="filters">
      {me.role !== 'developer' ? (
        <label className="field inline">
          <span>Developer</span>
          <input type="search" placeholder="eng/alice" value={developerId} onChange={(e) => onChange({ developerId: e.target.value, policyName })} />
        </label>
      ) : null}
      <label className="field inline">
        <span>Policy</span>
        <input type="search" placeholder="policy name" value={policyName} onChange={(e) => onChange({ developerId, policyName: e.target.value })} />
      </label>
    </div>
  );
}

export function Granted({ onOutcome }: { onOutcome: (r: OutcomeReport) => void }) {
  const [filters, setFilters] = useState({ developerId: '', policyName: '' });
  const grants = useResource<{ items: Grant[] }>(`/api/v1/policy-exceptions${query({ developerId: filters.developerId.trim(), policyName: filters.policyName.trim() })}`);
  return (
    <>
      <GrantFilters {...filters} onChange={setFilters} />
      <ErrorNote message={grants.error} />
      {grants.data ? (
        <GrantTable
          grants={grants.data.items}
          onRevoked={(g) => {
            onOutcome({ message: `Revoked the grant of ${subjectOf(g)} to ${g.developerId}. It is no longer honoured and moved to History.` });
            grants.reload();
          }}
        />
      ) : grants.loading ? (
        <Loading what="grants" />
      ) : null}
    </>
  );
}

function GrantTable({ grants, onRevoked }: { grants: Grant[]; onRevoked: (g: Grant) => void }) {
  if (grants.length === 0) return <p className="empty">No active grants.</p>;
  return (
    <table className="table grants">
      <thead>
        <tr>
          <th>Developer</th>
          <th>Grant</th>
          <th>Project scope</th>
          <th>Approvers</th>
          <th>Granted</th>
          <th>Expires</th>
          <th>Actions</th>
        </tr>
      </thead>
      <tbody>
        {grants.map((g) => (
          <tr key={g.id} data-grant={g.id}>
            <GrantCells grant={g} />
            <td>{g.projectScope ? <code>{g.projectScope}</code> : <span className="muted">everywhere</span>}</td>
            <td>
              <IdList ids={g.approvers} />
            </td>
            <td>
              <Time iso={g.createdAt} />
            </td>
            <td>
              <Time iso={g.expiresAt} />
            </td>
            <td>
              <RevokeButton grant={g} onRevoked={onRevoked} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function RevokeButton({ grant, onRevoked }: { grant: Grant; onRevoked: (g: Grant) => void }) {
  const me = useMe();
  const [open, setOpen] = useState(false);
  if (me.role === 'developer' || grant.state !== 'active') return null;
  return (
    <>
      <ActionButton kind="danger" onClick={() => setOpen(true)} disabledReason={me.role !== 'admin' ? VIEWER_CANNOT : null}>
        Revoke
      </ActionButton>
      {open ? (
        <ConfirmDialog
          title={`Revoke ${subjectOf(grant)} for ${grant.developerId}?`}
          confirmLabel="Revoke"
          danger
          onClose={() => setOpen(false)}
          onConfirm={async () => {
            await del(`/api/v1/policy-exceptions/${enc(grant.id)}`);
            onRevoked(grant);
          }}
        >
          <p>
            The grant stops at once on every replica: the developer’s next matching request is evaluated as if it never existed. The developer and
            the admins are notified.
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
