/**
 * Runtime guard: the capability snapshot (GET /api/v1/runtime/status) and the reconciliation by
 * workload (GET /api/v1/runtime/reconciliation?window=). Read-only. Disabled (`enabled: false`)
 * shows the server's reason as the page's message.
 */
import { Fragment, useMemo, useState } from 'react';
import { query } from '../../api';
import { CapabilityBadge, ErrorNote, Loading, Notice } from '../../components/ui';
import { formatUnix } from '../../format';
import { Link, navigate, useLocation } from '../../router';
import type { Destination, Reconciliation, ReconciliationRow, RuntimeStatus } from '../../types';
import { useResource } from '../../use-resource';
import { Capability, DetectorStoodDown, Headline, IngestLagPanel, ProbedAt } from './honesty';

export const WINDOWS = ['5m', '15m', '1h', '6h', '24h'];

/** Rows per page of the reconciliation table (20,000 workloads stay usable). */
export const PAGE_SIZE = 100;
/** Above this many rows "with findings only" starts on. */
export const FINDINGS_ONLY_ABOVE = 50;

/** The seconds a picker value asks for ('' when the server would not parse it as a duration). */
function requestedSeconds(window: string): number | null {
  const m = /^(\d+)(s|m|h|d)$/.exec(window);
  if (!m) return null;
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[m[2] as 's' | 'm' | 'h' | 'd'];
}

function formatSeconds(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** The window the server used, and whether it differs from what was asked (clamped, or not understood). */
export function WindowUsed({ requested, startUnix, endUnix }: { requested: string; startUnix: number; endUnix: number }) {
  const used = endUnix - startUnix;
  const asked = requestedSeconds(requested);
  return (
    <p className="muted window-used" data-testid="window-used">
      Window used: {formatUnix(startUnix)} to {formatUnix(endUnix)} ({formatSeconds(used)})
      {asked === null ? `; "${requested}" was not understood, so the default was used.` : asked !== used ? `; clamped from ${formatSeconds(asked)} to the 5 min … 24 h range.` : '.'}
    </p>
  );
}

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
      {data.windowStartUnix && data.windowEndUnix ? <WindowUsed requested={window} startUnix={data.windowStartUnix} endUnix={data.windowEndUnix} /> : null}
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
        <RowsTable rows={data.rows} detectorDown={down} window={window} />
      )}
      <IngestLagPanel lag={data.ingestLag} />
    </div>
  );
}

/** A row with a finding: an unsuppressed destination (a counted provider, or IMDS). */
export function hasFinding(row: ReconciliationRow): boolean {
  return row.destinations.some((d) => !d.suppressed);
}

/** Search by namespace/name, "with findings only" (on by default above 50 rows), and pages of PAGE_SIZE rows. */
function RowsTable({ rows, detectorDown, window }: { rows: ReconciliationRow[]; detectorDown: boolean; window: string }) {
  const [text, setText] = useState('');
  const [findingsOnly, setFindingsOnly] = useState(rows.length > FINDINGS_ONLY_ABOVE);
  const [page, setPage] = useState(0);
  const shown = useMemo(() => {
    const needle = text.trim().toLowerCase();
    return rows.filter((r) => (!findingsOnly || hasFinding(r)) && (needle === '' || `${r.namespace}/${r.name}`.toLowerCase().includes(needle) || r.workloadKey.toLowerCase().includes(needle)));
  }, [rows, text, findingsOnly]);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const slice = shown.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  return (
    <>
      <div className="table-tools" data-testid="reconciliation-tools">
        <label className="field inline">
          <span>Search</span>
          <input
            type="search"
            name="workload-search"
            placeholder="namespace/name"
            value={text}
            onChange={(e) => {
              setText(e.target.value);
              setPage(0);
            }}
          />
        </label>
        <label className="field inline checkbox">
          <input
            type="checkbox"
            name="findings-only"
            checked={findingsOnly}
            onChange={(e) => {
              setFindingsOnly(e.target.checked);
              setPage(0);
            }}
          />
          <span>With findings only</span>
        </label>
        <span className="muted" data-testid="rows-shown">
          {shown.length} of {rows.length} workloads
        </span>
      </div>
      {slice.length === 0 ? (
        <p className="empty">No workload matches.</p>
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
            {slice.map((row) => (
              <WorkloadRow key={row.workloadKey} row={row} detectorDown={detectorDown} window={window} />
            ))}
          </tbody>
        </table>
      )}
      {pages > 1 ? (
        <div className="pager" data-testid="pager">
          <button type="button" className="btn plain small" disabled={current === 0} onClick={() => setPage(current - 1)}>
            Previous
          </button>
          <span>
            Page {current + 1} of {pages}
          </span>
          <button type="button" className="btn plain small" disabled={current >= pages - 1} onClick={() => setPage(current + 1)}>
            Next
          </button>
        </div>
      ) : null}
    </>
  );
}

/**
 * One evidence summary per row, computed the way the spec defines dnsOnly: over the unsuppressed destinations
 * (counted providers and IMDS). IMDS connections are IMDS evidence, never "no evidence".
 */
export function evidenceOf(row: ReconciliationRow): string {
  const unsuppressed = row.destinations.filter((d) => !d.suppressed);
  if (unsuppressed.length === 0) return row.destinations.length > 0 ? 'suppressed evidence only' : 'no evidence';
  if (row.dnsOnly) return 'DNS resolutions only';
  const imds = unsuppressed.some((d) => d.kind === 'imds' && d.source === 'network');
  const provider = unsuppressed.some((d) => d.kind !== 'imds' && d.source === 'network');
  if (imds && !provider) return 'IMDS connections';
  return imds ? 'connection-backed (with IMDS)' : 'connection-backed';
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
          {row.attributionNote === 'pod-level (multi-container)' ? (
            <p className="sidecar-note">
              {row.attributionNote}: a mesh or telemetry sidecar was detected, so its egress cannot be separated from the application’s.
            </p>
          ) : row.attributionNote ? (
            <p className="sidecar-note">{row.attributionNote}: the pod was gone from the cluster, its owner was inferred from Kubernetes' pod naming.</p>
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
