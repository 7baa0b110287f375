/**
 * The capability probe through the real client: RuntimePolicy CRD discovery and the start-up
 * SelfSubjectAccessReviews.
 */
import { test, describe, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import { requiredPermissions } from '../../../src/runtime-guard/kube/capability.js';
import { startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { seedCluster, startCluster, until } from './kube-helpers.js';

const CRD_DISCOVERY = '/apis/runtime.reins.dev/v1';

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

async function started(api: FakeKubeApi, overrides: Parameters<typeof startCluster>[1] = {}): Promise<RuntimeCluster> {
  const { cluster } = await startCluster(api, overrides);
  cleanups.push(() => cluster.stop());
  return cluster;
}

const probed = (cluster: RuntimeCluster) => until('a completed probe', () => cluster.capability().probedAtUnix > 0);

describe('capability probe', () => {
  test('before the first probe completed: unknown, probedAtUnix 0; after it: available, stamped', async () => {
    const api = await fakeApi(true);
    const discovery = api.gate((r) => r.path === CRD_DISCOVERY);
    const cluster = await started(api);
    await discovery.waitFor(1);
    const before = cluster.capability();
    assert.equal(before.crd, 'unknown');
    assert.equal(before.probedAtUnix, 0);
    assert.deepEqual(before.rbacGaps, []);
    discovery.release();
    await probed(cluster);
    const after = cluster.capability();
    assert.equal(after.crd, 'available');
    assert.match(after.crdReason, /served/);
    assert.ok(Math.abs(after.probedAtUnix - Date.now() / 1000) < 5);
    assert.deepEqual(after.rbacGaps, []);
  });

  test('the CRD not served: unavailable, with a reason that says what to install', async () => {
    const api = await fakeApi(false);
    const cluster = await started(api);
    await probed(cluster);
    const c = cluster.capability();
    assert.equal(c.crd, 'unavailable');
    assert.match(c.crdReason, /not installed/);
  });

  test('discovery failing: unknown (neither clean nor absent), and the failure is reported', async () => {
    const api = await fakeApi(true);
    const discovery = api.gate((r) => r.path === CRD_DISCOVERY);
    const { cluster, errors } = await startCluster(api);
    cleanups.push(() => cluster.stop());
    await discovery.waitFor(1);
    api.failDiscovery(true);
    discovery.release();
    await probed(cluster);
    const c = cluster.capability();
    assert.equal(c.crd, 'unknown');
    assert.match(c.crdReason, /discovery failed: HTTP 503/);
    assert.ok(errors.some((e) => /discovery failed/.test(e.message)));
  });

  test('rbacGaps are the permissions whose access review was denied, and only those', async () => {
    const api = await fakeApi(true);
    api.denyAccess({ group: '', resource: 'nodes', verb: 'watch' });
    api.denyAccess({ group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'reins' });
    api.denyAccess({ group: 'runtime.reins.dev', resource: 'runtimepolicies', verb: 'delete' });
    // A permission the runtime guard does not use changes nothing.
    api.denyAccess({ group: '', resource: 'secrets', verb: 'list' });
    const cluster = await started(api);
    await probed(cluster);
    assert.deepEqual(cluster.capability().rbacGaps, [
      { group: '', resource: 'nodes', verb: 'watch', namespace: '' },
      { group: 'coordination.k8s.io', resource: 'leases', verb: 'update', namespace: 'reins' },
      { group: 'runtime.reins.dev', resource: 'runtimepolicies', verb: 'delete', namespace: '' },
    ]);
    const reviews = api.requests.filter((r) => r.path === '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews');
    assert.equal(reviews.length, requiredPermissions('reins').length, 'one review per permission');
  });

  test('the access reviews run once at start, not at every re-probe', async () => {
    const api = await fakeApi(true);
    const cluster = await started(api, { probeIntervalMs: 100 });
    await probed(cluster);
    const first = cluster.capability().probedAtUnix;
    await until('three more probes', () => api.requests.filter((r) => r.path === CRD_DISCOVERY).length >= 4);
    assert.ok(cluster.capability().probedAtUnix >= first);
    assert.equal(api.requests.filter((r) => r.path.endsWith('/selfsubjectaccessreviews')).length, requiredPermissions('reins').length);
  });

  test('a re-probe picks up a CRD that appeared, and the leader then writes the policies', async () => {
    const api = await fakeApi(false);
    const cluster = await started(api, { probeIntervalMs: 100 });
    await probed(cluster);
    assert.equal(cluster.capability().crd, 'unavailable');
    api.setCrdServed(true);
    await until('available', () => cluster.capability().crd === 'available');
    await until('the four policies', () => api.list('runtimepolicies').length === 4);
    // And a CRD that went away again is seen as unavailable.
    api.setCrdServed(false);
    await until('unavailable again', () => cluster.capability().crd === 'unavailable');
  });
});
