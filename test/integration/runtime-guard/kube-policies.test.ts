/**
 * The RuntimePolicy controller through the real client: the leader keeps exactly the four observation
 * policies; followers and a cluster without the CRD write nothing.
 */
import { test, describe, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import { kube, startFakeKubeApi, type FakeKubeApi, type KubeObject } from '../../fakes/fake-kube-api.js';
import { seedCluster, startCluster, until } from './kube-helpers.js';

const POLICIES_PATH = '/apis/runtime.reins.dev/v1/runtimepolicies';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fakeApi(crdServed: boolean): Promise<FakeKubeApi> {
  const api = await startFakeKubeApi({ crdServed });
  seedCluster(api);
  cleanups.push(() => api.close());
  return api;
}

async function started(api: FakeKubeApi, overrides: Parameters<typeof startCluster>[1] = {}) {
  const s = await startCluster(api, { policyIntervalMs: 50, ...overrides });
  cleanups.push(() => s.cluster.stop());
  return s;
}

const names = (api: FakeKubeApi): string[] => api.list('runtimepolicies').map((p) => p.metadata.name!).sort();
const spec = (api: FakeKubeApi, name: string): Record<string, unknown> => api.get('runtimepolicies', '', name)!.spec as Record<string, unknown>;
const writes = (api: FakeKubeApi) => api.requests.filter((r) => r.path.startsWith(POLICIES_PATH) && r.method !== 'GET');
const FOUR = ['reins-observe-dns', 'reins-observe-exec', 'reins-observe-network', 'reins-observe-open'];

function policy(name: string, labels: Record<string, string>, extra: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'runtime.reins.dev/v1',
    kind: 'RuntimePolicy',
    metadata: { name, labels },
    spec: { mode: 'enforce', family: 'exec', requiresBpfLsm: true, namespaceSelector: {}, match: [{ paths: ['/usr/bin/curl'] }], ...extra },
  };
}

async function leaderWithPolicies(api: FakeKubeApi): Promise<RuntimeCluster> {
  const { cluster } = await started(api);
  await until('the four policies', () => names(api).length === 4);
  return cluster;
}

describe('RuntimePolicy controller', () => {
  test('the leader creates exactly the four observation policies', async () => {
    const api = await fakeApi(true);
    const cluster = await leaderWithPolicies(api);
    assert.equal(cluster.isLeader(), true);
    assert.deepEqual(names(api), FOUR);
    for (const p of api.list('runtimepolicies')) {
      const s = p.spec as { mode: string; family: string; namespaceSelector: unknown; match: unknown[]; allow?: unknown; requiresBpfLsm: boolean };
      assert.equal(p.metadata.labels?.['app.kubernetes.io/managed-by'], 'reins');
      assert.equal(s.mode, 'monitor');
      assert.deepEqual(s.namespaceSelector, { excludeNamespaces: ['kube-system', 'kube-public'] });
      assert.equal(s.requiresBpfLsm, s.family === 'open' || s.family === 'exec');
    }
    const network = spec(api, 'reins-observe-network');
    assert.deepEqual(network.match, [{ cidrs: ['0.0.0.0/0'] }]);
    assert.equal('allow' in network, false, 'no allow list: in-cluster traffic is reported too');
    // Rounds that find nothing to do write nothing.
    const settled = writes(api).length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(writes(api).length, settled);
  });

  test('drift is repaired: a changed spec replaced, a deleted policy recreated, a stale one of ours deleted', async () => {
    const api = await fakeApi(true);
    await leaderWithPolicies(api);
    const current = api.get('runtimepolicies', '', 'reins-observe-network')!;
    api.upsert('runtimepolicies', { ...current, spec: { ...(current.spec as object), allow: [{ cidrs: ['10.0.0.0/8'] }] } });
    api.remove('runtimepolicies', '', 'reins-observe-dns');
    api.upsert('runtimepolicies', policy('reins-observe-legacy', { 'app.kubernetes.io/managed-by': 'reins' }));
    const dropped = api.get('runtimepolicies', '', 'reins-observe-exec')!;
    api.upsert('runtimepolicies', { ...dropped, metadata: { ...dropped.metadata, labels: { 'app.kubernetes.io/managed-by': 'reins' } } });
    await until('repaired', () => {
      const ok = names(api).join() === FOUR.join() && !('allow' in spec(api, 'reins-observe-network'));
      return ok && api.get('runtimepolicies', '', 'reins-observe-exec')!.metadata.labels?.['runtime.reins.dev/family'] === 'exec';
    });
    const replaced = writes(api).filter((r) => r.method === 'PUT').map((r) => r.path.split('/').pop());
    assert.ok(replaced.includes('reins-observe-network'));
    assert.ok(writes(api).some((r) => r.method === 'DELETE' && r.path.endsWith('/reins-observe-legacy') && r.status === 200));
  });

  test('policies Reins does not manage are left alone, even one with a name it wants', async () => {
    const api = await fakeApi(true);
    api.upsert('runtimepolicies', policy('team-exec-audit', { team: 'sec' }));
    api.upsert('runtimepolicies', policy('reins-observe-open', {}));
    const { cluster, errors } = await started(api);
    await until('the three others', () => names(api).length === 5);
    await until('the conflict reported', () => errors.some((e) => /reins-observe-open exists without the label/.test(e.message)));
    assert.equal(cluster.isLeader(), true);
    assert.equal(spec(api, 'team-exec-audit').mode, 'enforce');
    assert.equal(spec(api, 'reins-observe-open').mode, 'enforce');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(errors.filter((e) => /reins-observe-open/.test(e.message)).length, 1, 'said once');
  });

  test('a follower writes nothing', async () => {
    const api = await fakeApi(true);
    // A live leader elsewhere: its Lease stays valid for the whole test.
    api.upsert('leases', kube.lease({ namespace: 'reins', name: 'reins-runtime-guard', holder: 'elsewhere', durationSeconds: 3600 }));
    const { cluster } = await started(api);
    await until('a completed probe', () => cluster.capability().crd === 'available');
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(cluster.isLeader(), false);
    assert.deepEqual(writes(api), []);
    assert.deepEqual(names(api), []);
  });

  test('nothing is written while the CRD is not served, and the policies follow once it is', async () => {
    const api = await fakeApi(false);
    const { cluster } = await started(api, { probeIntervalMs: 100 });
    await until('leader', () => cluster.isLeader());
    await until('a completed probe', () => cluster.capability().probedAtUnix > 0);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(
      api.requests.filter((r) => r.path.startsWith(POLICIES_PATH)),
      [],
      'not even a list',
    );
    api.setCrdServed(true);
    await until('the four policies', () => names(api).length === 4);
  });

  test('the new leader takes the policies over when the old one stops', async () => {
    const api = await fakeApi(true);
    const first = await started(api, { identity: 'replica-a', environment: { kind: 'kubeconfig', kubeconfigPath: api.kubeconfigFor('replica-a') } });
    await until('the four policies', () => names(api).length === 4);
    const second = await started(api, { identity: 'replica-b', environment: { kind: 'kubeconfig', kubeconfigPath: api.kubeconfigFor('replica-b') } });
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(writes(api).filter((r) => r.authorization === 'Bearer replica-b'), [], 'the follower wrote nothing');
    await first.cluster.stop();
    await until('b leads', () => second.cluster.isLeader());
    api.remove('runtimepolicies', '', 'reins-observe-exec');
    await until('recreated by b', () => names(api).length === 4);
    assert.ok(writes(api).some((r) => r.authorization === 'Bearer replica-b' && r.method === 'POST'));
  });
});
