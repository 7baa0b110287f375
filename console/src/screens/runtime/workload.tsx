/**
 * One workload's raw observations (GET /api/v1/runtime/workloads/{key}/observations), grouped by
 * signal family under the spec's console headings.
 */
import { query } from '../../api';
import { ErrorNote, Loading, Notice } from '../../components/ui';
import { formatUnix } from '../../format';
import { Link, navigate, useLocation } from '../../router';
import type { ObservationFamily, ObservationGroup, Observations } from '../../types';
import { useResource } from '../../use-resource';
import { WindowPicker } from './runtime-guard';

export const FAMILIES: { family: ObservationFamily; heading: string; needsBpfLsm: boolean; feedsCount: boolean }[] = [
  { family: 'dns', heading: 'Names resolved (DNS)', needsBpfLsm: false, feedsCount: true },
  { family: 'network', heading: 'Destinations reached (network)', needsBpfLsm: false, feedsCount: true },
  { family: 'open', heading: 'Paths opened (file)', needsBpfLsm: true, feedsCount: false },
  { family: 'exec', heading: 'Binaries executed (exec)', needsBpfLsm: true, feedsCount: false },
  { family: 'other', heading: 'Other observations', needsBpfLsm: false, feedsCount: false },
];

export function WorkloadObservations({ workloadKey }: { workloadKey: string }) {
  const { search } = useLocation();
  const window = search.get('window') ?? '1h';
  const path = `/api/v1/runtime/workloads/${encodeURIComponent(workloadKey)}/observations${query({ window })}`;
  const obs = useResource<Observations>(path);
  const groups = new Map<ObservationFamily, ObservationGroup>((obs.data?.groups ?? []).map((g) => [g.family, g]));
  return (
    <section>
      <p>
        <Link to={`/runtime${query({ window })}`}>← Runtime guard</Link>
      </p>
      <h1>
        Workload <code>{workloadKey}</code>
      </h1>
      <div className="filters">
        <WindowPicker
          value={window}
          onChange={(w) => navigate(`/runtime/workloads/${encodeURIComponent(workloadKey)}${query({ window: w })}`, { replace: true })}
        />
      </div>
      <ErrorNote message={obs.error} />
      {!obs.data ? (
        obs.loading ? <Loading what="observations" /> : null
      ) : !obs.data.enabled ? (
        <Notice kind="warning">
          <p data-testid="runtime-disabled">The runtime guard is not active: {obs.data.reason || 'no reason was given'}.</p>
        </Notice>
      ) : (
        FAMILIES.map((f) => <FamilySection key={f.family} info={f} group={groups.get(f.family)} />)
      )}
    </section>
  );
}

function FamilySection({ info, group }: { info: (typeof FAMILIES)[number]; group: ObservationGroup | undefined }) {
  const items = group?.items ?? [];
  return (
    <div className="family" data-family={info.family}>
      <h2>{info.heading}</h2>
      <p className="hint">
        {info.feedsCount ? 'Feeds the bypassed-destinations count.' : 'Does not feed the bypassed-destinations count.'}
        {info.needsBpfLsm ? ' Needs nodes booted with BPF-LSM: without it this family stays empty, which is not evidence of absence.' : ''}
      </p>
      {group?.truncated ? (
        <p className="hint">
          Showing the newest {items.length} of {group.totalItems ?? 'more'} observations.
        </p>
      ) : null}
      {items.length === 0 ? (
        <p className="empty">No observations in this window.</p>
      ) : (
        <table className="table compact observations">
          <thead>
            <tr>
              <th>Last observed</th>
              <th>Rule</th>
              <th>Behavior</th>
              <th>Subject</th>
              <th>Destination</th>
              <th>Address</th>
              <th>Count</th>
              <th>Pod</th>
              <th>Node</th>
              <th>Result</th>
              <th>Mode</th>
            </tr>
          </thead>
          <tbody>
            {items.map((o, i) => (
              <tr key={i}>
                <td>{formatUnix(o.observedAt)}</td>
                <td>{o.rule}</td>
                <td>{o.behavior}</td>
                <td className="user-text">{o.subject}</td>
                <td>{o.destName}</td>
                <td>{o.destIP}</td>
                <td>{o.count}</td>
                <td>
                  {o.namespace}/{o.podName}
                </td>
                <td>{o.node}</td>
                <td>{o.result}</td>
                <td>{o.mode}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
