/**
 * Rate limits on the Rules screen: requests and tokens per minute for each identity a rule's scope covers, by model
 * glob and upstream (GET|POST /api/v1/rate-limits, DELETE /api/v1/rate-limits/{id}). Admins add and delete; viewers read.
 */
import { useState, type FormEvent } from 'react';
import { del, enc, messageOf, post } from '../../api';
import { ConfirmDialog } from '../../components/dialogs';
import { ActionButton, ErrorNote, Loading } from '../../components/ui';
import { useMe, VIEWER_CANNOT } from '../../session';
import type { RateLimit } from '../../types';
import { useResource } from '../../use-resource';

const perMinute = (n: number | undefined) => (n === undefined ? <span className="muted">no limit</span> : n.toLocaleString('en-US'));

export function RateLimits() {
  const me = useMe();
  const limits = useResource<{ items: RateLimit[] }>('/api/v1/rate-limits');
  const [removing, setRemoving] = useState<RateLimit | null>(null);
  return (
    <>
      <h2>Rate limits</h2>
      <p className="muted">
        Per identity in the scope, per UTC minute. A call over a limit is answered 429 with retry-after in its provider&rsquo;s shape; tokens count when
        the answer reports them.
      </p>
      <ErrorNote message={limits.error} />
      {limits.data ? (
        limits.data.items.length === 0 ? (
          <p className="empty">No rate limits.</p>
        ) : (
          <table className="table rate-limits">
            <thead>
              <tr>
                <th>Name</th>
                <th>Scope</th>
                <th>Models</th>
                <th>Upstream</th>
                <th>Requests / min</th>
                <th>Tokens / min</th>
                <th>Actions</th>
              </tr>
            </thead>
            <tbody>
              {limits.data.items.map((r) => (
                <tr key={r.id}>
                  <td>{r.name}</td>
                  <td>
                    <code>{r.scope}</code>
                  </td>
                  <td>
                    <code>{r.pattern}</code>
                  </td>
                  <td>{r.upstream === '*' ? <span className="muted">every upstream</span> : <code>{r.upstream}</code>}</td>
                  <td>{perMinute(r.requestsPerMinute)}</td>
                  <td>{perMinute(r.tokensPerMinute)}</td>
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
      ) : limits.loading ? (
        <Loading what="rate limits" />
      ) : null}
      {removing ? (
        <ConfirmDialog
          title={`Delete the rate limit ${removing.name}?`}
          confirmLabel="Delete"
          danger
          onClose={() => setRemoving(null)}
          onConfirm={async () => {
            await del(`/api/v1/rate-limits/${enc(removing.id)}`);
            limits.reload();
          }}
        >
          <p>Calls it limits are no longer counted against it.</p>
        </ConfirmDialog>
      ) : null}
      {me.role === 'admin' ? <NewRateLimit onCreated={limits.reload} /> : null}
    </>
  );
}

/** A count field: empty means no limit of that kind. */
function count(value: string): number | undefined {
  return value.trim() === '' ? undefined : Number(value);
}

function NewRateLimit({ onCreated }: { onCreated: () => void }) {
  const [label, setLabel] = useState('');
  const [scope, setScope] = useState('*');
  const [pattern, setPattern] = useState('*');
  const [upstream, setUpstream] = useState('*');
  const [requests, setRequests] = useState('');
  const [tokens, setTokens] = useState('');
  const [error, setError] = useState<string | null>(null);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const body: Record<string, unknown> = { name: label.trim(), scope: scope.trim(), pattern: pattern.trim(), upstream: upstream.trim() || '*' };
    if (count(requests) !== undefined) body.requestsPerMinute = count(requests);
    if (count(tokens) !== undefined) body.tokensPerMinute = count(tokens);
    try {
      await post('/api/v1/rate-limits', body);
      setLabel('');
      setRequests('');
      setTokens('');
      onCreated();
    } catch (err) {
      setError(messageOf(err));
    }
  };
  return (
    <form className="card form-grid" onSubmit={submit} aria-label="New rate limit">
      <h3>New rate limit</h3>
      <label className="field">
        <span>Rate limit</span>
        <input required value={label} placeholder="agents per minute" onChange={(e) => setLabel(e.target.value)} />
      </label>
      <label className="field">
        <span>Applies to (*, eng or eng/alice)</span>
        <input required value={scope} onChange={(e) => setScope(e.target.value)} />
      </label>
      <label className="field">
        <span>Model glob</span>
        <input required value={pattern} onChange={(e) => setPattern(e.target.value)} />
      </label>
      <label className="field">
        <span>Upstream (* for every one)</span>
        <input required value={upstream} onChange={(e) => setUpstream(e.target.value)} />
      </label>
      <label className="field">
        <span>Requests per minute</span>
        <input type="number" min="0" step="1" value={requests} onChange={(e) => setRequests(e.target.value)} />
      </label>
      <label className="field">
        <span>Tokens per minute</span>
        <input type="number" min="0" step="1" value={tokens} onChange={(e) => setTokens(e.target.value)} />
      </label>
      <ErrorNote message={error} />
      <div className="dialog-actions">
        <button type="submit" className="btn primary">
          Add rate limit
        </button>
      </div>
    </form>
  );
}
