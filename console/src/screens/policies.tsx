/** Policies in evaluation order, the built-in Autonomy Governance policies first. */
import { ErrorNote, Loading } from '../components/ui';
import { formatDuration } from '../format';
import type { Policy } from '../types';
import { useResource } from '../use-resource';

export function Policies() {
  const list = useResource<{ items: Policy[] }>('/api/v1/policies');
  return (
    <section>
      <h1>Policies</h1>
      <p className="muted">
        Evaluated in this order on every LLM request, MCP tool call and egress connection. Policies read the agent’s tier as{' '}
        <code>object.agent.autonomyTier</code> and <code>object.agent.autonomyLevel</code>.
      </p>
      <ErrorNote message={list.error} />
      {!list.data ? (
        list.loading ? <Loading what="policies" /> : null
      ) : (
        <table className="table policies">
          <thead>
            <tr>
              <th>Name</th>
              <th>Kind</th>
              <th>Applies to</th>
              <th>Match (CEL)</th>
              <th>Message</th>
              <th>Approval window</th>
              <th>State</th>
            </tr>
          </thead>
          <tbody>
            {list.data.items.map((p) => (
              <tr key={p.name} data-policy={p.name}>
                <td>
                  <strong>{p.name}</strong> {p.builtIn ? <span className="badge built-in">built-in</span> : null}
                </td>
                <td>
                  <span className={`badge kind-${p.kind}`}>{p.kind}</span>
                </td>
                <td>{p.appliesTo.join(', ')}</td>
                <td>
                  <code className="cel">{p.match}</code>
                </td>
                <td>
                  <p className="user-text">{p.message}</p>
                </td>
                <td>{p.kind === 'approve' ? (p.approvalWindowSeconds ? formatDuration(p.approvalWindowSeconds) : 'default') : ''}</td>
                <td>{p.enabled ? 'enabled' : <span className="muted">disabled</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
