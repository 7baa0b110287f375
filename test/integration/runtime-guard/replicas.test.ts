/**
 * Two replicas on one store: observations ingested on A are in B's reconciliation and observations answers, the
 * lag the leader scraped is the figure both replicas answer, and a previous pod of the service that only A saw is
 * the service's own in B's answer too.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Replica } from '../../../src/app/server.js';
import { ADMIN_TOKEN, Client, describeEachStore, enc, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { IP, makeFacts } from '../../unit/runtime-guard/fixtures.js';
import { FakeCluster, item, mintSensorToken, recordedCounter, report, startGuardReplica, startMetricsServer, TestClock } from './helpers.js';

describeEachStore('runtime guard across replicas', ({ store }) => {
  let a: Replica;
  let b: Replica;
  let metrics: Awaited<ReturnType<typeof startMetricsServer>>;
  const clock = new TestClock();
  const clusterA = new FakeCluster(clock, makeFacts());
  // B started after the service's previous pod reins-4a-old went away: its own facts never saw that pod.
  const clusterB = new FakeCluster(clock, makeFacts({ selfPods: makeFacts().selfPods.filter((p) => p.name !== 'reins-4a-old') }));
  clusterB.leader = false;

  before(async () => {
    metrics = await startMetricsServer();
    clusterA.targets = clusterB.targets = [metrics.url];
    a = await startGuardReplica(store(), { cluster: clusterA, clock });
    b = await startGuardReplica(store(), { cluster: clusterB, clock });
  });
  after(async () => {
    await b.close();
    await a.close();
    await metrics.close();
  });

  test('ingest on A, reconciliation and observations on B see it at once', async () => {
    const sensor = new Client(a.url, await mintSensorToken(new Client(a.url, ADMIN_TOKEN)));
    const adminB = new Client(b.url, ADMIN_TOKEN);
    // B has answered once already (its index is loaded), so the rows must come from its tail of the table.
    // Every workload of the facts has a row (issue 18 item 5); none carries evidence yet.
    assert.deepEqual((await adminB.get('/api/v1/runtime/reconciliation')).body.rows.filter((r: any) => r.destinations.length > 0), []);
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ family: 'dns', behavior: 'dns-query', destName: 'api.anthropic.com', destIP: IP.anthropic, observedAt: clock.unix - 30 }),
        item({ destIP: IP.anthropic, count: 4, observedAt: clock.unix - 20 }),
      ]),
    );
    assert.equal(sent.status, 200);
    const rec = await adminB.get('/api/v1/runtime/reconciliation');
    assert.deepEqual(rec.body.rows.filter((r: any) => r.destinations.length > 0).map((r: any) => r.workloadKey), ['eng/Deployment/agent']);
    assert.equal(rec.body.rows[0].workloadKey, 'eng/Deployment/agent');
    assert.equal(rec.body.rows[0].bypassedDestinations, 1);
    assert.equal(rec.body.rows[0].m, 5);
    const obs = await adminB.get(`/api/v1/runtime/workloads/${enc('eng/Deployment/agent')}/observations`);
    assert.equal(obs.body.groups[1].items[0].count, 4);
  });

  test('the leader scrapes the lag; the follower answers the same figure', async () => {
    metrics.text = recordedCounter({ 'node-a': 5 });
    await b.runtimeGuard.scrapeNow();
    await a.runtimeGuard.scrapeNow();
    const fromA = (await new Client(a.url, ADMIN_TOKEN).get('/api/v1/runtime/status')).body.ingestLag;
    const fromB = (await new Client(b.url, ADMIN_TOKEN).get('/api/v1/runtime/status')).body.ingestLag;
    assert.equal(fromA.lag, 3);
    assert.deepEqual(fromB, fromA);
  });

  test("findings of a previous pod of the service are dropped by every replica, also one that never saw the pod", async () => {
    assert.ok(!clusterB.facts()!.selfPods.some((p) => p.name === 'reins-4a-old'));
    const sensor = new Client(a.url, await mintSensorToken(new Client(a.url, ADMIN_TOKEN)));
    const sent = await sensor.post(
      '/api/v1/runtime/sensor/reports',
      report('node-a', [
        item({ namespace: 'reins', podName: 'reins-4a-old', podIP: '10.244.9.1', destIP: IP.openai, count: 2, observedAt: clock.unix - 10 }),
        // A pod of the namespace that is not the service's: its finding stays.
        item({ namespace: 'reins', podName: 'reins-debug', podIP: '10.244.9.7', destIP: IP.openai, observedAt: clock.unix - 10 }),
      ]),
    );
    assert.equal(sent.status, 200);
    const keys = async (replica: Replica) =>
      ((await new Client(replica.url, ADMIN_TOKEN).get('/api/v1/runtime/reconciliation')).body.rows as { workloadKey: string }[])
        .map((r) => r.workloadKey)
        .filter((k) => k.startsWith('reins/'));
    assert.deepEqual(await keys(a), ['reins/Pod/reins-debug']);
    // A writes the pods it knows as the service's own on its next background read (every second).
    assert.notEqual(await waitFor(async () => (await keys(b)).length === 1, WAIT_MS), -1, `B answers ${JSON.stringify(await keys(b))}`);
    assert.deepEqual(await keys(b), ['reins/Pod/reins-debug']);
  });
});
