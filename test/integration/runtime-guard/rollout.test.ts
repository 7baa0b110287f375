/**
 * Issue 18, item 4, end to end: a rollout deletes the old pods and their ReplicaSet (watch DELETE events from the
 * fake Kubernetes API server) after their evidence is stored. The workload keeps one row: the owner chain was
 * remembered in the store (runtime_pod_owners) while the pods lived; a pod never seen is attributed by Kubernetes'
 * naming, and the service's own previous pod found that way is dropped.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { kube, startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { Client, describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { item, report } from './helpers.js';
import { seedCluster, startGuardOnApi } from './kube-helpers.js';

const OPENAI = '162.159.140.245';
const ANTHROPIC = '160.79.104.10';

describeEachStore('runtime guard: one row per workload across rollouts', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let sensor: Client;
  const now = () => Math.floor(Date.now() / 1000);
  const rowsNamed = (body: any, name: string) => body.rows.filter((r: any) => r.namespace === 'eng' && r.name.startsWith(name));

  before(async () => {
    api = await startFakeKubeApi({ crdServed: true });
    seedCluster(api);
    // The old revision of Deployment eng/agent: ReplicaSet agent-6c1 with one pod.
    api.upsert('replicasets', kube.replicaSet({ namespace: 'eng', name: 'agent-6c1', owner: { kind: 'Deployment', name: 'agent' } }));
    api.upsert('pods', kube.pod({ namespace: 'eng', name: 'agent-6c1-old01', ip: '10.244.1.30', owner: { kind: 'ReplicaSet', name: 'agent-6c1' } }));
    ({ replica, admin, sensor } = await startGuardOnApi(store(), api));
  });
  after(async () => {
    await replica?.close();
    await api?.close();
  });

  test('the old pod and its ReplicaSet deleted after the evidence is stored: still one Deployment row', async () => {
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ podName: 'agent-6c1-old01', podIP: '10.244.1.30', destIP: OPENAI, count: 3, observedAt: now() }),
        item({ podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', destIP: ANTHROPIC, observedAt: now() }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    // The owner chain of the old pod is in the store (written on the replica's background tick).
    const remembered = await waitFor(async () => {
      const { rows } = await replica.db.query<{ kind: string; workload: string }>("SELECT kind, workload FROM runtime_pod_owners WHERE namespace = 'eng' AND name = 'agent-6c1-old01'");
      return rows.length === 1 && rows[0]!.kind === 'Deployment' && rows[0]!.workload === 'agent';
    }, WAIT_MS, 50);
    assert.ok(remembered >= 0, 'the old pod\'s owner was remembered');

    // The rollout ends: the old pod and its ReplicaSet go (watch DELETE events).
    api.remove('pods', 'eng', 'agent-6c1-old01');
    api.remove('replicasets', 'eng', 'agent-6c1');
    let last: any;
    const oneRow = await waitFor(async () => {
      last = (await admin.get('/api/v1/runtime/reconciliation')).body;
      // Gone from the facts (the informers saw the deletes), and the evidence still in the Deployment's row.
      const factsGone = !replica.runtimeGuard['cluster']?.facts()?.pods.some((p: any) => p.name === 'agent-6c1-old01');
      const agent = last.rows.find((r: any) => r.workloadKey === 'eng/Deployment/agent');
      return factsGone && agent?.bypassedDestinations === 2;
    }, WAIT_MS, 100);
    assert.ok(oneRow >= 0, `one row for the Deployment; last answer: ${JSON.stringify(last?.rows)}`);
    assert.deepEqual(rowsNamed(last, 'agent').map((r: any) => r.workloadKey), ['eng/Deployment/agent']);
    const agent = last.rows.find((r: any) => r.workloadKey === 'eng/Deployment/agent');
    assert.equal(agent.attributionConfirmed, true);
    assert.equal(agent.destinations.find((d: any) => d.destIP === OPENAI).count, 3);
  });

  test("a pod never seen is attributed by its name; the service's own previous pod found that way is dropped", async () => {
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        // Named like a pod of ReplicaSet agent-7d4 (known), never in the facts.
        item({ podName: 'agent-7d4-zq8x2', podIP: '10.244.1.31', destIP: '104.18.20.1', observedAt: now() }),
        // Named like a pod of the service's own ReplicaSet reins-5f6.
        item({ namespace: 'reins', podName: 'reins-5f6-k2j4m', podIP: '10.244.9.31', destIP: OPENAI, observedAt: now() }),
      ]),
    );
    assert.equal(sent.status, 200, JSON.stringify(sent.body));
    let last: any;
    const seen = await waitFor(async () => {
      last = (await admin.get('/api/v1/runtime/reconciliation')).body;
      return last.rows.find((r: any) => r.workloadKey === 'eng/Deployment/agent')?.bypassedDestinations === 3;
    }, WAIT_MS, 100);
    assert.ok(seen >= 0, `the never-seen pod counts for the Deployment; last answer: ${JSON.stringify(last?.rows)}`);
    assert.deepEqual(rowsNamed(last, 'agent').map((r: any) => r.workloadKey), ['eng/Deployment/agent']);
    assert.deepEqual(last.rows.filter((r: any) => r.namespace === 'reins'), []);
  });
});
