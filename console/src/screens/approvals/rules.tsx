/**
 * Rules: exception rules, the reusable rules a request can be granted against (a policy, the longest a
 * grant may last, its required co-signers and project scope), managed separately from grants; and rate limits
 * (rate-limits.tsx).
 */
import { useState, type FormEvent } from 'react';
import { del, enc, messageOf, post } from '../../api';
import { ConfirmDialog } from '../../components/dialogs';
import { ActionButton, ErrorNote, IdList, Loading } from '../../components/ui';
import { formatDuration, parseIdList } from '../../format';
import { useMe, VIEWER_CANNOT } from '../../session';
import type { ExceptionRule, Policy } from '../../types';
import { useResource } from '../../use-resource';
import { RateLimits } from './rate-limits';

export function Rules() {
  const me = useMe();
  const rules = useResource<{ items: ExceptionRule[] }>('/api/v1/exception-rules');
  const [removing, setRemoving] = useState<ExceptionRule | null>(null);
  return (
    <>
      <h2>Exception rules</h2>
      <ErrorNote message={rules.error} />
      {rules.data ? (
        rules.data.items.length === 0 ? (
          <p className="empty">No exception rules.</p>
        ) : (
          <table className="table rules">
            <thead>
              <tr>
                <th>Name</th>
                <th>Policy</th>
                <th>Longest grant</th>
                <th>Required co-signers</th>
                <th>Project scope</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {rules.data.items.map((r) => (
                <tr key={r.id}>
                  <td>{r.name}</td>
                  <td>
                    <code>{r.policyName}</code>
                  </td>
                  <td>{formatDuration(r.maxDurationSeconds)}</td>
                  <td>
                    <IdList ids={r.requiredApprovers} />
                  </td>
                  <td>{r.projectScope ? <code>{r.projectScope}</code> : <span className="muted">everywhere</span>}</td>
                  <td>
                    <ActionButton kind="danger" onClick={() => setRemoving(r)} disabledReason={me.role !== 'admin' ? VIEWER_CANNOT : null}>
                      Delete
                    </ActionButton>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )
      ) : rules.loading ? (
        <Loading what="exception rules" />
      ) : null}
      {removing ? (
        <ConfirmDialog
          title={`Delete the exception rule ${removing.name}?`}
          confirmLabel="Delete"
          danger
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await del(`/api/v1/exception-rules/${enc(removing.id)}`);
            rules.reload();
          }}
        >
          <p>Grants already made against it stay as they are.</p>
        </ConfirmDialog>
      ) : null}
      {me.role === 'admin' ? <NewRule onCreated={rules.reload} /> : null}
      <RateLimits />
    </>
  );
}

function NewRule({ onCreated }: { onCreated: () => void }) {
  const policies = useResource<{ items: Policy[] }>('/api/v1/policies');
  const [name, setName] = useState('');
  const [policyName, setPolicyName] = useState('');
  const [days, setDays] = useState('7');
  const [approvers, setApprovers] = useState('');
  const [projectScope, setProjectScope] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    try {
      await post('/api/v1/exception-rules', {
        name: name.trim(),
        policyName,
        maxDurationSeconds: Math.round(Number(days) * 86_400),
        requiredApprovers: parseIdList(approvers),
        projectScope: projectScope.trim(),
      });
      setName('');
      setApprovers('');
      setProjectScope('');
      onCreated();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <form className="card form-grid" onSubmit={submit}>
      <h3>New exception rule</h3>
      <label className="field">
        <span>Name</span>
        <input required value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <label className="field">
        <span>Policy</span>
        <select required value={policyName} onChange={(e) => setPolicyName(e.target.value)}>
          <option value="">choose a policy</option>
          {(policies.data?.items ?? []).map((p) => (
            <option key={p.name} value={p.name}>
              {p.name}
            </option>
          ))}
        </select>
      </label>
      <label className="field">
        <span>Longest grant (days)</span>
        <input type="number" min="0.0007" max="90" step="any" required value={days} onChange={(e) => setDays(e.target.value)} />
      </label>
      <label className="field">
        <span>Required co-signers (identity ids)</span>
        <input value={approvers} placeholder="sec/bob" onChange={(e) => setApprovers(e.target.value)} />
      </label>
      <label className="field">
        <span>Project scope (empty: everywhere)</span>
        <input value={projectScope} placeholder="github.com/acme/repo-a" onChange={(e) => setProjectScope(e.target.value)} />
      </label>
      <ErrorNote message={error} />
      <div className="dialog-actions">
        <button type="submit" className="btn primary">
          Add rule
        </button>
      </div>
    </form>
  );
}
