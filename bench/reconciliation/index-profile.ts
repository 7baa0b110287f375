/**
 * The observation index's window sums alone (ObservationIndex.aggregate), on a day of rows shaped like the
 * benchmark's: `--rows` rows (default 5,000,000) over `--slots` engine slots (default 300,000, 5 per pod), their
 * observedAt spread over the last 24 h 10 min, in report order (each node's rows in time order, nodes interleaved).
 * Times the 24-hour and the 1-hour window, warm, the index's heap, and eviction as a replica runs it (once a minute,
 * the rows of the minute past the oldest: `evictions` of them, CPU p50 and max). `--index DIR` loads observation-index.ts from
 * another copy of src/runtime-guard (before/after, side by side in one run).
 *
 *   node --import tsx bench/reconciliation/index-profile.ts [--rows N] [--slots N] [--runs N] [--index DIR]
 */
import os from 'node:os';
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Observation, ReconciliationWindow } from '../../src/runtime-guard/types.js';
import { rng } from './cluster-model.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '5000000' },
    slots: { type: 'string', default: '300000' },
    runs: { type: 'string', default: '10' },
    index: { type: 'string' },
  },
});
const ROWS = Number(args.rows);
const SLOTS = Number(args.slots);
const RUNS = Number(args.runs);
const dir = resolve(args.index ?? new URL('../../src/runtime-guard/', import.meta.url).pathname);
const { ObservationIndex } = (await import(pathToFileURL(resolve(dir, 'observation-index.ts')).href)) as {
  ObservationIndex: new () => {
    /** Two keys (group, rest) since the tuples became pairs; one key (all twelve fields) before. */
    addKeyed(...args: [string, string, number, number] | [string, number, number]): void;
    aggregate(w: ReconciliationWindow): readonly Observation[];
    evictBefore(cutoffUnix: number): number;
    size: number;
  };
};

const NOW = 1_790_000_000;
const random = rng(5);
// A slot per (pod, destination): 5 destinations a pod, 1,000 nodes, keys as the store builds them.
const groups: string[] = [];
const rests: string[] = [];
for (let s = 0; s < SLOTS; s++) {
  const pod = Math.floor(s / 5);
  const node = pod % 1000;
  groups.push(['network', `team-${pod % 20}`, `svc-${pod}-abcde`, `10.${100 + (pod >> 16)}.${(pod >> 8) & 255}.${pod & 255}`, `10.96.10.${s % 5}`, '', 'tcp-connect'].join('\u0001'));
  rests.push([`node-${node}`, 'reins-monitor-network', '/app/server', 'allowed', 'monitor'].join('\u0001'));
}
const pairKeys = ObservationIndex.prototype.addKeyed.length === 4;
const heap0 = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
const index = new ObservationIndex();
const t0 = performance.now();
const start = NOW - 24 * 3600 - 600;
// Reports: a node's slice of time after another's, as run.ts sends them.
const slices = 10;
const perSlice = Math.ceil(ROWS / slices);
for (let slice = 0, added = 0; slice < slices; slice++) {
  const from = start + (slice * (NOW - start)) / slices;
  for (let i = 0; i < perSlice && added < ROWS; i++, added++) {
    const slot = Math.floor(random() * SLOTS);
    const count = 1 + Math.floor(random() * 20);
    const at = Math.floor(from + random() * ((NOW - start) / slices));
    if (pairKeys) index.addKeyed(groups[slot]!, rests[slot]!, count, at);
    else index.addKeyed(`${groups[slot]!}\u0001${rests[slot]!}`, count, at);
  }
}
const buildMs = performance.now() - t0;
const heapMb = (process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers - heap0) / 1048576;

/** Wall and CPU time (user + system: steadier on a shared machine) of warm aggregates, p50 and min. */
const time = (w: ReconciliationWindow) => {
  const ms: number[] = [];
  const cpu: number[] = [];
  let n = 0;
  for (let r = 0; r <= RUNS; r++) {
    const c = process.cpuUsage();
    const a = performance.now();
    n = index.aggregate(w).length;
    const used = process.cpuUsage(c);
    if (r > 0) {
      ms.push(performance.now() - a);
      cpu.push((used.user + used.system) / 1000);
    }
  }
  const stat = (v: number[]) => {
    v.sort((a, b) => a - b);
    return { p50: Math.round(v[Math.floor(v.length / 2)]! * 10) / 10, min: Math.round(v[0]! * 10) / 10 };
  };
  return { wall: stat(ms), cpu: stat(cpu), slots: n };
};
const day = time({ windowStartUnix: NOW - 24 * 3600, windowEndUnix: NOW });
const hour = time({ windowStartUnix: NOW - 3600, windowEndUnix: NOW });

// Eviction once a minute, as ObservationFeed runs it: each drops the next minute of the oldest rows.
const evictCpu: number[] = [];
let evicted = 0;
for (let m = 1; m <= 10; m++) {
  const c = process.cpuUsage();
  evicted += index.evictBefore(start + m * 60);
  const used = process.cpuUsage(c);
  evictCpu.push((used.user + used.system) / 1000);
}
evictCpu.sort((a, b) => a - b);
const eviction = { evictions: evictCpu.length, rowsDropped: evicted, cpuP50: Math.round(evictCpu[5]! * 10) / 10, cpuMax: Math.round(evictCpu.at(-1)! * 10) / 10 };
process.stdout.write(
  `${JSON.stringify({ load: os.loadavg()[0], index: dir, rows: index.size, slots: SLOTS, buildMs: Math.round(buildMs), heapMb: Math.round(heapMb), aggregate24h: day, aggregate1h: hour, eviction })}\n`,
);
