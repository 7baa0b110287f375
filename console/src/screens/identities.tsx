/**
 * Identities with kind, role and tier badge. An agent's tier selector saves on change (PUT
 * /api/v1/identities/autonomy-tier) and the badge shows what the server answered; the blank option
 * clears the assignment, and the badge then shows the resolved T2 as the default.
 */
import { useEffect, useState } from 'react';
import { messageOf, put, query } from '../api';
import { ErrorNote, Loading, TIER_LABEL, TierBadge } from '../components/ui';
import { useMe, VIEWER_CANNOT } from '../session';
import type { Identity, Tier } from '../types';
import { useResource } from '../use-resource';

const TIERS: Tier[] = ['T1', 'T2', 'T3', 'T4'];

export function Identities() {
  const [kind, setKind] = useState<'' | 'agent' | 'developer'>('');
  const list = useResource<{ items: Identity[] }>(`/api/v1/identities${query({ kind })}`);
  return (
    <section>
      <h1>Identities</h1>
      <p className="muted">
        Agents carry an autonomy tier (T1 to T4) that policies read as <code>object.agent.autonomyTier</code>. An agent without an assignment resolves to T2.
        A change applies to later requests on every replica within about 30 seconds; past audit events keep the tier they were recorded with.
      </p>
      <div className="filters">
        <label className="field inline">
          <span>Kind</span>
          <select value={kind} onChange={(e) => setKind(e.target.value as typeof kind)}>
            <option value="">all</option>
            <option value="agent">agents</option>
            <option value="developer">developers</option>
          </select>
        </label>
      </div>
      <ErrorNote message={list.error} />
      {list.data ? <IdentityTable items={list.data.items} /> : list.loading ? <Loading what="identities" /> : null}
    </section>
  );
}

function IdentityTable({ items }: { items: Identity[] }) {
  if (items.length === 0) return <p className="empty">No identities.</p>;
  return (
    <table className="table">
      <thead>
        <tr>
          <th>Identity</th>
          <th>Kind</th>
          <th>Role</th>
          <th>Autonomy tier</th>
        </tr>
      </thead>
      <tbody>
        {items.map((i) => (
          <IdentityRow key={i.id} identity={i} />
        ))}
      </tbody>
    </table>
  );
}

function IdentityRow({ identity }: { identity: Identity }) {
  const me = useMe();
  const [row, setRow] = useState(identity);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  useEffect(() => setRow(identity), [identity]);

  const setTier = async (tier: Tier | '') => {
    setSaving(true);
    setError(null);
    try {
      const saved = await put<{ tier: Tier | ''; effectiveTier: Tier }>(`/api/v1/identities/autonomy-tier${query({ id: row.id })}`, { tier });
      setRow({ ...row, autonomyTier: saved.tier, effectiveTier: saved.effectiveTier });
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setSaving(false);
    }
  };

  return (
    <tr data-identity={row.id}>
      <td>
        <strong>{row.id}</strong>
        {row.displayName && row.displayName !== row.id ? <div className="muted">{row.displayName}</div> : null}
      </td>
      <td>{row.kind}</td>
      <td>{row.role ? <span className={`badge role-${row.role}`}>{row.role}</span> : <span className="muted">—</span>}</td>
      <td>
        {row.kind === 'agent' ? (
          <div className="tier-cell">
            <TierBadge tier={row.autonomyTier} effective={row.effectiveTier} />
            <select
              aria-label={`Autonomy tier of ${row.id}`}
              value={row.autonomyTier}
              disabled={me.role !== 'admin' || saving}
              title={me.role !== 'admin' ? VIEWER_CANNOT : 'Saved as soon as you choose'}
              onChange={(e) => void setTier(e.target.value as Tier | '')}
            >
              <option value="">— none (resolves to T2)</option>
              {TIERS.map((t) => (
                <option key={t} value={t}>
                  {t} {TIER_LABEL[t]}
                </option>
              ))}
            </select>
            {saving ? <span className="muted">saving…</span> : null}
            <ErrorNote message={error} />
          </div>
        ) : (
          <span className="muted">no tier (developer)</span>
        )}
      </td>
    </tr>
  );
}
