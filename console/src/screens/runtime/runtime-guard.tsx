/**
 * Runtime guard: the capability snapshot (GET /api/v1/runtime/status) and the reconciliation by
 * workload (GET /api/v1/runtime/reconciliation?window=). Read-only. Disabled (`enabled: false`)
 * shows the server's reason as the page's message.
 */
import { Fragment, useState } from 'react';
import { query } from '../../api';
import { CapabilityBadge, ErrorNote, Loading, Notice } from '../../components/ui';
import { formatUnix } from '../../format';
import { Link, navigate, useLocation } from '../../router';
import type { Destination, Reconciliation, ReconciliationRow, RuntimeStatus } from '../../types';
import { useResource } from '../../use-resource';
import { Capability, DetectorStoodDown, Headline, IngestLagPanel, ProbedAt } from './honesty';

export const WINDOWS = ['5m', '15m', '1h', '6h', '24h'];

export function WindowPicker({ value, onChange }: { value: string; onChange: (w: string) => void }) {
  return (
    <label className="field inline">
      <span>Window</span>
      <select name="window" value={WINDOWS.includes(value) ? value : '1h'} onChange={(e) => onChange(e.target.value)}>
        {WINDOWS.map((w) => (
          <option key={w} value={w}>
            last {w}
          </option>
        ))}
      </select>
    </label>
  );
}

export function RuntimeGuard() {
  const { search } = useLocation();
  const window = search.get('window') ?? '1h';
  const status = useResource<RuntimeStatus>('/api/v1/runtime/status');
  const recon = useResource<Reconciliation>(`/api/v1/runtime/reconciliation${query({ window })}`);
  const disabled = status.data && !status.data.enabled ? status.data : recon.data && !recon.data.enabled ? recon.data : null;

  return (
    <section>
      <h1>Runtime guard</h1>
      <ErrorNote message={status.error ?? recon.error} />
      {disabled ? (
        <Notice kind="warning">
          <p className="disabled-page-reason" data-testid="runtime-disabled">
            The runtime guard is not active: {disabled.reason || 'no reason was given'}.
          </p>
        </Notice>
      ) : (
        <>
          {status.data ? <StatusPanel status={status.data} /> : status.loading ? <Loading what="the runtime status" /> : null}
          <div className="section-head">
            <h2>Reconciliation by workload</h2>
            <WindowPicker value={window} onChange={(w) => navigate(`/runtime${query({ window: w })}`, { replace: true })} />
          </div>
          {recon.data ? <ReconciliationView data={recon.data} window={window} /> : recon.loading ? <Loading what="the reconciliation" /> : null}
        </>
      )}
    </section>
  );
}

function StatusPanel({ status }: { status: RuntimeStatus }) {
  return (
    <div className="card status-panel" data-testid="runtime-status">
      <h2>Status</h2>
      <div className="capabilities">
        <Capability name="RuntimePolicy CRD" state={status.crd} reason={status.crdReason} />
        <Capability name="BPF-LSM (fleet)" state={status.bpfLsm} reason={status.bpfLsmReason} />
      </div>
      <p>
        Capability probe last ran: <ProbedAt unix={status.probedAtUnix} />
      </p>
      <h3>Nodes</h3>
      {status.nodes.length === 0 ? (
        <p className="unknown-text">No node has reported a status: sensor presence and BPF-LSM are unknown on every node.</p>
      ) : (
        <table className="table compact nodes">
          <thead>
            <tr>
              <th>Node</th>
              <th>Sensor</th>
              <th>BPF-LSM</th>
              <th>Reason</th>
            </tr>
          </thead>
          <tbody>
            {status.nodes.map((n) => (
              <tr key={n.node}>
                <td>{n.node}</td>
                <td>{n.sensorAlive ? <span className="badge capability-available">alive</span> : <span className="badge capability-unknown">not reporting</span>}</td>
                <td>
                  <CapabilityBadge state={n.bpfLsm} />
                </td>
                <td>{n.reason}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Permissions the service account lacks</h3>
      {status.rbacGaps.length === 0 ? (
        <p className="muted">None found by the start-up access review.</p>
      ) : (
        <table className="table compact rbac">
          <thead>
            <tr>
              <th>API group</th>
              <th>Resource</th>
              <th>Verb</th>
              <th>Namespace</th>
            </tr>
          </thead>
          <tbody>
            {status.rbacGaps.map((g) => (
              <tr key={`${g.group}/${g.resource}/${g.verb}/${g.namespace}`}>
                <td>{g.group || 'core'}</td>
                <td>{g.resource}</td>
                <td>{g.verb}</td>
                <td>{g.namespace || 'all'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h3>Ingest</h3>
      <IngestLagPanel lag={status.ingestLag} />
    </div>
  );
}

function ReconciliationView({ data, window }: { data: Reconciliation; window: string }) {
  const down = Boolean(data.networkDetectorDisabled);
  const withBypass = data.rows.filter((r) => r.bypassedDestinations > 0).length;
  return (
    <div data-testid="reconciliation">
      {data.windowStartUnix && data.windowEndUnix ? (
        <p className="muted">
          Window used: {formatUnix(data.windowStartUnix)} to {formatUnix(data.windowEndUnix)} (clamped to 5 minutes … 24 hours).
        </p>
      ) : null}
      {down ? <DetectorStoodDown reason={data.disabledReason} /> : null}
      <p className="summary">
        Workloads that reached AI providers outside governance: <Headline count={withBypass} detectorDown={down} /> of {data.rows.length}.
      </p>
      <p className="hint populations">
        <strong>m</strong> counts kernel events (connections and resolutions) to unsuppressed external provider destinations; <strong>n</strong>{' '}
        counts gateway-recorded calls joined to the workload. They are different populations and are not comparable: m − n is not a quantity.
      </p>
      {data.rows.length === 0 ? (
        <p className="empty">No workloads in this window. The sensor observes IPv4 only: an empty result speaks only for IPv4.</p>
      ) : (
        <table className="table reconciliation">
          <thead>
            <tr>
              <th>Workload</th>
              <th>Bypassed destinations</th>
              <th title="Kernel events: connections and resolutions">m (kernel events)</th>
              <th title="Gateway-recorded calls, every audited request type">n (gateway calls)</th>
              <th>Evidence</th>
              <th>Attribution</th>
              <th>Destinations</th>
            </tr>
          </thead>
          <tbody>
            {data.rows.map((row) => (
              <WorkloadRow key={row.workloadKey} row={row} detectorDown={down} window={window} />
            ))}
          </tbody>
        </table>
      )}
      <IngestLagPanel lag={data.ingestLag} />
    </div>
  );
}

function evidenceOf(row: ReconciliationRow): string {
  if (row.dnsOnly) return 'DNS resolutions only';
  if (row.m > 0) return 'connection-backed';
  return 'no evidence';
}

function WorkloadRow({ row, detectorDown, window }: { row: ReconciliationRow; detectorDown: boolean; window: string }) {
  const [open, setOpen] = useState(false);
  const suppressed = row.destinations.filter((d) => d.suppressed).length;
  return (
    <Fragment>
      <tr data-workload={row.workloadKey}>
        <td>
          <Link to={`/runtime/workloads/${encodeURIComponent(row.workloadKey)}${query({ window })}`}>{row.workloadKey}</Link>
        </td>
        <td>
          <Headline count={row.bypassedDestinations} detectorDown={detectorDown} />
        </td>
        <td className="population-m">{row.m}</td>
        <td className="population-n">{row.n}</td>
        <td>{evidenceOf(row)}</td>
        <td>
          {row.attributionConfirmed ? (
            <span className="muted" title="Joined by name: a heuristic join, never a cryptographic binding">
              workload ({row.joinMethod})
            </span>
          ) : (
            <span className="badge capability-unknown" title="The pod could not be resolved to an owning workload; attribution fell back to pod level. The full count is kept.">
              attribution unconfirmed
            </span>
          )}
          {row.attributionNote ? (
            <p className="sidecar-note">
              {row.attributionNote}: a mesh or telemetry sidecar was detected, so its egress cannot be separated from the application’s.
            </p>
          ) : null}
        </td>
        <td>
          {row.destinations.length === 0 ? (
            <span className="muted">none</span>
          ) : (
            <button type="button" className="btn plain small" aria-expanded={open} onClick={() => setOpen(!open)}>
              {open ? 'Hide' : 'Show'} {row.destinations.length} {row.destinations.length === 1 ? 'destination' : 'destinations'}
              {suppressed ? ` (${suppressed} suppressed)` : ''}
            </button>
          )}
        </td>
      </tr>
      {open ? (
        <tr className="detail-row">
          <td colSpan={7}>
            <DestinationTable destinations={row.destinations} />
          </td>
        </tr>
      ) : null}
    </Fragment>
  );
}

export function DestinationTable({ destinations }: { destinations: Destination[] }) {
  return (
    <>
      <table className="table compact destinations">
        <thead>
          <tr>
            <th>Destination</th>
            <th>Address</th>
            <th>Source</th>
            <th>Behaviors</th>
            <th>Count</th>
            <th title="Gateway-recorded egress calls to the same host">Governed calls</th>
            <th>Identity rung</th>
            <th>Kind</th>
            <th>Counted</th>
          </tr>
        </thead>
        <tbody>
          {destinations.map((d, i) => (
            <tr key={`${d.destName}-${d.destIP}-${i}`} className={d.suppressed ? 'suppressed' : ''}>
              <td>{d.destName}</td>
              <td>{d.destIP || <span className="muted">none (no connection)</span>}</td>
              <td>{d.source}</td>
              <td>{d.behaviors.join(', ')}</td>
              <td>
                {d.count} {d.source === 'network' ? (d.count === 1 ? 'connection' : 'connections') : d.count === 1 ? 'resolution' : 'resolutions'}
              </td>
              <td>
                {d.governedCalls}
                {!d.suppressed && d.governedCalls > 0 ? <span className="badge capability-unknown"> split traffic</span> : null}
              </td>
              <td>
                {d.rung} ({d.confidence})
              </td>
              <td>{d.kind}</td>
              <td>{d.suppressed ? <span className="suppress-reason">suppressed: {d.suppressReason}</span> : d.kind === 'provider' ? 'counted' : 'not a provider'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="hint">
        Governed calls come from egress audit events only. Where the egress plane is not enabled they are 0 on every destination, which is not
        evidence of unsplit traffic. Suppressed destinations stay listed but are not counted.
      </p>
    </>
  );
}
