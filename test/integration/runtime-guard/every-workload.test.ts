/**
 * Issue 18, item 5, end to end: every workload of the cluster has a row, evidence or not. The workload objects come
 * from the fake Kubernetes API server through the real informers (list, then watch ADDED and DELETED events), the
 * answer from GET /api/v1/runtime/reconciliation: StatefulSets and DaemonSets with no pod, a Deployment with no
 * ReplicaSet, one whose ReplicaSet has no pod, a CronJob that never ran, a bare Job, a bare Pod. Not kube-system or
 * kube-public, never the service's own Deployment.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { Client, describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { item, report } from './helpers.js';
import { seedCluster, startGuardOnApi } from './kube-helpers.js';

const OPENAI = '162.159.140.245';

describeEachStore('runtime guard: every workload has a row', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;

  async function reconciliationWhen(what: string, check: (body: any) => boolean): Promise<any> {
    let last: any;
    const ok = await waitFor(async () => {
      last = (await admin.get('/api/v1/runtime/reconciliation')).body;
      return check(last);
    }, WAIT_MS, 100);
    assert.ok(ok >= 0, `${what}; last answer: ${JSON.stringify(last?.rows?.map((r: any) => r.workloadKey))}`);
    return last;
  }
  const keys = (body: any): string[] => body.rows.map((r: any) => r.workloadKey);

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true });
    // Deployment eng/agent (ReplicaSet agent-7d4, one pod), CronJob eng/nightly (Job nightly-1, one pod), the service's
    // own Deployment reins/reins, kube-dns: see seedCluster.
    seedCluster(api);
    api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: 'eng', name: 'agent' }));
    api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: 'reins', name: 'reins' }));
    api.upsert('statefulsets', kube.workload({ kind: 'StatefulSet', namespace: 'eng', name: 'db', replicas: 0 }));
    api.upsert('daemonsets', kube.workload({ kind: 'DaemonSet', namespace: 'ops', name: 'log-shipper' }));
    // A Deployment whose ReplicaSet was never made (paused before its first rollout), and one scaled to zero.
    api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: 'eng', name: 'paused', replicas: 0 }));
    api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: 'eng', name: 'scaled', replicas: 0 }));
    api.upsert('replicasets', kube.replicaSet({ namespace: 'eng', name: 'scaled-5c9', owner: { kind: 'Deployment', name: 'scaled' } }));
    api.upsert('cronjobs', kube.cronJob({ namespace: 'eng', name: 'nightly' }));
    api.upsert('cronjobs', kube.cronJob({ namespace: 'eng', name: 'weekly' }));
    // A bare Job (finished, its pod cleaned up) and a bare Pod.
    api.upsert('jobs', kube.job({ namespace: 'batch', name: 'migrate-1' }));
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'debug', ip: '10.244.1.60' }));
    // The cluster's own machinery: rows only with evidence.
    api.upsert('daemonsets', kube.workload({ kind: 'DaemonSet', namespace: 'kube-system', name: 'kube-proxy' }));
    api.upsert('deployments', kube.workload({ kind: 'Deployment', namespace: 'kube-public', name: 'welcome' }));
    ({ replica, admin, sensor } = await startGuardOnApi(store(), api));
  });
  after(async () => {
    await replica?.close();
    await api?.close();
  });

  const quiet = [
    'batch/Job/migrate-1',
    'eng/CronJob/nightly',
    'eng/CronJob/weekly',
    'eng/Deployment/paused',
    'eng/Deployment/scaled',
    'eng/Pod/debug',
    'eng/StatefulSet/db',
    'ops/DaemonSet/log-shipper',
  ];

  test('workloads with no pod (StatefulSet, DaemonSet, Deployment, CronJob), a bare Job and a bare Pod: a row each, sorted', async () => {
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: OPENAI, observedAt: Math.floor(Date.now() / 1000) })]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    const body = await reconciliationWhen('the agent row with its finding, then every quiet workload', (b) => b.rows[0]?.bypassedDestinations === 1 && b.rows.length === 9);
    // Rule 2: the finding first, then m = 0 rows by workloadKey.
    assert.deepEqual(keys(body), ['eng/Deployment/agent', ...quiet]);
    for (const row of body.rows.slice(1)) {
      assert.equal(row.m, 0, row.workloadKey);
      assert.equal(row.bypassedDestinations, 0, row.workloadKey);
      assert.equal(row.dnsOnly, false, row.workloadKey);
      assert.deepEqual(row.destinations, [], row.workloadKey);
    }
    assert.equal(body.rows.find((r: any) => r.workloadKey === 'eng/StatefulSet/db').attributionConfirmed, true);
    assert.equal(body.rows.find((r: any) => r.workloadKey === 'eng/Pod/debug').attributionConfirmed, false);
  });

  test('a StatefulSet and a DaemonSet created later get their rows; deleted, the rows go', async () => {
    api.upsert('statefulsets', kube.workload({ kind: 'StatefulSet', namespace: 'eng', name: 'queue', replicas: 0 }));
    api.upsert('daemonsets', kube.workload({ kind: 'DaemonSet', namespace: 'eng', name: 'node-agent' }));
    const added = await reconciliationWhen('the two new rows', (b) => keys(b).includes('eng/StatefulSet/queue') && keys(b).includes('eng/DaemonSet/node-agent'));
    assert.equal(added.rows.length, 11);
    api.remove('statefulsets', 'eng', 'queue');
    api.remove('daemonsets', 'eng', 'node-agent');
    api.remove('statefulsets', 'eng', 'db');
    const removed = await reconciliationWhen('the rows gone', (b) => !keys(b).includes('eng/StatefulSet/queue') && !keys(b).includes('eng/StatefulSet/db') && !keys(b).includes('eng/DaemonSet/node-agent'));
    assert.deepEqual(
      keys(removed),
      ['eng/Deployment/agent', ...quiet.filter((k) => k !== 'eng/StatefulSet/db')],
    );
  });
});
