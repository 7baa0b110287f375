/**
 * Node status from the sensors (`POST /api/v1/runtime/sensor/status`, about every 30 s) and the fleet's BPF-LSM
 * answer built from it (spec "Capability state"). `unknown` is neither clean nor absent: a stale status, an idle
 * node (no positive evidence source) and a node without a sensor all read as unknown, never as available.
 */
import type { CapabilityState } from './cluster.js';
import type { Queryable } from '../store/db.js';

/** Four missed 30-second flushes (spec Limits): an older status says nothing about the node any more. */
export const NODE_STATUS_MAX_AGE_SECONDS = 120;

/** What a sensor sends. */
export interface NodeStatusReport {
  node: string;
  sensorAlive: boolean;
  bpfLsm: CapabilityState;
  reason: string;
}

export interface StoredNodeStatus extends NodeStatusReport {
  reportedAtUnix: number;
}

/** An item of the status payload's `nodes[]`. */
export interface NodeView {
  node: string;
  sensorAlive: boolean;
  bpfLsm: CapabilityState;
  reason: string;
}

export interface FleetBpfLsm {
  bpfLsm: CapabilityState;
  bpfLsmReason: string;
}

/** One node as the status payload shows it; `status` undefined when the node never reported. */
export function nodeView(node: string, status: StoredNodeStatus | undefined, nowUnix: number): NodeView {
  if (!status) return { node, sensorAlive: false, bpfLsm: 'unknown', reason: 'no sensor status received from this node' };
  const age = Math.max(0, Math.floor(nowUnix - status.reportedAtUnix));
  if (age > NODE_STATUS_MAX_AGE_SECONDS) {
    return {
      node,
      sensorAlive: false,
      bpfLsm: 'unknown',
      reason: `sensor status is stale: last report ${age} s ago, older than ${NODE_STATUS_MAX_AGE_SECONDS} s reads as unknown`,
    };
  }
  if (!status.sensorAlive) {
    // A sensor that is not running is no evidence source, whatever it last said about the kernel.
    return { node, sensorAlive: false, bpfLsm: 'unknown', reason: status.reason !== '' ? `the sensor is not running: ${status.reason}` : 'the sensor is not running' };
  }
  if (status.bpfLsm === 'unknown') {
    return {
      node,
      sensorAlive: true,
      bpfLsm: 'unknown',
      reason: status.reason !== '' ? status.reason : 'no positive BPF-LSM evidence source on this node (idle)',
    };
  }
  return { node, sensorAlive: true, bpfLsm: status.bpfLsm, reason: status.reason };
}

/**
 * The nodes to list: every node the cluster facts know (a node without a sensor is unknown, not absent) and every
 * stored status, except a stale status of a node the complete facts no longer list (a node that is gone).
 * Without complete facts every stored status is listed, stale ones as unknown.
 */
export function nodeViews(statuses: readonly StoredNodeStatus[], clusterNodes: readonly string[] | null, nowUnix: number): NodeView[] {
  const byNode = new Map(statuses.map((s) => [s.node, s]));
  const names = new Set<string>(clusterNodes ?? []);
  for (const s of statuses) {
    const fresh = nowUnix - s.reportedAtUnix <= NODE_STATUS_MAX_AGE_SECONDS;
    if (clusterNodes === null || fresh || names.has(s.node)) names.add(s.node);
  }
  return [...names].sort().map((node) => nodeView(node, byNode.get(node), nowUnix));
}

function list(nodes: readonly NodeView[]): string {
  const names = nodes.map((n) => n.node);
  return names.length <= 10 ? names.join(', ') : `${names.slice(0, 10).join(', ')} and ${names.length - 10} more`;
}

/**
 * The policy-level answer across the fleet: `unavailable` when a fresh, running sensor positively reports it
 * (the `open` and `exec` families cannot be observed there, whatever the other nodes say); `available` only when
 * every listed node positively reports available; `unknown` otherwise (no nodes, stale, idle, no sensor).
 */
export function fleetBpfLsm(nodes: readonly NodeView[]): FleetBpfLsm {
  if (nodes.length === 0) return { bpfLsm: 'unknown', bpfLsmReason: 'no node has reported a sensor status' };
  const unavailable = nodes.filter((n) => n.bpfLsm === 'unavailable');
  if (unavailable.length > 0) {
    return {
      bpfLsm: 'unavailable',
      bpfLsmReason: `BPF-LSM is unavailable on ${unavailable.length === 1 ? 'node' : 'nodes'} ${list(unavailable)}: file (open) and exec observations cannot be made there`,
    };
  }
  const unknown = nodes.filter((n) => n.bpfLsm !== 'available');
  if (unknown.length === 0) {
    return { bpfLsm: 'available', bpfLsmReason: `every node (${nodes.length}) positively reports BPF-LSM available` };
  }
  return {
    bpfLsm: 'unknown',
    bpfLsmReason: `no positive BPF-LSM evidence from ${unknown.length === 1 ? 'node' : 'nodes'} ${list(unknown)} (stale, idle or without a sensor): see each node's reason`,
  };
}

// ---- Store ----

export async function upsertNodeStatus(q: Queryable, status: NodeStatusReport, nowUnix: number): Promise<void> {
  await q.query(
    `INSERT INTO runtime_node_status (node, sensor_alive, bpf_lsm, reason, reported_at_unix) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (node) DO UPDATE SET sensor_alive = excluded.sensor_alive, bpf_lsm = excluded.bpf_lsm, reason = excluded.reason,
       reported_at_unix = excluded.reported_at_unix`,
    [status.node, status.sensorAlive, status.bpfLsm, status.reason, Math.floor(nowUnix)],
  );
}

export async function readNodeStatuses(q: Queryable): Promise<StoredNodeStatus[]> {
  const r = await q.query<{ node: string; sensor_alive: boolean; bpf_lsm: CapabilityState; reason: string; reported_at_unix: string }>(
    'SELECT node, sensor_alive, bpf_lsm, reason, reported_at_unix FROM runtime_node_status',
  );
  return r.rows.map((row) => ({
    node: row.node,
    sensorAlive: row.sensor_alive,
    bpfLsm: row.bpf_lsm,
    reason: row.reason,
    reportedAtUnix: Number(row.reported_at_unix),
  }));
}

/** Statuses of nodes silent for longer than `maxAgeSeconds` (gone nodes) are forgotten by the retention sweep. */
export async function deleteNodeStatusesBefore(q: Queryable, cutoffUnix: number): Promise<number> {
  const r = await q.query<{ node: string }>('DELETE FROM runtime_node_status WHERE reported_at_unix < $1 RETURNING node', [Math.floor(cutoffUnix)]);
  return r.rows.length;
}
