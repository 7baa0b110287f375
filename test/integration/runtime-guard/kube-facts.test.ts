/**
 * Cluster facts through the real client against the fake API server: list, then watch; owner chains; the
 * service's own pods; freshness stamps; failure and recovery; start and stop.
 */
import { test, describe, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterUnavailableError, startRuntimeCluster } from '../../../src/runtime-guard/kube/runtime-cluster.js';
import type { RuntimeCluster } from '../../../src/runtime-guard/cluster.js';
import type { ClusterFacts } from '../../../src/runtime-guard/types.js';
import { buildOwnerIndex, resolveWorkload } from '../../../src/runtime-guard/workload.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { seedCluster, startCluster, until } from './kube-helpers.js';

/**
 * The watches the cluster facts keep open: pods, ReplicaSets, Jobs, Services, EndpointSlices, nodes, Deployments,
 * StatefulSets, DaemonSets, CronJobs and ServiceCIDRs.
 */
const WATCHED = 11;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fakeApi(options: Parameters<typeof startFakeKubeApi>[0] = {}): Promise<FakeKubeApi> {
  const api = await startFakeKubeApi(options);
  cleanups.push(() => api.close());
  return api;
}

async function started(api: FakeKubeApi, overrides: Parameters<typeof startCluster>[1] = {}) {
  const s = await startCluster(api, overrides);
  cleanups.push(() => s.cluster.stop());
  await until('the first complete list', () => s.cluster.facts() !== null);
  return s;
}

const facts = (cluster: RuntimeCluster): ClusterFacts => {
  const f = cluster.facts();
  assert.ok(f, 'facts');
  return f;
};
const podNames = (f: ClusterFacts): string[] => f.pods.map((p) => `${p.namespace}/${p.name}`).sort();
const workloadOf = (f: ClusterFacts, namespace: string, name: string) => {
  const pod = f.pods.find((p) => p.namespace === namespace && p.name === name);
  assert.ok(pod, `${namespace}/${name}`);
  return resolveWorkload(pod, buildOwnerIndex(f));
};

describe('cluster facts from the Kubernetes API', () => {
  test('facts are null until every resource listed, then carry what the lists returned', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const gate = api.gate((r) => r.path === '/api/v1/nodes' && !('watch' in Object.fromEntries(r.query)));
    const { cluster } = await startCluster(api);
    cleanups.push(() => cluster.stop());
    await gate.waitFor(1);
    assert.equal(cluster.facts(), null, 'nodes have not listed yet');
    gate.release();
    await until('facts', () => cluster.facts() !== null);
    const f = facts(cluster);
    assert.equal(f.complete, true);
    // Stamped at the list, read moments later (a loaded machine may take seconds in between).
    assert.ok(Math.abs(f.fetchedAtUnix - Date.now() / 1000) < 60, `fetched at ${f.fetchedAtUnix}`);
    assert.deepEqual(podNames(f), ['eng/agent-7d4-aaaaa', 'eng/nightly-1-bbbbb', 'reins/reins-5f6-ccccc']);
    assert.deepEqual(
      f.services.map((s) => [`${s.namespace}/${s.name}`, s.clusterIPs]).sort(),
      [['default/kubernetes', ['10.96.0.1']], ['kube-system/kube-dns', ['10.96.0.10']], ['reins/reins', ['10.96.7.7']]],
    );
    assert.deepEqual(
      f.endpointSlices.find((s) => s.serviceName === 'kubernetes'),
      { namespace: 'default', serviceName: 'kubernetes', endpoints: [{ addresses: ['172.20.5.5'] }] },
    );
    assert.deepEqual(f.nodes.find((n) => n.name === 'node-b')?.addresses, ['192.168.1.11', '34.1.2.3', 'node-b']);
    assert.deepEqual(f.selfService, { namespace: 'reins', name: 'reins' });
    assert.deepEqual(f.selfPods, [{ namespace: 'reins', name: 'reins-5f6-ccccc', ip: '10.244.9.9' }]);
    // The kube-dns Service (k8s-app=kube-dns) and the API server the kubeconfig names.
    assert.ok(f.clusterDnsAddresses.includes('10.96.0.10'));
    assert.deepEqual(f.apiServerAddresses, ['127.0.0.1']);
  });

  test('watch events change the facts: a pod added, a pod deleted, a Service changed', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await started(api);
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'late', ip: '10.244.1.7' }));
    await until('the added pod', () => podNames(facts(cluster)).includes('eng/late'));
    api.remove('pods', 'eng', 'agent-7d4-aaaaa');
    await until('the deleted pod gone', () => !podNames(facts(cluster)).includes('eng/agent-7d4-aaaaa'));
    api.upsert('services', kube.service({ namespace: 'reins', name: 'reins', clusterIPs: ['10.96.7.8'] }));
    await until('the changed Service', () => facts(cluster).services.find((s) => s.name === 'reins')?.clusterIPs[0] === '10.96.7.8');
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'eng', service: 'api', endpoints: [{ address: '10.244.1.9' }] }));
    api.upsert('nodes', kube.node({ name: 'node-c', addresses: ['192.168.1.12'] }));
    await until('the new slice and node', () => facts(cluster).endpointSlices.some((s) => s.serviceName === 'api') && facts(cluster).nodes.length === 3);
    assert.equal(facts(cluster).complete, true);
  });

  test('the snapshot is rebuilt only when something changed', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await started(api);
    const a = facts(cluster);
    const b = facts(cluster);
    assert.equal(a.pods, b.pods, 'same arrays while nothing changed');
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'late', ip: '10.244.1.7' }));
    await until('the added pod', () => facts(cluster).pods !== a.pods);
    assert.equal(facts(cluster).services, a.services, 'unchanged resources keep their arrays');
  });

  test('updates that change nothing kept, a phase change and a relist keep the arrays and the fact objects', async () => {
    // A real cluster sends a stream of pod updates the facts do not read (status conditions, labels, resyncs) and
    // relists after every expired watch. The engine keeps its classifier while the facts arrays are the same ones.
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await started(api);
    const a = facts(cluster);
    const agent = a.pods.find((p) => p.name === 'agent-7d4-aaaaa');
    const podRequests = (): Array<{ watch: boolean }> => api.requests.filter((r) => r.path === '/api/v1/pods');
    // Events of one watch arrive in order: once the watch ended and the next one opened, every event before was read.
    const afterPodWatchReopens = async (): Promise<void> => {
      const before = podRequests().length;
      api.closeWatches('pods');
      await until('the pods watch reopened', () => podRequests().slice(before).some((r) => r.watch));
    };
    const owner = { kind: 'ReplicaSet' as const, name: 'agent-7d4' };
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-7d4-aaaaa', ip: '10.244.1.1', owner, labels: { rollout: 'canary' } }));
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'nightly-1-bbbbb', ip: '10.244.1.2', owner: { kind: 'Job', name: 'nightly-1' }, phase: 'Succeeded' }));
    await afterPodWatchReopens();
    assert.equal(facts(cluster).pods, a.pods, 'a label and a phase change leave the pods array as it was');
    assert.equal(facts(cluster).pods.find((p) => p.name === 'agent-7d4-aaaaa'), agent);

    // The watch expires (410): the pods are listed again, then watched from the list.
    const before = podRequests().length;
    api.closeWatches('pods');
    // Something else moves the resourceVersion on; the pods watch resumes from an older one, which has expired.
    api.upsert('leases', kube.lease({ namespace: 'reins', name: 'unrelated', holder: 'someone' }));
    api.compact();
    await until('a relist of the pods, then a watch', () => {
      const since = podRequests().slice(before);
      const list = since.findIndex((r) => !r.watch);
      return list >= 0 && since.slice(list + 1).some((r) => r.watch);
    });
    assert.equal(facts(cluster).pods, a.pods, 'a relist that found the same pods keeps the array');
    assert.equal(facts(cluster).services, a.services);

    // A change the facts read is a new array, with the untouched pods' objects kept.
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-7d4-aaaaa', ip: '10.244.1.8', owner }));
    await until('the new address', () => facts(cluster).pods.some((p) => p.ip === '10.244.1.8'));
    assert.notEqual(facts(cluster).pods, a.pods);
    assert.equal(
      facts(cluster).pods.find((p) => p.name === 'nightly-1-bbbbb'),
      a.pods.find((p) => p.name === 'nightly-1-bbbbb'),
    );
  });

  test('owner chains: ReplicaSet to Deployment, Job to CronJob, a missing owner gives the pod level', async () => {
    const api = await fakeApi();
    seedCluster(api);
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'orphan-x', ip: '10.244.1.8', owner: { kind: 'ReplicaSet', name: 'gone-rs' } }));
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'db-0', ip: '10.244.1.9', owner: { kind: 'StatefulSet', name: 'db' } }));
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'bare', ip: '10.244.1.10' }));
    const { cluster } = await started(api);
    const f = facts(cluster);
    assert.equal(workloadOf(f, 'eng', 'agent-7d4-aaaaa').workloadKey, 'eng/Deployment/agent');
    assert.equal(workloadOf(f, 'eng', 'nightly-1-bbbbb').workloadKey, 'eng/CronJob/nightly');
    assert.equal(workloadOf(f, 'eng', 'db-0').workloadKey, 'eng/StatefulSet/db');
    assert.deepEqual(
      [workloadOf(f, 'eng', 'orphan-x').workloadKey, workloadOf(f, 'eng', 'orphan-x').attributionConfirmed],
      ['eng/Pod/orphan-x', false],
    );
    assert.equal(workloadOf(f, 'eng', 'bare').attributionConfirmed, false);
    // The owner appears later: the chain resolves from then on.
    api.upsert('replicasets', kube.replicaSet({ namespace: 'eng', name: 'gone-rs', owner: { kind: 'Deployment', name: 'late' } }));
    await until('the late ReplicaSet', () => workloadOf(facts(cluster), 'eng', 'orphan-x').workloadKey === 'eng/Deployment/late');
  });

  test('self pods, current and previous: a new replica counts at once, a deleted one is remembered with its IP', async () => {
    const api = await fakeApi();
    seedCluster(api);
    let offsetMs = 0;
    const { cluster } = await started(api, { now: () => Date.now() + offsetMs, leaseDurationSeconds: 3600 });
    // A rollout: a new ReplicaSet of the same Deployment, its pod not yet an endpoint of the Service.
    api.upsert('replicasets', kube.replicaSet({ namespace: 'reins', name: 'reins-9a1', owner: { kind: 'Deployment', name: 'reins' } }));
    api.upsert('pods', kube.pod({ namespace: 'reins', name: 'reins-9a1-ddddd', ip: '10.244.9.10', owner: { kind: 'ReplicaSet', name: 'reins-9a1' } }));
    // Another workload in the same namespace is not the service's.
    api.upsert('pods', kube.pod({ namespace: 'reins', name: 'sensor-zzz', ip: '10.244.9.11', owner: { kind: 'DaemonSet', name: 'reins-sensor' } }));
    const selfNames = () => facts(cluster).selfPods.map((p) => p.name).sort();
    await until('the new replica', () => selfNames().includes('reins-9a1-ddddd'));
    assert.deepEqual(selfNames(), ['reins-5f6-ccccc', 'reins-9a1-ddddd']);

    // The old pod goes away: the Service moves to the new pod, the old pod is deleted.
    api.upsert('endpointslices', kube.endpointSlice({ namespace: 'reins', service: 'reins', endpoints: [{ address: '10.244.9.10', pod: 'reins-9a1-ddddd' }] }));
    api.remove('pods', 'reins', 'reins-5f6-ccccc');
    // Two watches (pods, EndpointSlices) deliver these in either order; in between the new pod may briefly
    // look like a previous one. Waited for: the old pod gone and the new one current again.
    await until('the old pod deleted and the new one current', () => {
      const f = facts(cluster);
      return !podNames(f).includes('reins/reins-5f6-ccccc') && f.selfPods.some((p) => p.name === 'reins-9a1-ddddd' && p.goneAtUnix === undefined);
    });
    const [previous, current] = facts(cluster).selfPods.sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(current, { namespace: 'reins', name: 'reins-9a1-ddddd', ip: '10.244.9.10' });
    // A previous pod carries when this replica saw it go (the store keeps it that long for every replica).
    assert.deepEqual({ ...previous, goneAtUnix: undefined }, { namespace: 'reins', name: 'reins-5f6-ccccc', ip: '10.244.9.9', goneAtUnix: undefined });
    assert.ok(Math.abs(previous!.goneAtUnix! - Date.now() / 1000) < 60, `gone at ${previous!.goneAtUnix}`);
    // Still remembered a day later (the widest window), forgotten after 25 h.
    offsetMs = 24 * 3600_000;
    assert.ok(selfNames().includes('reins-5f6-ccccc'));
    offsetMs = 25 * 3600_000 + 1000;
    assert.deepEqual(selfNames(), ['reins-9a1-ddddd']);
  });

  test('a self pod deleted between two reads of the facts is remembered all the same', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await started(api);
    facts(cluster);
    api.upsert('pods', kube.pod({ namespace: 'reins', name: 'reins-5f6-short', ip: '10.244.9.12', owner: { kind: 'ReplicaSet', name: 'reins-5f6' } }));
    api.remove('pods', 'reins', 'reins-5f6-short');
    // A later pod on the same watch marks that both events arrived. It is a sensor pod, so the wait reads the
    // pod cache (sensorMetricsTargets) and never the facts: the pod came and went between two reads.
    api.upsert('pods', kube.pod({ namespace: 'reins', name: 'marker', ip: '10.244.3.99', labels: { 'app.kubernetes.io/name': 'reins-sensor' } }));
    await until('the marker pod', () => cluster.sensorMetricsTargets().includes('http://10.244.3.99:9090/metrics'));
    assert.ok(facts(cluster).selfPods.some((p) => p.name === 'reins-5f6-short' && p.ip === '10.244.9.12'));
  });

  test('fetchedAtUnix advances on bookmarks, not only on changes', async () => {
    const api = await fakeApi();
    seedCluster(api);
    let offsetMs = 0;
    // Watches the server never ends during the test: only the bookmark may stamp the facts.
    const { cluster } = await started(api, { now: () => Date.now() + offsetMs, watchTimeoutSeconds: 600 });
    await until('every watch open', () => api.watchCount() === WATCHED);
    const first = facts(cluster).fetchedAtUnix;
    offsetMs = 90_000;
    assert.equal(facts(cluster).fetchedAtUnix, first, 'no event, no new stamp');
    assert.equal(api.bookmark(), WATCHED, 'every watch asked for bookmarks');
    await until('the bookmark stamp', () => facts(cluster).fetchedAtUnix >= first + 90);
    assert.equal(facts(cluster).complete, true);
  });

  test('the oldest resource decides fetchedAtUnix', async () => {
    const api = await fakeApi();
    seedCluster(api);
    let offsetMs = 0;
    const { cluster } = await started(api, { now: () => Date.now() + offsetMs, watchTimeoutSeconds: 600 });
    await until('every watch open', () => api.watchCount() === WATCHED);
    const first = facts(cluster).fetchedAtUnix;
    offsetMs = 60_000;
    api.bookmark('pods');
    api.upsert('services', kube.service({ namespace: 'eng', name: 'x', clusterIP: '10.96.9.9' }));
    await until('the new Service', () => facts(cluster).services.some((s) => s.name === 'x'));
    assert.equal(facts(cluster).fetchedAtUnix, first, 'nodes, jobs, ReplicaSets and slices are as old as before');
  });

  test('complete is false after lists fail, and true again after the next successful list', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster, errors } = await started(api);
    api.failLists(true);
    await until('incomplete facts', () => facts(cluster).complete === false);
    assert.ok(errors.some((e) => /failed/.test(e.message)), 'the failure was reported');
    // The last snapshot is kept, marked incomplete: the engine then stands the network detector down.
    assert.equal(facts(cluster).pods.length, 3);
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'during-outage', ip: '10.244.1.11' }));
    api.failLists(false);
    await until('complete facts', () => facts(cluster).complete === true);
    assert.ok(podNames(facts(cluster)).includes('eng/during-outage'), 'the relist caught up');
  });

  test('a watch that is refused (list granted, watch not) backs off instead of relisting continuously', async () => {
    const api = await fakeApi();
    seedCluster(api);
    api.denyAccess({ group: '', resource: 'nodes', verb: 'watch' });
    const { cluster, errors } = await started(api, { retryMinMs: 100, retryMaxMs: 1_000 });
    await new Promise((r) => setTimeout(r, 2_000));
    const nodeLists = api.requests.filter((r) => r.path === '/api/v1/nodes' && !r.watch).length;
    assert.ok(nodeLists <= 7, `${nodeLists} lists of nodes in 2 s`);
    // Between a relist and its refused watch the facts are briefly complete again; mostly they are not.
    await until('incomplete facts', () => facts(cluster).complete === false);
    assert.ok(errors.some((e) => /watching nodes failed: HTTP 403/.test(e.message)));
  });

  for (const expiredWatch of ['event', 'http'] as const) {
    test(`a watch resuming from a compacted resourceVersion relists (410 as ${expiredWatch === 'event' ? 'an ERROR event' : 'an HTTP status'})`, async () => {
      const api = await fakeApi({ expiredWatch });
      seedCluster(api);
      const { cluster, errors } = await started(api);
      await until('every watch open', () => api.watchCount() === WATCHED);
      api.closeWatches();
      api.upsert('pods', kube.pod({ namespace: 'eng', name: 'after-compaction', ip: '10.244.1.12' }));
      api.compact();
      await until('the relisted pod', () => podNames(facts(cluster)).includes('eng/after-compaction'));
      assert.equal(facts(cluster).complete, true, '410 is routine, not a failure');
      // The Lease has its own errors on a busy machine; the watches and lists must have none.
      assert.deepEqual(errors.filter((e) => /^(listing|watching) /.test(e.message)), []);
      const podLists = api.requests.filter((r) => r.path === '/api/v1/pods' && !r.watch);
      assert.equal(podLists.length, 2);
    });
  }

  test('a stalled API server: the watch is abandoned after its deadline, facts go incomplete, then recover', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await started(api, { watchTimeoutSeconds: 1, watchGraceMs: 300, retryMinMs: 50, retryMaxMs: 100 });
    api.stall(true);
    await until('incomplete facts', () => facts(cluster).complete === false);
    api.stall(false);
    await until('complete facts', () => facts(cluster).complete === true);
  });

  test('stop() returns while the API server is stalled, and leaves no watch open', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const { cluster } = await startCluster(api);
    await until('facts', () => cluster.facts() !== null);
    await until('every watch open', () => api.watchCount() === WATCHED);
    api.stall(true);
    const t0 = Date.now();
    await cluster.stop();
    // Waiting for the stalled server would take the watch timeout and its grace (35 s here); a busy machine
    // may make an immediate stop take a few seconds.
    assert.ok(Date.now() - t0 < 15_000, `stop took ${Date.now() - t0} ms`);
    api.stall(false);
    await until('no watch open', () => api.watchCount() === 0);
  });

  test('over TLS, with the CA the kubeconfig names', async () => {
    const api = await fakeApi({ tls: true });
    seedCluster(api);
    const { cluster } = await started(api);
    assert.equal(facts(cluster).pods.length, 3);
    assert.ok(api.requests.every((r) => r.authorization === 'Bearer fake-kube-token'));
  });

  test('sensor metrics targets: discovered sensor pods, or the configured list', async () => {
    const api = await fakeApi();
    seedCluster(api);
    const sensorPod = (name: string, ip: string, port?: number) =>
      kube.pod({
        namespace: 'reins',
        name,
        ip,
        labels: { 'app.kubernetes.io/name': 'reins-sensor' },
        owner: { kind: 'DaemonSet', name: 'reins-sensor' },
        containers: [{ name: 'sensor', ports: port ? [{ name: 'metrics', containerPort: port }] : [] }],
      });
    api.upsert('pods', sensorPod('sensor-a', '10.244.3.1', 2112));
    api.upsert('pods', sensorPod('sensor-b', '10.244.3.2'));
    const { cluster } = await started(api);
    assert.deepEqual(cluster.sensorMetricsTargets(), ['http://10.244.3.1:2112/metrics', 'http://10.244.3.2:9090/metrics']);
    api.remove('pods', 'reins', 'sensor-b');
    await until('the sensor gone', () => cluster.sensorMetricsTargets().length === 1);
    const configured = await started(api, { metricsTargets: ['http://sensor.example:9090/metrics'] });
    assert.deepEqual(configured.cluster.sensorMetricsTargets(), ['http://sensor.example:9090/metrics']);
  });

  test('stop() aborts the watches, releases the Lease and leaves nothing to keep the process alive', async () => {
    const api = await fakeApi({ crdServed: true });
    seedCluster(api);
    const { cluster } = await startCluster(api);
    await until('leader', () => cluster.isLeader());
    await until('every watch open', () => api.watchCount() === WATCHED);
    await cluster.stop();
    await cluster.stop();
    await until('no watch open', () => api.watchCount() === 0);
    assert.equal(api.get('leases', 'reins', 'reins-runtime-guard')?.spec?.['holderIdentity' as never], '');
    assert.equal(cluster.isLeader(), false);
    const before = api.requests.length;
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(api.requests.length, before, 'no request after stop');
  });
});

describe('starting against an unusable cluster', () => {
  test('an API server that does not answer: ClusterUnavailableError with a readable message', async () => {
    const api = await startFakeKubeApi();
    const path = api.kubeconfigFor('t');
    const url = api.url;
    const { readFileSync, writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const copy = join(mkdtempSync(join(tmpdir(), 'kc-')), 'kubeconfig');
    writeFileSync(copy, readFileSync(path, 'utf8'));
    await api.close();
    await assert.rejects(
      startRuntimeCluster({ environment: { kind: 'kubeconfig', kubeconfigPath: copy }, selfService: 'reins/reins', metricsTargets: [], onError: () => {} }),
      (err: Error) => err instanceof ClusterUnavailableError && err.message.includes(url) && /not reachable/.test(err.message),
    );
  });

  test('discovery refused (503): ClusterUnavailableError', async () => {
    const api = await fakeApi();
    api.failDiscovery(true);
    await assert.rejects(startCluster(api), (err: Error) => err instanceof ClusterUnavailableError && /HTTP 503/.test(err.message));
  });

  test('a kubeconfig that cannot be loaded: ClusterUnavailableError', async () => {
    await assert.rejects(
      startRuntimeCluster({ environment: { kind: 'kubeconfig', kubeconfigPath: '/nonexistent/kubeconfig' }, selfService: 'reins/reins', metricsTargets: [], onError: () => {} }),
      (err: Error) => err instanceof ClusterUnavailableError && /kubeconfig/.test(err.message),
    );
  });

  test('in-cluster without a service account: ClusterUnavailableError', async () => {
    await assert.rejects(
      startRuntimeCluster({ environment: { kind: 'in-cluster' }, selfService: 'reins/reins', metricsTargets: [], onError: () => {} }),
      (err: Error) => err instanceof ClusterUnavailableError,
    );
  });
});
