/** A small cluster for the reconciliation tests, and builders for observations and calls. */
import { reconcile } from '../../../src/runtime-guard/reconciliation.js';
import type {
  ClusterFacts,
  Destination,
  GovernedCall,
  Observation,
  PodFact,
  ReconcileInput,
  ReconciliationResult,
  ReconciliationRow,
} from '../../../src/runtime-guard/types.js';

export const NOW = 1_800_000_000;
export const WINDOW = { windowStartUnix: NOW - 3600, windowEndUnix: NOW };
export const T = NOW - 600;

export const IP = {
  kubeDns: '10.96.0.10',
  apiServerClusterIP: '10.96.0.1',
  apiServerEndpoint: '172.20.5.5',
  reinsClusterIP: '10.96.7.7',
  reinsPod: '10.244.9.9',
  istiodClusterIP: '10.96.3.3',
  ordersClusterIP: '10.96.4.4',
  ordersPod: '10.244.4.4',
  node: '192.168.1.10',
  openai: '162.159.140.245',
  anthropic: '160.79.104.10',
  github: '140.82.112.3',
  npm: '104.16.0.35',
  unknown: '203.0.113.50',
} as const;

function pod(namespace: string, name: string, ip: string, owner?: { kind: string; name: string }, containers = ['app']): PodFact {
  return {
    namespace,
    name,
    ip,
    node: 'node-a',
    containers: containers.map((c) => ({ name: c, image: `example/${c}:1` })),
    ownerReferences: owner ? [{ ...owner, controller: true }] : [],
  };
}

/** Deployment `eng/agent` (two replicas), StatefulSet `eng/db`, the service's own Deployment `reins/reins`. */
export function makeFacts(overrides: Partial<ClusterFacts> = {}): ClusterFacts {
  return {
    fetchedAtUnix: NOW - 10,
    complete: true,
    pods: [
      pod('eng', 'agent-7d9f-a', '10.244.1.1', { kind: 'ReplicaSet', name: 'agent-7d9f' }),
      pod('eng', 'agent-7d9f-b', '10.244.1.2', { kind: 'ReplicaSet', name: 'agent-7d9f' }),
      pod('eng', 'db-0', '10.244.1.3', { kind: 'StatefulSet', name: 'db' }),
      pod('eng', 'meshy-5c-a', '10.244.1.4', { kind: 'ReplicaSet', name: 'meshy-5c' }, ['app', 'istio-proxy']),
      pod('eng', 'scratch', '10.244.1.5'),
      pod('shop', 'orders-1', IP.ordersPod, { kind: 'ReplicaSet', name: 'orders-6b' }),
      pod('reins', 'reins-5f-new', IP.reinsPod, { kind: 'ReplicaSet', name: 'reins-5f' }),
    ],
    replicaSets: [
      { namespace: 'eng', name: 'agent-7d9f', ownerReferences: [{ kind: 'Deployment', name: 'agent', controller: true }] },
      { namespace: 'eng', name: 'meshy-5c', ownerReferences: [{ kind: 'Deployment', name: 'meshy', controller: true }] },
      { namespace: 'shop', name: 'orders-6b', ownerReferences: [{ kind: 'Deployment', name: 'orders', controller: true }] },
      { namespace: 'reins', name: 'reins-5f', ownerReferences: [{ kind: 'Deployment', name: 'reins', controller: true }] },
    ],
    jobs: [],
    services: [
      { namespace: 'kube-system', name: 'kube-dns', clusterIPs: [IP.kubeDns] },
      { namespace: 'default', name: 'kubernetes', clusterIPs: [IP.apiServerClusterIP] },
      { namespace: 'reins', name: 'reins', clusterIPs: [IP.reinsClusterIP] },
      { namespace: 'istio-system', name: 'istiod', clusterIPs: [IP.istiodClusterIP] },
      { namespace: 'shop', name: 'orders', clusterIPs: [IP.ordersClusterIP] },
    ],
    endpointSlices: [
      { namespace: 'default', serviceName: 'kubernetes', endpoints: [{ addresses: [IP.apiServerEndpoint] }] },
      {
        namespace: 'reins',
        serviceName: 'reins',
        endpoints: [{ addresses: [IP.reinsPod], targetRef: { kind: 'Pod', name: 'reins-5f-new', namespace: 'reins' } }],
      },
    ],
    nodes: [{ name: 'node-a', addresses: [IP.node] }],
    apiServerAddresses: [],
    clusterDnsAddresses: [],
    selfService: { namespace: 'reins', name: 'reins' },
    // The previous pod of the service, gone from the cluster since.
    selfPods: [{ namespace: 'reins', name: 'reins-4a-old', ip: '10.244.9.1' }],
    ...overrides,
  };
}

export function dns(podName: string, destName: string, destIP = '', extra: Partial<Observation> = {}): Observation {
  return observation({ family: 'dns', behavior: 'dns-query', podName, destName, destIP, ...extra });
}

export function conn(podName: string, destIP: string, extra: Partial<Observation> = {}): Observation {
  return observation({ family: 'network', behavior: 'tcp-connect', podName, destIP, ...extra });
}

export function observation(fields: Partial<Observation>): Observation {
  return {
    rule: 'reins-monitor',
    behavior: 'tcp-connect',
    subject: '/usr/bin/python3',
    destIP: '',
    destName: '',
    count: 1,
    node: 'node-a',
    podName: 'agent-7d9f-a',
    podIP: '',
    namespace: 'eng',
    result: 'allowed',
    mode: 'monitor',
    observedAt: T,
    family: 'network',
    ...fields,
  };
}

export function call(type: GovernedCall['type'], identityId: string, host?: string, atUnix = T): GovernedCall {
  return host === undefined ? { type, identityId, atUnix } : { type, identityId, host, atUnix };
}

export function run(observations: Observation[], extra: Partial<ReconcileInput> = {}): ReconciliationResult {
  return reconcile({
    observations,
    facts: makeFacts(),
    governedCalls: [],
    window: WINDOW,
    egressPlaneEnabled: true,
    nowUnix: NOW,
    ...extra,
  });
}

export function rowOf(result: ReconciliationResult, workloadKey: string): ReconciliationRow {
  const row = result.rows.find((r) => r.workloadKey === workloadKey);
  if (!row) throw new Error(`no row ${workloadKey}; rows: ${result.rows.map((r) => r.workloadKey).join(', ')}`);
  return row;
}

export function destOf(row: ReconciliationRow, destName: string, suppressed?: boolean): Destination {
  const found = row.destinations.find((d) => d.destName === destName && (suppressed === undefined || d.suppressed === suppressed));
  if (!found) throw new Error(`no destination ${destName}; have: ${row.destinations.map((d) => d.destName).join(', ')}`);
  return found;
}

export const AGENT = 'eng/Deployment/agent';
