/**
 * The reporter against a real HTTP server standing in for Reins' two ingest routes: aggregation within a window,
 * the 500-item limit (the rest discarded and counted, recorded all the same), retries with backoff while Reins is
 * unreachable, a bounded backlog, refusals not retried, and the metrics text.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { SensorMetrics } from '../../src/sensor/metrics.js';
import { Reporter } from '../../src/sensor/reporter.js';
import { fakeReins } from './fake-reins.js';
import type { Observation } from '../../src/runtime-guard/types.js';

const WAIT_MS = 30_000;

function obs(fields: Partial<Observation>): Observation {
  return {
    rule: 'reins-observe-network', behavior: 'tcp-connect', subject: 'python3', destIP: '162.159.140.245', destName: '', count: 1,
    node: 'node-a', podName: 'agent-7d4-aaaaa', podIP: '10.244.1.1', namespace: 'eng', result: 'allowed', mode: 'monitor', observedAt: 1000, family: 'network',
    ...fields,
  };
}

async function until(what: string, check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const reporters: Reporter[] = [];
after(async () => {
  for (const r of reporters) await r.stop();
});

function reporter(url: string, metrics: SensorMetrics, extra: Partial<ConstructorParameters<typeof Reporter>[0]> = {}) {
  const r = new Reporter({
    url, token: 'rs_test', node: 'node-a', metrics, flushMs: 3_600_000, statusMs: 3_600_000, retryMinMs: 20, retryMaxMs: 100,
    status: async () => ({ node: 'node-a', sensorAlive: true, bpfLsm: 'available', reason: 'bpf listed' }),
    ...extra,
  });
  reporters.push(r);
  return r;
}

test('identical observations in a window are one item with their count and the last observedAt', async () => {
  const reins = await fakeReins();
  const metrics = new SensorMetrics('node-a');
  const r = reporter(reins.url, metrics);
  r.record(obs({ observedAt: 1005 }));
  r.record(obs({ observedAt: 1001, count: 2 }));
  r.record(obs({ observedAt: 1003 }));
  r.record(obs({ destIP: '160.79.104.10', observedAt: 1002 }));
  assert.equal(await r.drain(WAIT_MS), true);
  assert.equal(reins.reports.length, 1);
  assert.equal(reins.reports[0].node, 'node-a');
  assert.ok(reins.reports[0].sentAtUnix > 0);
  assert.deepEqual(reins.reports[0].observations.map((o: Observation) => [o.destIP, o.count, o.observedAt]), [['162.159.140.245', 4, 1005], ['160.79.104.10', 1, 1002]]);
  assert.deepEqual(reins.auth, ['Bearer rs_test']);
  assert.equal(metrics.observationsRecorded, 2, 'items, not their count');
  assert.equal(metrics.reportsSent, 1);
  // The next window starts empty.
  r.record(obs({ observedAt: 1010 }));
  await r.drain(WAIT_MS);
  assert.deepEqual(reins.reports[1].observations.map((o: Observation) => o.count), [1]);
  assert.equal(metrics.observationsRecorded, 3);
  await reins.close();
});

test('at most 500 items per report: the rest are discarded, never sent later, and still recorded', async () => {
  const reins = await fakeReins();
  const metrics = new SensorMetrics('node-a');
  const r = reporter(reins.url, metrics);
  for (let i = 0; i < 700; i++) r.record(obs({ destIP: `10.1.${i >> 8}.${i & 255}` }));
  // A repeat of a stored item still adds to its count; a repeat of a discarded one is discarded again.
  r.record(obs({ destIP: '10.1.0.0' }));
  r.record(obs({ destIP: `10.1.${699 >> 8}.${699 & 255}` }));
  assert.equal(await r.drain(WAIT_MS), true);
  assert.equal(await r.drain(WAIT_MS), true);
  assert.equal(reins.reports.length, 1);
  assert.equal(reins.reports[0].observations.length, 500);
  assert.equal(reins.reports[0].observations[0].count, 2);
  assert.equal(metrics.observationsRecorded, 700, 'a repeat of a discarded item is the same item');
  assert.equal(metrics.observationsLost['report-full'], 200);
  assert.match(metrics.text(), /^reins_sensor_observations_recorded_total\{node="node-a"\} 700$/m);
  assert.match(metrics.text(), /^reins_sensor_observations_lost_total\{node="node-a",cause="report-full"\} 200$/m);
  await reins.close();
});

test('Reins unreachable: retries with backoff, the backlog bounded; back: the queue is delivered in order', async () => {
  const first = await fakeReins();
  const port = first.port;
  await first.close();
  const metrics = new SensorMetrics('node-a');
  const r = reporter(`http://127.0.0.1:${port}`, metrics, { maxQueuedReports: 3 });
  for (let w = 0; w < 5; w++) {
    r.record(obs({ observedAt: 2000 + w }));
    r.flush();
  }
  await until('several failed attempts', () => metrics.reportsFailed >= 3);
  assert.equal(r.queuedReports, 3, 'the backlog holds at most 3 reports');
  assert.equal(metrics.observationsLost['send-backlog'], 2);
  assert.equal(await r.sendStatus(), false);
  assert.equal(metrics.statusFailed, 1);
  const reins = await fakeReins(port);
  await until('the backlog delivered', () => reins.reports.length === 3);
  assert.deepEqual(reins.reports.map((rep) => rep.observations[0].observedAt), [2002, 2003, 2004]);
  // The fake holds a report once it has read it; the sensor counts it sent once the answer came back.
  await until('the three reports counted sent', () => metrics.reportsSent === 3);
  assert.equal(await r.sendStatus(), true);
  assert.deepEqual(reins.statuses.at(-1), { node: 'node-a', sensorAlive: true, bpfLsm: 'available', reason: 'bpf listed' });
  await reins.close();
});

test('Reins back: a node status that gets through ends the reports\' back-off wait at once', async () => {
  const first = await fakeReins();
  const port = first.port;
  await first.close();
  const metrics = new SensorMetrics('node-a');
  // A back-off of 60 s: without the status the report would wait it out.
  const r = reporter(`http://127.0.0.1:${port}`, metrics, { retryMinMs: 60_000, retryMaxMs: 60_000 });
  r.record(obs({}));
  r.flush();
  await until('the first attempt failed', () => metrics.reportsFailed === 1);
  const reins = await fakeReins(port);
  assert.equal(reins.reports.length, 0, 'still waiting');
  assert.equal(await r.sendStatus(), true);
  await until('the report delivered', () => reins.reports.length === 1);
  assert.equal(metrics.reportsFailed, 1);
  await reins.close();
});

test('a refusal Reins would repeat (4xx) is not retried; 503 is', async () => {
  const reins = await fakeReins();
  const metrics = new SensorMetrics('node-a');
  const r = reporter(reins.url, metrics);
  reins.status = 400;
  r.record(obs({}));
  assert.equal(await r.drain(WAIT_MS), true);
  assert.equal(metrics.observationsLost.refused, 1);
  assert.equal(metrics.reportsFailed, 1);
  reins.status = 503;
  r.record(obs({}));
  r.flush();
  await until('retries', () => metrics.reportsFailed >= 3);
  reins.status = 200;
  await until('delivered', () => reins.reports.length === 1);
  await reins.close();
});
