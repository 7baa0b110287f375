/**
 * The RuntimePolicies are watched, not only re-listed: with the periodic re-list set to an hour, a policy added,
 * removed, or changed still applies within seconds, through the watch on the fake Kubernetes API server. A watch the
 * server ends (its timeout) or expires (410 Gone after a compaction) is re-opened; one the API server refuses leaves
 * the sensor on its periodic list.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/sensor/config.js';
import { startSensor } from '../../src/sensor/sensor.js';
import { startFakeKubeApi } from '../fakes/fake-kube-api.js';
import { fakeReins } from './fake-reins.js';

const WAIT_MS = 30_000;

async function until(what: string, check: () => boolean): Promise<void> {
  const started = Date.now();
  while (!check()) {
    if (Date.now() - started > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** An `ig` that records how it was started and then runs quietly until stopped, as a healthy engine does. */
function quietIg(dir: string): { path: string; started: (gadget: string) => number } {
  const calls = join(dir, 'calls.log');
  const path = join(dir, 'ig');
  writeFileSync(path, `#!${process.execPath}\nrequire('node:fs').appendFileSync(${JSON.stringify(calls)}, process.argv.slice(2).join(' ') + '\\n');\nsetInterval(() => {}, 1000);\nprocess.on('SIGTERM', () => process.exit(0));\n`);
  chmodSync(path, 0o755);
  writeFileSync(calls, '');
  return { path, started: (g) => readFileSync(calls, 'utf8').split('\n').filter((l) => l.includes(`/${g}:`)).length };
}

const cleanup: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const policy = (family: string) => ({
  apiVersion: 'runtime.reins.dev/v1',
  kind: 'RuntimePolicy',
  metadata: { name: `reins-observe-${family}` },
  spec: { mode: 'monitor', family, namespaceSelector: { excludeNamespaces: ['kube-system', 'kube-public'] }, match: [{ names: ['*'] }] },
});

test('a policy added, removed or re-added after the watch was ended or expired applies at once; the re-list is an hour away', async () => {
  const api = await startFakeKubeApi({ crdServed: true });
  cleanup.push(() => api.close());
  api.upsert('runtimepolicies', policy('dns'));
  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-watch-'));
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const ig = quietIg(dir);
  writeFileSync(join(dir, 'lsm'), 'capability,bpf');
  const config = loadConfig(
    {
      REINS_URL: reins.url, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1',
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_LSM_PATH: join(dir, 'lsm'),
      IG_PATH: ig.path, KUBECONFIG: api.kubeconfigPath, REINS_SENSOR_POLICY_SECONDS: '3600',
    },
    { replays: [], once: false },
  );
  const sensor = await startSensor(config, () => {});
  cleanup.push(() => sensor.stop());
  const lastReason = () => reins.statuses.at(-1)?.reason ?? '';

  await until('trace_dns started and the policies watched', () => ig.started('trace_dns') === 1 && api.watchCount('runtimepolicies') === 1);
  assert.equal(ig.started('trace_tcp'), 0);

  api.upsert('runtimepolicies', policy('network'));
  await until('trace_tcp started by the watch', () => ig.started('trace_tcp') === 1);

  // The server ends the watch (its timeout): it is re-opened, and the next change still arrives.
  api.closeWatches('runtimepolicies');
  await until('the watch re-opened', () => api.watchCount('runtimepolicies') === 1);
  api.remove('runtimepolicies', '', 'reins-observe-dns');
  await until('dns no longer observed', () => /no monitor RuntimePolicy for dns, open, exec: not observed/.test(lastReason()));

  // The event history is compacted and the watch ended: re-opened from a too-old resourceVersion it gets 410 Gone,
  // and the sensor lists again and watches from the new list.
  api.compact();
  api.closeWatches('runtimepolicies');
  await until('the watch re-opened after 410', () => api.watchCount('runtimepolicies') === 1);
  api.upsert('runtimepolicies', policy('exec'));
  await until('trace_exec started', () => ig.started('trace_exec') === 1);
  assert.equal(ig.started('trace_dns'), 1, 'trace_dns was never restarted');
  const lists = api.requests.filter((r) => r.path.endsWith('/runtimepolicies') && !r.watch).length;
  assert.ok(lists <= 12, `each change costs one list, not a poll loop (${lists} lists)`);
});

test('an API server that refuses the watch: the sensor keeps following the policies by listing them', async () => {
  const api = await startFakeKubeApi({ crdServed: true });
  cleanup.push(() => api.close());
  api.denyAccess({ verb: 'watch', group: 'runtime.reins.dev', resource: 'runtimepolicies' });
  api.upsert('runtimepolicies', policy('dns'));
  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-watch-'));
  const reins = await fakeReins();
  cleanup.push(() => reins.close());
  const ig = quietIg(dir);
  writeFileSync(join(dir, 'lsm'), 'capability');
  const config = loadConfig(
    {
      REINS_URL: reins.url, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a', METRICS_PORT: '0', METRICS_HOST: '127.0.0.1',
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_LSM_PATH: join(dir, 'lsm'),
      IG_PATH: ig.path, KUBECONFIG: api.kubeconfigPath, REINS_SENSOR_POLICY_SECONDS: '0.2',
    },
    { replays: [], once: false },
  );
  const sensor = await startSensor(config, () => {});
  cleanup.push(() => sensor.stop());
  await until('trace_dns started', () => ig.started('trace_dns') === 1);
  await until('a refused watch', () => api.requests.some((r) => r.path.endsWith('/runtimepolicies') && r.watch && r.status === 403));
  api.upsert('runtimepolicies', policy('network'));
  await until('trace_tcp started by a list', () => ig.started('trace_tcp') === 1);
  assert.equal(api.watchCount('runtimepolicies'), 0);
});
