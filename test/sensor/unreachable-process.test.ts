/**
 * The sensor process while Reins is unreachable for a long stretch of a busy node: engine events keep coming (through
 * a named pipe, in the engine's shape), windows keep closing, and the send backlog stays bounded: reports beyond
 * REINS_SENSOR_MAX_QUEUED_REPORTS are given up and counted, every recorded item is accounted for (delivered or
 * counted lost), and the resident memory stops growing. Reins back (real HTTP): the backlog is delivered and the node
 * status resumes; the process never crashed.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fakeReins, type FakeReins } from './fake-reins.js';
import { unusedPort } from '../helpers/ports.js';

const WAIT_MS = 30_000;
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = new URL('../fixtures/ig/', import.meta.url);
const MAX_QUEUED = 4;
/** Items per report (the spec's limit). */
const REPORT = 500;
/** Distinct events per batch: a busy node's window, most of it discarded for want of room and counted. */
const BATCH = 4_000;

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > WAIT_MS) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const cleanup: Array<() => unknown> = [];
after(async () => {
  for (const c of cleanup.reverse()) await c();
});

const sample = (text: string, metric: string): number => {
  const m = new RegExp(`^${metric.replace(/[{}"=,]/g, (c) => `\\${c}`)} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : -1;
};

/** Resident memory of a process, MB, from /proc. */
const rssMB = (pid: number): number => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

test('Reins unreachable for a long time: the backlog and the memory stay bounded, every item is accounted for; back: delivered, status resumes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'reins-sensor-down-'));
  const fifo = join(dir, 'tcp.jsonl');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
  const reinsPort = await unusedPort();
  const metricsPort = await unusedPort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/sensor/main.ts', '--replay', fifo, '--source', 'trace_tcp'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '', REINS_URL: `http://127.0.0.1:${reinsPort}`, REINS_SENSOR_TOKEN: 'rs_test', NODE_NAME: 'node-a',
      METRICS_PORT: String(metricsPort), METRICS_HOST: '127.0.0.1', REINS_SENSOR_LSM_PATH: join(dir, 'no-lsm'),
      REINS_SENSOR_FLUSH_SECONDS: '0.1', REINS_SENSOR_STATUS_SECONDS: '0.1', REINS_SENSOR_MAX_QUEUED_REPORTS: String(MAX_QUEUED),
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  cleanup.push(() => child.exitCode === null && child.kill('SIGKILL'));
  let reins: FakeReins | null = null;
  cleanup.push(() => reins?.close());

  const metrics = async () => {
    try {
      return await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    } catch {
      return '';
    }
  };
  const template = JSON.parse(readFileSync(new URL('trace_tcp.jsonl', FIXTURES), 'utf8').split('\n')[0]!);
  const pipe = createWriteStream(fifo);
  cleanup.push(() => pipe.destroy());
  let written = 0;
  /** One batch of distinct connects (a destination never seen before each), as the engine prints them. */
  const writeBatch = async () => {
    const lines: string[] = [];
    for (let i = 0; i < BATCH; i++, written++) {
      lines.push(JSON.stringify({ ...template, timestamp: new Date().toISOString(), dst: { ...template.dst, addr: `34.${(written >> 16) & 255}.${(written >> 8) & 255}.${written & 255}` } }));
    }
    if (!pipe.write(lines.join('\n') + '\n')) await new Promise<void>((r) => pipe.once('drain', () => r()));
  };

  // Reins is down. Feed 100,000 distinct events, window after window.
  await writeBatch();
  await until('the sensor reading', async () => sample(await metrics(), 'reins_sensor_events_read_total{node="node-a",gadget="trace_tcp"}') === BATCH);
  let rssAfterFirstDrop = 0;
  let peakRss = 0;
  while (written < 100_000) {
    const text = await metrics();
    const backlogLost = sample(text, 'reins_sensor_observations_lost_total{node="node-a",cause="send-backlog"}');
    if (backlogLost > 0 && rssAfterFirstDrop === 0) rssAfterFirstDrop = rssMB(child.pid!);
    if (rssAfterFirstDrop > 0) peakRss = Math.max(peakRss, rssMB(child.pid!));
    await writeBatch();
    await until('the batch read', async () => sample(await metrics(), 'reins_sensor_events_read_total{node="node-a",gadget="trace_tcp"}') === written);
  }
  const down = await metrics();
  const recorded = sample(down, 'reins_sensor_observations_recorded_total{node="node-a"}');
  const lostBacklog = sample(down, 'reins_sensor_observations_lost_total{node="node-a",cause="send-backlog"}');
  const lostFull = sample(down, 'reins_sensor_observations_lost_total{node="node-a",cause="report-full"}');
  assert.ok(lostBacklog >= 20 * REPORT, `the backlog gave reports up (${lostBacklog} items)`);
  assert.equal(recorded, written, 'every event was a distinct item, each recorded');
  // What is still held: at most the queue and the open window.
  assert.ok(recorded - lostBacklog - lostFull <= (MAX_QUEUED + 1) * REPORT, `held ${recorded - lostBacklog - lostFull} items`);
  assert.ok(sample(down, 'reins_sensor_reports_failed_total{node="node-a"}') >= 1);
  assert.ok(sample(down, 'reins_sensor_status_failed_total{node="node-a"}') >= 1);
  // Memory: after the backlog filled, about 100,000 more distinct items came and went without the process growing
  // with them (holding them would take well over 40 MB).
  t.diagnostic(`${written} events while down; RSS ${rssAfterFirstDrop.toFixed(0)} MB at the first overflow, peak ${peakRss.toFixed(0)} MB after`);
  assert.ok(peakRss - rssAfterFirstDrop < 40, `RSS ${rssAfterFirstDrop.toFixed(0)} MB when the backlog first overflowed, peak ${peakRss.toFixed(0)} MB after ${written} events`);
  assert.equal(child.exitCode, null, 'still running');

  // Reins back: the status gets through, the backlog follows at once (no back-off wait), nothing else arrives later.
  reins = await fakeReins(reinsPort);
  await until('the node status resumed', () => reins!.statuses.length > 0);
  await until('the backlog delivered', async () => {
    const text = await metrics();
    const lost = ['send-backlog', 'report-full', 'refused'].reduce((n, c) => n + sample(text, `reins_sensor_observations_lost_total{node="node-a",cause="${c}"}`), 0);
    const delivered = reins!.reports.reduce((n, r) => n + r.observations.length, 0);
    return delivered > 0 && delivered + lost === sample(text, 'reins_sensor_observations_recorded_total{node="node-a"}');
  });
  assert.ok(reins.reports.length <= MAX_QUEUED + 1, `${reins.reports.length} reports: the queue and the last window`);
  assert.equal(reins.statuses.at(-1).sensorAlive, true);
  assert.match(stderr, /unreachable/);
  assert.match(stderr, /send backlog full/);

  pipe.end();
  child.kill('SIGTERM');
  assert.equal(await exited, 0, stderr.slice(-2000));
});
