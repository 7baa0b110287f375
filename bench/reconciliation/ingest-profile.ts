/**
 * The replica's own work per sensor report, stage by stage, without HTTP or PostgreSQL: the benchmark's reports
 * (cluster-model.ts, BENCH_WORKLOADS) parsed, validated (the route's compiled schema), cleaned and checked (RuntimeGuard.ingestReport), made
 * into the store's parameter, and their rows added to an ObservationIndex as the table tail adds them. CPU
 * microseconds per observation for each stage, the distinct tuples per row, and the GC time by kind.
 *
 *   BENCH_WORKLOADS=2000 node --import tsx bench/reconciliation/ingest-profile.ts [--observations N]
 */
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Compile } from 'typebox/compile';
import { SensorReport } from '../../src/runtime-guard/contract.js';
import { checkReport, cleanReport, storableAsSent } from '../../src/runtime-guard/ingest.js';
import { GROUP_KEY_COLUMNS, ObservationIndex, REST_KEY_COLUMNS } from '../../src/runtime-guard/observation-index.js';
import { storableParams } from '../../src/store/storable.js';
import { nestedTooDeep } from '../../src/shared/json-depth.js';
import { buildModel, rng, reportBody } from './cluster-model.js';

const { values: args } = parseArgs({ options: { observations: { type: 'string', default: '300000' } } });
const OBSERVATIONS = Number(args.observations);
const REPORT = 500;

const model = buildModel();
const random = rng(100);
const reports = OBSERVATIONS / REPORT;
const perNode = Math.ceil(reports / model.nodes.length);
const end = 1_790_000_000;
const start = end - 23 * 3600 - 50 * 60;
const slice = (end - start) / perNode;
const bodies: string[] = [];
for (let s = 0; s < perNode && bodies.length < reports; s++) {
  for (let n = 0; n < model.nodes.length && bodies.length < reports; n++) {
    const from = Math.floor(start + s * slice);
    bodies.push(reportBody(model, n, REPORT, from, from + Math.floor(slice), random));
  }
}

const gc = new Map<string, number>();
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = String((e as unknown as { detail: { kind: number } }).detail.kind);
    gc.set(kind, (gc.get(kind) ?? 0) + e.duration);
  }
}).observe({ entryTypes: ['gc'] });

const check = Compile(SensorReport);
const index = new ObservationIndex();
const stages = new Map<string, number>();
// CPU time, not wall time: the machine is shared.
const now = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const lap = (name: string, t0: number): number => {
  const t = now();
  stages.set(name, (stages.get(name) ?? 0) + t - t0);
  return t;
};
const cpu0 = process.cpuUsage();
const t0 = performance.now();
for (const body of bodies) {
  let t = now();
  const report = JSON.parse(body) as SensorReport;
  t = lap('JSON.parse', t);
  nestedTooDeep(report);
  if (!check.Check(report)) throw new Error('invalid');
  t = lap('schema', t);
  // As RuntimeGuard.ingestReport: a body with nothing to clean is stored as sent.
  const bytes = Buffer.from(body);
  const asSent = storableAsSent(bytes);
  if (!asSent) cleanReport(report);
  checkReport(report);
  t = lap('clean, checkReport', t);
  storableParams([report.node, asSent ? bytes : JSON.stringify(report.observations)]);
  t = lap('store parameter', t);
  // The tail: each row's two tuple keys as PostgreSQL builds them (concat_ws of GROUP_KEY_COLUMNS, REST_KEY_COLUMNS).
  const keys = report.observations.map((o) => {
    const row: Record<string, string> = { family: o.family, namespace: o.namespace, pod_name: o.podName, pod_ip: o.podIP, dest_ip: o.destIP, dest_name: o.destName, behavior: o.behavior, node: report.node, rule: o.rule, subject: o.subject, result: o.result, mode: o.mode };
    return [GROUP_KEY_COLUMNS.map((c) => row[c]).join('\u0001'), REST_KEY_COLUMNS.map((c) => row[c]).join('\u0001')] as const;
  });
  t = lap('(keys built, not a replica cost)', t);
  for (let i = 0; i < keys.length; i++) index.addKeyed(keys[i]![0], keys[i]![1], report.observations[i]!.count, report.observations[i]!.observedAt);
  lap('index addKeyed', t);
}
const wall = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
await new Promise((r) => setTimeout(r, 100)); // the GC entries are delivered asynchronously
console.log(`${model.nodes.length} nodes, ${bodies.length} reports, ${OBSERVATIONS} observations; body ${Math.round(bodies[0]!.length / 1024)} KB`);
console.log(`index: ${index.size} rows, ${index.tupleCount} tuples (${(index.tupleCount / index.size).toFixed(2)} per row), ${index.engineSlotCount} engine slots`);
for (const [name, ms] of stages) console.log(`${name.padEnd(34)} ${((ms * 1000) / OBSERVATIONS).toFixed(2).padStart(6)} µs/obs`);
console.log(`wall ${(wall / 1000).toFixed(2)} s, CPU ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s; GC ms by kind (1 scavenge, 2 mark-compact, 4 incremental, 8 weak): ${[...gc].map(([k, v]) => `${k}: ${v.toFixed(0)}`).join(', ')}`);
