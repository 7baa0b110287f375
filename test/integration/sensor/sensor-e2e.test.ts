/**
 * reins-sensor end to end, no mock between the parts: the real sensor process (`--replay … --source …`) fed the
 * engine's recorded output (test/fixtures/ig, timestamps moved to now), a running Reins replica (real HTTP, a
 * sensor token) whose runtime guard runs on the fake Kubernetes API server with the matching pods, and Reins
 * scraping the sensor's own metrics endpoint for the ingest lag.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRuntimeCluster } from '../../../src/runtime-guard/kube/runtime-cluster.js';
import type { Replica } from '../../../src/app/server.js';
import { startFakeKubeApi, type FakeKubeApi } from '../../fakes/fake-kube-api.js';
import { ADMIN_TOKEN, Client, describeEachStore, WAIT_MS, waitFor } from '../../helpers/harness.js';
import { mintSensorToken, startGuardReplica } from '../runtime-guard/helpers.js';
import { FAST, seedCluster } from '../runtime-guard/kube-helpers.js';
import { unusedPort } from '../../helpers/ports.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURES = new URL('../../fixtures/ig/', import.meta.url);
/** The fixtures' first timestamp (2026-08-27T07:42:41Z). */
const T0 = 1787816561;

/** A fixture with its event times moved so that its first second is `startUnix`. */
function recentFixture(dir: string, name: string, startUnix: number): string {
  const lines = readFileSync(new URL(`${name}.jsonl`, FIXTURES), 'utf8').split('\n').filter(Boolean);
  const moved = lines.map((l) => {
    const e = JSON.parse(l);
    const at = Math.floor(Date.parse(e.timestamp) / 1000) - T0 + startUnix;
    e.timestamp = new Date(at * 1000).toISOString();
    return JSON.stringify(e);
  });
  const path = join(dir, `${name}.jsonl`);
  writeFileSync(path, moved.join('\n') + '\n');
  return path;
}

/** `count` distinct connects of eng/agent's pod (one destination each), in the engine's shape. */
function distinctConnects(dir: string, count: number, atUnix: number): string {
  const template = JSON.parse(readFileSync(new URL('trace_tcp.jsonl', FIXTURES), 'utf8').split('\n')[0]!);
  const lines = Array.from({ length: count }, (_, i) =>
    JSON.stringify({ ...template, timestamp: new Date(atUnix * 1000).toISOString(), dst: { ...template.dst, addr: `34.${100 + (i >> 8)}.${i & 255}.7` } }),
  );
  const path = join(dir, `connects-${count}.jsonl`);
  writeFileSync(path, lines.join('\n') + '\n');
  return path;
}

interface SensorProcess {
  child: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
}

function startSensor(args: string[], env: Record<string, string>): SensorProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/sensor/main.ts', ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', REINS_SENSOR_LSM_PATH: '/nonexistent/lsm', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, exited, stderr: () => stderr };
}

/** Waits for the sensor's start-up line, so that a slow start on a loaded machine does not eat the next wait. */
async function started(s: SensorProcess): Promise<void> {
  const up = await waitFor(() => /reporting to /.test(s.stderr()) || s.child.exitCode !== null, WAIT_MS, 20);
  assert.ok(up >= 0, `the sensor started; it said: ${s.stderr()}`);
}

async function stopSensor(s: SensorProcess | undefined): Promise<number | null> {
  if (!s) return null;
  if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGTERM');
  return s.exited;
}

/** A TCP relay to Reins that the test takes down (connections refused) and brings back on the same port. */
class Relay {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();
  constructor(readonly port: number, private readonly target: number) {}
  async up(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
  }
  async down(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const scrapeText = async (port: number): Promise<string> => {
  try {
    return await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  } catch {
    return '';
  }
};
const sample = (text: string, metric: string): number => {
  const m = new RegExp(`^${metric.replace(/[{}"=,]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : -1;
};

describeEachStore('reins-sensor end to end', ({ store }) => {
  let api: FakeKubeApi;
  let replica: Replica;
  let admin: Client;
  let token: string;
  let dir: string;
  let portA: number;
  let portB: number;
  const sensors: SensorProcess[] = [];
  const now = () => Math.floor(Date.now() / 1000);
  const sensorEnv = (node: string, metricsPort: number, extra: Record<string, string> = {}) => ({
    REINS_URL: replica.url,
    REINS_SENSOR_TOKEN: token,
    NODE_NAME: node,
    METRICS_PORT: String(metricsPort),
    METRICS_HOST: '127.0.0.1',
    ...extra,
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'reins-sensor-e2e-'));
    api = await startFakeKubeApi({ crdServed: true });
    seedCluster(api);
    portA = await unusedPort();
    portB = await unusedPort();
    replica = await startGuardReplica(store(), {
      env: { KUBECONFIG: api.kubeconfigPath },
      runtimeGuard: { sensor: { metricsTargets: [`http://127.0.0.1:${portA}/metrics`, `http://127.0.0.1:${portB}/metrics`], scrapeIntervalSeconds: 1 } },
      cluster: (input) => startRuntimeCluster({ ...input, ...FAST }),
    });
    admin = new Client(replica.url, ADMIN_TOKEN);
    token = await mintSensorToken(admin);
    const ready = await waitFor(async () => {
      const [status, rec] = await Promise.all([admin.get('/api/v1/runtime/status'), admin.get('/api/v1/runtime/reconciliation')]);
      return status.body.probedAtUnix > 0 && rec.body.networkDetectorDisabled === false;
    }, WAIT_MS, 50);
    assert.ok(ready >= 0, 'the cluster side became ready');
  });
  after(async () => {
    for (const s of sensors) await stopSensor(s);
    await replica?.close();
    await api?.close();
  });

  const storedFor = async (node: string): Promise<number> =>
    (await replica.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runtime_observations WHERE node = $1', [node])).rows[0]!.n;

  test('replayed DNS and TCP events: the reconciliation shows exactly the expected rows and destinations; lag 0', async () => {
    const start = now() - 30;
    const dns = recentFixture(dir, 'trace_dns', start);
    const tcp = recentFixture(dir, 'trace_tcp', start);
    // Not --once: it keeps running (metrics served for the scrape) and flushes what it read at the end of the files.
    // A third pair: bad engine output (a truncated line, a log line, unknown events, missing fields), skipped and counted.
    const bad = fileURLToPath(new URL('bad-lines.jsonl', FIXTURES));
    const sensor = startSensor(
      ['--replay', dns, '--source', 'trace_dns', '--replay', tcp, '--source', 'trace_tcp', '--replay', bad, '--source', 'trace_tcp'],
      sensorEnv('node-a', portA, { REINS_SENSOR_FLUSH_SECONDS: '600' }),
    );
    sensors.push(sensor);
    await started(sensor);
    // 6 DNS items + 2 distinct connects of eng/agent (one of them twice) + the host-network pod's connect.
    assert.ok((await waitFor(async () => (await storedFor('node-a')) === 9, WAIT_MS, 50)) >= 0, `stored; sensor said: ${sensor.stderr()}`);
    const metrics = await scrapeText(portA);
    assert.equal(sample(metrics, 'reins_sensor_observations_recorded_total{node="node-a"}'), 9);
    assert.equal(sample(metrics, 'reins_sensor_events_read_total{node="node-a",gadget="trace_dns"}'), 16);
    assert.equal(sample(metrics, 'reins_sensor_events_dropped_total{node="node-a",cause="ipv6"}'), 4);
    assert.equal(sample(metrics, 'reins_sensor_reports_sent_total{node="node-a"}'), 1);
    assert.equal(sample(metrics, 'reins_sensor_events_dropped_total{node="node-a",cause="bad-json"}'), 2);
    assert.equal(sample(metrics, 'reins_sensor_events_dropped_total{node="node-a",cause="unknown-event"}'), 3);
    assert.equal(sample(metrics, 'reins_sensor_events_dropped_total{node="node-a",cause="missing-fields"}'), 1);
    assert.equal(sensor.child.exitCode, null, 'still running after the files ended (no --once)');

    const lagZero = await waitFor(async () => {
      const lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
      // The second target (node-b's sensor, started by the next test) is not up yet: its error is expected, node-a's is not.
      return !lag.scrapeError.includes(`:${portA}/`) && lag.perNode.some((n: any) => n.node === 'node-a' && n.recorded === 9 && n.stored === 9 && n.lag === 0) && lag.lag === 0;
    }, WAIT_MS, 100);
    assert.ok(lagZero >= 0, JSON.stringify((await admin.get('/api/v1/runtime/status')).body.ingestLag));
    const node = (await admin.get('/api/v1/runtime/status')).body.nodes.find((n: any) => n.node === 'node-a');
    assert.equal(node.sensorAlive, true);
    assert.equal(node.bpfLsm, 'unknown');
    assert.match(node.reason, /cannot read \/nonexistent\/lsm/);

    await new Promise((r) => setTimeout(r, 1100)); // the window ends at a whole second
    const rec = (await admin.get('/api/v1/runtime/reconciliation')).body;
    const rows = Object.fromEntries(rec.rows.map((r: any) => [r.workloadKey, r]));
    assert.deepEqual(Object.keys(rows).sort(), ['eng/CronJob/nightly', 'eng/Deployment/agent', 'monitoring/Pod/node-agent-x1']);
    const agent = rows['eng/Deployment/agent'];
    const byName = (d: any) => `${d.source}:${d.destName}|${d.destIP}|${d.suppressed ? d.suppressReason : d.kind}`;
    assert.deepEqual(agent.destinations.map(byName).sort(), [
      'dns:245.140.159.162.in-addr.arpa||reverse-dns',
      // The three variants the sensor reported one by one, folded by Reins into the name they expand.
      'dns:api.openai.com||search-domain-expansion',
      'network:api.openai.com|162.159.140.245|provider',
      'network:kube-dns.kube-system.svc.cluster.local|10.96.0.10|coredns',
    ].sort(), JSON.stringify(agent.destinations));
    assert.equal(agent.destinations.find((d: any) => d.suppressReason === 'search-domain-expansion').count, 3);
    assert.equal(agent.bypassedDestinations, 1);
    const openai = agent.destinations.find((d: any) => d.destIP === '162.159.140.245');
    assert.equal(openai.rung, 'R0', 'named from the pod\'s own DNS answer');
    assert.equal(openai.count, 2);
    assert.equal(rows['eng/CronJob/nightly'].dnsOnly, true);
    assert.deepEqual(rows['eng/CronJob/nightly'].destinations.map(byName), ['dns:api.anthropic.com||provider']);
  });

  test('700 distinct events in one flush window: 500 stored, 200 discarded, and the lag shows 200', async () => {
    const file = distinctConnects(dir, 700, now() - 5);
    const sensor = startSensor(['--replay', file, '--source', 'trace_tcp'], sensorEnv('node-b', portB, { REINS_SENSOR_FLUSH_SECONDS: '600' }));
    sensors.push(sensor);
    await started(sensor);
    assert.ok((await waitFor(async () => (await storedFor('node-b')) === 500, WAIT_MS, 50)) >= 0, `stored; sensor said: ${sensor.stderr()}`);
    const metrics = await scrapeText(portB);
    assert.equal(sample(metrics, 'reins_sensor_observations_recorded_total{node="node-b"}'), 700);
    assert.equal(sample(metrics, 'reins_sensor_observations_lost_total{node="node-b",cause="report-full"}'), 200);
    const lagged = await waitFor(async () => {
      const lag = (await admin.get('/api/v1/runtime/status')).body.ingestLag;
      return lag.lag === 200 && lag.perNode.some((n: any) => n.node === 'node-b' && n.recorded === 700 && n.stored === 500 && n.lag === 200);
    }, WAIT_MS, 100);
    assert.ok(lagged >= 0, JSON.stringify((await admin.get('/api/v1/runtime/status')).body.ingestLag));
    assert.equal((await admin.get('/api/v1/runtime/reconciliation')).body.ingestLag.lag, 200);
    // Never sent later: the discarded items stay discarded.
    assert.equal(await storedFor('node-b'), 500);
    assert.equal(await stopSensor(sensor), 0, 'SIGTERM: flushed and exited 0');
    assert.equal(await storedFor('node-b'), 500);
  });

  test('--once: flushes, sends the node status, exits 0 at the end of the files', async () => {
    const file = recentFixture(dir, 'trace_exec', now() - 10);
    const sensor = startSensor(['--replay', file, '--source', 'trace_exec', '--once'], sensorEnv('node-c', 0));
    sensors.push(sensor);
    await started(sensor);
    assert.equal(await sensor.exited, 0, sensor.stderr());
    const rows = await replica.db.query<{ family: string; subject: string; dest_name: string }>(
      "SELECT family, subject, dest_name FROM runtime_observations WHERE node = 'node-c' ORDER BY subject",
    );
    assert.deepEqual(rows.rows, [
      { family: 'exec', subject: '/usr/bin/curl', dest_name: 'curl -s https://api.openai.com/v1/models' },
      { family: 'exec', subject: '/usr/local/bin/python3.12', dest_name: '/usr/local/bin/python3 agent.py' },
    ]);
    const node = (await admin.get('/api/v1/runtime/status')).body.nodes.find((n: any) => n.node === 'node-c');
    assert.equal(node?.sensorAlive, true);
  });

  test('Reins unreachable for a while, then back: no crash, the sensor keeps its reports and its status resumes', async () => {
    const relay = new Relay(await unusedPort(), Number(new URL(replica.url).port));
    const file = recentFixture(dir, 'trace_open', now() - 10);
    const sensor = startSensor(['--replay', file, '--source', 'trace_open'], {
      ...sensorEnv('node-d', 0),
      REINS_URL: `http://127.0.0.1:${relay.port}`,
      REINS_SENSOR_FLUSH_SECONDS: '0.2',
      REINS_SENSOR_STATUS_SECONDS: '0.2',
    });
    sensors.push(sensor);
    const port = await (async () => {
      let found = -1;
      await waitFor(() => {
        const m = /metrics on :(\d+)/.exec(sensor.stderr());
        if (m) found = Number(m[1]);
        return found > 0;
      }, WAIT_MS, 20);
      return found;
    })();
    assert.ok(port > 0, sensor.stderr());
    const failedEnough = await waitFor(async () => {
      const text = await scrapeText(port);
      return sample(text, 'reins_sensor_reports_failed_total{node="node-d"}') >= 2 && sample(text, 'reins_sensor_status_failed_total{node="node-d"}') >= 2;
    }, WAIT_MS, 50);
    assert.ok(failedEnough >= 0, sensor.stderr());
    assert.equal(sensor.child.exitCode, null, 'still running');
    assert.equal(await storedFor('node-d'), 0);

    await relay.up();
    try {
      assert.ok((await waitFor(async () => (await storedFor('node-d')) === 2, WAIT_MS, 50)) >= 0, sensor.stderr());
      const alive = await waitFor(async () => {
        const node = (await admin.get('/api/v1/runtime/status')).body.nodes.find((n: any) => n.node === 'node-d');
        return node?.sensorAlive === true;
      }, WAIT_MS, 50);
      assert.ok(alive >= 0);
      assert.match(sensor.stderr(), /unreachable/);
      assert.match(sensor.stderr(), /delivered again/);
      assert.equal(await stopSensor(sensor), 0);
      // Stopped, it says so: Reins shows the node's sensor not running rather than waiting for the status to go stale.
      const stopped = (await admin.get('/api/v1/runtime/status')).body.nodes.find((n: any) => n.node === 'node-d');
      assert.equal(stopped.sensorAlive, false);
      assert.match(stopped.reason, /not running.*stopped \(SIGTERM or SIGINT\)/);
    } finally {
      await relay.down();
    }
  });
});
