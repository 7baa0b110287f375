/** Shared set-up of the runtime guard's Kubernetes tests: a cluster started on the fake API server, fast timings. */
import type { RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import { startRuntimeCluster, type RuntimeClusterOptions } from '../../../src/runtime-guard/kube/runtime-cluster.js';
import { kube, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, WAIT_MS, waitFor, type TestStore } from '../../helpers/harness.js';
import { mintSensorToken, startGuardReplica } from './helpers.js';

export interface StartedCluster {
  cluster: RuntimeCluster;
  errors: Error[];
}

/**
 * Timings short enough for tests; each test may override them. The Lease is not short: its duration also
 * bounds each Lease request (two thirds of it), and a busy machine must not turn a slow answer into a lost
 * leadership in tests about something else. Tests of expiry pass their own short Lease.
 */
export const FAST = {
  probeIntervalMs: 60_000,
  leaseDurationSeconds: 10,
  renewMs: 100,
  policyIntervalMs: 60_000,
  watchTimeoutSeconds: 30,
  watchGraceMs: 5_000,
  retryMinMs: 50,
  retryMaxMs: 200,
} as const;

export async function startCluster(api: FakeKubeApi, overrides: Partial<RuntimeClusterOptions> = {}): Promise<StartedCluster> {
  const errors: Error[] = [];
  const cluster = await startRuntimeCluster({
    environment: { kind: 'kubeconfig', kubeconfigPath: api.kubeconfigPath },
    selfService: 'reins/reins',
    metricsTargets: [],
    onError: (err) => errors.push(err),
    ...FAST,
    ...overrides,
  });
  return { cluster, errors };
}

/**
 * How long `until` waits by default. Generous on purpose: a wait that succeeds returns as soon as its
 * condition holds, so the limit costs nothing on a quiet machine, and a loaded one (two cores shared by
 * several test runs) may need tens of seconds for what takes milliseconds alone.
 */
export const UNTIL_MS = 30_000;

/** Polls until `check` holds; throws with `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean, timeoutMs = UNTIL_MS): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * A small cluster: Deployment eng/agent (ReplicaSet agent-7d4 → Deployment agent), CronJob eng/nightly
 * (Job nightly-1 → CronJob), the service's own Deployment reins/reins behind Service reins/reins, kube-dns,
 * the API server's Service and EndpointSlice, two nodes.
 */
export function seedCluster(api: FakeKubeApi): void {
  api.upsert('nodes', kube.node({ name: 'node-a', addresses: ['192.168.1.10'] }));
  api.upsert('nodes', kube.node({ name: 'node-b', addresses: ['192.168.1.11', '34.1.2.3'] }));
  api.upsert('services', kube.service({ namespace: 'default', name: 'kubernetes', clusterIP: '10.96.0.1' }));
  api.upsert('endpointslices', kube.endpointSlice({ namespace: 'default', service: 'kubernetes', name: 'kubernetes', endpoints: [{ address: '172.20.5.5' }] }));
  api.upsert('services', kube.service({ namespace: 'kube-system', name: 'kube-dns', clusterIP: '10.96.0.10', labels: { 'k8s-app': 'kube-dns' } }));
  api.upsert('replicasets', kube.replicaSet({ namespace: 'eng', name: 'agent-7d4', owner: { kind: 'Deployment', name: 'agent' } }));
  api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-7d4-aaaaa', ip: '10.244.1.1', owner: { kind: 'ReplicaSet', name: 'agent-7d4' } }));
  api.upsert('cronjobs', kube.cronJob({ namespace: 'eng', name: 'nightly' }));
  api.upsert('jobs', kube.job({ namespace: 'eng', name: 'nightly-1', owner: { kind: 'CronJob', name: 'nightly' } }));
  api.upsert('pods', kube.pod({ namespace: 'eng', name: 'nightly-1-bbbbb', ip: '10.244.1.2', owner: { kind: 'Job', name: 'nightly-1' } }));
  api.upsert('replicasets', kube.replicaSet({ namespace: 'reins', name: 'reins-5f6', owner: { kind: 'Deployment', name: 'reins' } }));
  api.upsert('pods', kube.pod({ namespace: 'reins', name: 'reins-5f6-ccccc', ip: '10.244.9.9', owner: { kind: 'ReplicaSet', name: 'reins-5f6' } }));
  api.upsert('services', kube.service({ namespace: 'reins', name: 'reins', clusterIP: '10.96.7.7' }));
  api.upsert('endpointslices', kube.endpointSlice({ namespace: 'reins', service: 'reins', endpoints: [{ address: '10.244.9.9', pod: 'reins-5f6-ccccc' }] }));
}

/**
 * A replica with the runtime guard on, its cluster side on this fake API server (fast timings), an admin client and
 * a sensor client; resolves once the cluster facts are usable (the network detector no longer stands down).
 */
export async function startGuardOnApi(store: TestStore, api: FakeKubeApi): Promise<{ replica: Replica; admin: Client; sensor: Client }> {
  const replica = await startGuardReplica(store, {
    env: { KUBECONFIG: api.kubeconfigPath },
    cluster: (input) => startRuntimeCluster({ ...input, ...FAST }),
  });
  const admin = new Client(replica.url, ADMIN_TOKEN);
  const sensor = new Client(replica.url, await mintSensorToken(admin));
  const ready = await waitFor(async () => (await admin.get('/api/v1/runtime/reconciliation')).body.networkDetectorDisabled === false, WAIT_MS, 50);
  if (ready < 0) throw new Error('the cluster facts never became usable');
  return { replica, admin, sensor };
}
