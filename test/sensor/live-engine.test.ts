/**
 * Live mode's process handling with a fake `ig` (a script printing the fixture lines of the gadget it is asked
 * for, then exiting as a crashing engine would): the arguments `ig run` gets, the lines read into reports, the
 * restarts counted, and open/exec started only where BPF-LSM is listed, the status saying why not.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/sensor/config.js';
import { igArgs } from '../../src/sensor/engine.js';
import { startSensor, type RunningSensor } from '../../src/sensor/sensor.js';
import { fakeReins, type FakeReins } from './fake-reins.js';

const WAIT_MS = 30_000;
const FIXTURES = fileURLToPath(new URL('../fixtures/ig/', import.meta.url));

async function until(what: string, check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function fakeIg(dir: string): { path: string; calls: string } {
  const calls = join(dir, 'calls.log');
  const path = join(dir, 'ig');
  writeFileSync(
    path,
    `#!${process.execPath}
const { appendFileSync, readFileSync } = require('node:fs');
const args = process.argv.slice(2);
appendFileSync(${JSON.stringify(calls)}, args.join(' ') + '\\n');
const gadget = args[1].split('/').pop().split(':')[0];
process.stdout.write(readFileSync(${JSON.stringify(FIXTURES)} + gadget + '.jsonl', 'utf8'));
process.stderr.write('fake ig: ' + gadget + ' done\\n');
setTimeout(() => process.exit(1), 50);
`,
  );
  chmodSync(path, 0o755);
  writeFileSync(calls, '');
  return { path, calls };
}

const cleanup: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function start(dir: string, reins: FakeReins, lsm: string, igPath: string): Promise<RunningSensor> {
  writeFileSync(join(dir, 'lsm'), lsm);
  const config = loadConfig(
    {
      REINS_URL: reins.url, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1',
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_LSM_PATH: join(dir, 'lsm'),
      IG_PATH: igPath, IG_VERSION: 'v0.55.1', IG_RESTART_MAX_SECONDS: '0.2',
    },
    { replays: [], once: false },
  );
  const sensor = await startSensor(config, () => {});
  cleanup.push(() => sensor.stop());
  return sensor;
}

test('ig run arguments: the pinned gadget image, JSON output, --paths where the gadget has it', () => {
  assert.deepEqual(igArgs('trace_dns', 'ghcr.io/inspektor-gadget/gadget/trace_dns:v0.55.1', ['--host']), ['run', 'ghcr.io/inspektor-gadget/gadget/trace_dns:v0.55.1', '-o', 'json', '--paths', '--host']);
  assert.deepEqual(igArgs('trace_tcp', 'x/trace_tcp:v1', []), ['run', 'x/trace_tcp:v1', '-o', 'json']);
});

test('with BPF-LSM: all four gadgets run; engine lines become reports; an engine that ends is restarted and counted', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-live-'));
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const ig = fakeIg(dir);
  const sensor = await start(dir, reins, 'lockdown,capability,landlock,yama,apparmor,bpf\n', ig.path);
  await until('restarts of every gadget', () => Object.values(sensor.metrics.engineRestarts).every((n) => n >= 1));
  const calls = readFileSync(ig.calls, 'utf8').split('\n').filter(Boolean);
  for (const g of ['trace_dns', 'trace_tcp', 'trace_open', 'trace_exec']) {
    assert.ok(calls.some((c) => c.startsWith(`run ghcr.io/inspektor-gadget/gadget/${g}:v0.55.1 -o json`)), `${g} started: ${calls.join(' | ')}`);
  }
  await until('reports of every family', () => new Set(reins.reports.flatMap((r) => r.observations.map((o: any) => o.family))).size === 4);
  assert.ok(sensor.metrics.eventsRead.trace_dns >= 16);
  assert.ok(sensor.metrics.eventsDropped.ipv6 >= 4);
  await until('a status', () => reins.statuses.length > 0);
  const status = reins.statuses.at(-1);
  assert.equal(status.bpfLsm, 'available');
  assert.equal(status.sensorAlive, true);
  assert.match(status.reason, /observing dns, network, open, exec/);
  const text = await (await fetch(`http://127.0.0.1:${sensor.metricsPort}/metrics`)).text();
  assert.match(text, /^reins_sensor_engine_restarts_total\{node="node-a",gadget="trace_tcp"\} [1-9]\d*$/m);
});

test('without BPF-LSM: open and exec are not observed and the status says why; an ig that cannot start is retried', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-live-'));
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const ig = fakeIg(dir);
  const sensor = await start(dir, reins, 'lockdown,capability,yama,apparmor\n', ig.path);
  // The first status may go out before the engine has planned its gadgets: wait for the one that says what is not observed.
  await until('a status naming what is not observed', () => reins.statuses.some((s: { reason: string }) => /open and exec not observed/.test(s.reason)));
  const status = reins.statuses.find((s: { reason: string }) => /open and exec not observed/.test(s.reason));
  assert.equal(status.bpfLsm, 'unavailable');
  assert.match(status.reason, /bpf not listed in .*lsm/);
  assert.match(status.reason, /open and exec not observed: BPF-LSM is unavailable on this node/);
  await until('restarts', () => sensor.metrics.engineRestarts.trace_tcp >= 1);
  const calls = readFileSync(ig.calls, 'utf8');
  assert.doesNotMatch(calls, /trace_open|trace_exec/);

  const dir2 = mkdtempSync(join(tmpdir(), 'reins-sensor-live-'));
  const missing = await start(dir2, reins, 'bpf', join(dir2, 'no-such-ig'));
  await until('restarts of a missing binary', () => missing.metrics.engineRestarts.trace_dns >= 2);
  await until('the status naming it', () => reins.statuses.some((s) => /no-such-ig .* ended/.test(s.reason)));
});

test('RuntimePolicies: only the families with a monitor policy run, under its name and exclusions; a policy added starts its gadget, one removed stops it', async () => {
  const { startFakeKubeApi } = await import('../fakes/fake-kube-api.js');
  const api = await startFakeKubeApi({ crdServed: true });
  cleanup.push(() => api.close());
  const policy = (family: string, mode = 'monitor', exclude = ['kube-system', 'kube-public']) => ({
    apiVersion: 'runtime.reins.dev/v1',
    kind: 'RuntimePolicy',
    metadata: { name: `reins-observe-${family}`, labels: { 'app.kubernetes.io/managed-by': 'reins' } },
    spec: { mode, family, requiresBpfLsm: family === 'open' || family === 'exec', namespaceSelector: { excludeNamespaces: exclude }, match: [{ names: ['*'] }] },
  });
  // The network policy of this cluster also leaves out namespace eng: eng's connects are not observed.
  api.upsert('runtimepolicies', policy('network', 'monitor', ['kube-system', 'kube-public', 'eng']));
  api.upsert('runtimepolicies', { ...policy('dns'), metadata: { name: 'team-dns' } });
  api.upsert('runtimepolicies', policy('exec', 'enforce'));

  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-live-'));
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const ig = fakeIg(dir);
  writeFileSync(join(dir, 'lsm'), 'capability,bpf');
  const config = loadConfig(
    {
      REINS_URL: reins.url, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1',
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_LSM_PATH: join(dir, 'lsm'),
      IG_PATH: ig.path, IG_RESTART_MAX_SECONDS: '0.2', KUBECONFIG: api.kubeconfigPath, REINS_SENSOR_POLICY_SECONDS: '0.1',
    },
    { replays: [], once: false },
  );
  const sensor = await startSensor(config, () => {});
  cleanup.push(() => sensor.stop());
  await until('dns reports under the policy name', () => reins.reports.some((r) => r.observations.some((o: any) => o.family === 'dns' && o.rule === 'team-dns')));
  await until('a status naming what is not observed', () => reins.statuses.some((s) => /no monitor RuntimePolicy for open, exec: not observed/.test(s.reason) && /reins-observe-exec: mode enforce is not followed/.test(s.reason)));
  await until('eng connects left out by the network policy', () => sensor.metrics.eventsDropped['namespace-excluded'] > 0);
  assert.ok(!reins.reports.some((r) => r.observations.some((o: any) => o.family === 'network' && o.namespace === 'eng')));
  let calls = readFileSync(ig.calls, 'utf8');
  assert.doesNotMatch(calls, /trace_open|trace_exec/);

  api.upsert('runtimepolicies', policy('exec'));
  await until('trace_exec started', () => readFileSync(ig.calls, 'utf8').includes('/trace_exec:'));
  await until('exec reports', () => reins.reports.some((r) => r.observations.some((o: any) => o.family === 'exec' && o.rule === 'reins-observe-exec')));
  api.remove('runtimepolicies', '', 'team-dns');
  await until('dns no longer observed', () => reins.statuses.at(-1) !== undefined && /no monitor RuntimePolicy for dns, open: not observed/.test(reins.statuses.at(-1).reason));
  const before = readFileSync(ig.calls, 'utf8').split('\n').filter((l) => l.includes('/trace_dns:')).length;
  await new Promise((r) => setTimeout(r, 600)); // a fixed pause only to show nothing restarts it (restarts come every ≤ 0.2 s)
  calls = readFileSync(ig.calls, 'utf8');
  assert.equal(calls.split('\n').filter((l) => l.includes('/trace_dns:')).length, before, 'trace_dns is not restarted once its policy is gone');
});
