/**
 * The reconciliation engine alone, on the input the full benchmark hands it: the same day of sensor reports
 * (cluster-model.ts, the same seeds and slicing as run.ts) summed by an ObservationIndex as a replica does, cluster
 * facts shaped as the informers build them from the fake Kubernetes API's objects (the Deployment objects included), and the same governed-call audit
 * events summed by a GovernedCallIndex. Times `reconcile()` cold (its first run in this process) and warm, and the
 * steps around it (aggregate, governed calls, JSON.stringify), without PostgreSQL, HTTP or the other processes.
 *
 *   node --import tsx bench/reconciliation/engine-profile.ts [--runs N] [--observations N] [--engine DIR] [--warm-up]
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/reconciliation/engine-profile.ts
 *
 * `--engine DIR` loads `reconciliation.ts` from another copy of src/runtime-guard (a before/after comparison);
 * `--warm-up` runs the replica's start-up warm-up (warm-up.ts `warmUpAnswerPath`) first. Like the replica, the warm
 * answers reuse the rows of the previous one through a RowMemo and write reused rows' JSON once (answer-json.ts),
 * when that copy has them; `--fresh` builds every row and writes all the JSON on every run (the engine's own cost);
 * `--churn` hands every warm run facts with one pod more than the last (a new pods array, as the informers hand out
 * after a pod is added: a large cluster changes some pod every few seconds). The output's sha256 is printed:
 * an optimisation must not change it. Building the input takes half a minute; the summed rows are kept in
 * $TMPDIR/reins-engine-input-<observations>-<audit events>.json and read back on the next run (`--rebuild` to redo).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { GovernedCallIndex } from '../../src/runtime-guard/governed-calls.js';
import { ObservationIndex } from '../../src/runtime-guard/observation-index.js';
import type { GovernedCallType } from '../../src/shared/governed-call.js';
import type { ClusterFacts, GovernedCall, Observation, ReconcileInput, ReconciliationResult } from '../../src/runtime-guard/types.js';
import { resolveWindow } from '../../src/runtime-guard/window.js';
import { auditEvents, buildModel, DEFAULT_OBSERVATIONS, IN_CLUSTER_SERVICES, nodeAddress, reportBody, rng, WORKLOADS, type ClusterModel } from './cluster-model.js';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    observations: { type: 'string', default: String(DEFAULT_OBSERVATIONS) },
    'audit-events': { type: 'string', default: '100000' },
    engine: { type: 'string' },
    'warm-up': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
    rebuild: { type: 'boolean', default: false },
    fresh: { type: 'boolean', default: false },
    churn: { type: 'boolean', default: false },
  },
});
const RUNS = Number(args.runs);
const OBSERVATIONS = Number(args.observations);
const AUDIT_EVENTS = Number(args['audit-events']);
const REPORT_SIZE = 500;
const SENDERS = 8;
/** A fixed "now": the same input on every run. */
const NOW_UNIX = 1_790_000_000;

type Engine = { reconcile: (input: ReconcileInput, memo?: unknown) => ReconciliationResult; RowMemo?: new () => unknown };
const engineDir = resolve(args.engine ?? new URL('../../src/runtime-guard/', import.meta.url).pathname);
const engine = (await import(pathToFileURL(resolve(engineDir, 'reconciliation.ts')).href)) as Engine;
const rowMemo = !args.fresh && engine.RowMemo ? new engine.RowMemo() : undefined;
const toJson: (data: unknown) => string = args.fresh
  ? JSON.stringify
  : await import(pathToFileURL(resolve(engineDir, 'answer-json.ts')).href).then(
      (m: { answerJson: (data: unknown) => string }) => m.answerJson,
      () => JSON.stringify,
    );
/** The replica's warm-up at start (warm-up.ts), when that copy has one. */
const warmUp = args['warm-up']
  ? ((await import(pathToFileURL(resolve(engineDir, 'warm-up.ts')).href)) as { warmUpAnswerPath?: () => void }).warmUpAnswerPath
  : undefined;

const serviceIp = (i: number): string => `10.96.${10 + Math.floor(i / 250)}.${(i % 250) + 1}`;

/** The facts the informers build from cluster-model.ts's seedKube objects (kube/cluster-facts.ts field by field). */
function modelFacts(model: ClusterModel, nowUnix: number): ClusterFacts {
  const replicaSets = new Map<string, ClusterFacts['replicaSets'][number]>();
  const pods = model.pods.map((pod) => {
    const rs = pod.name.slice(0, pod.name.lastIndexOf('-'));
    const deployment = rs.slice(0, rs.lastIndexOf('-'));
    if (!replicaSets.has(`${pod.namespace}/${rs}`)) {
      replicaSets.set(`${pod.namespace}/${rs}`, { namespace: pod.namespace, name: rs, ownerReferences: [{ kind: 'Deployment', name: deployment, controller: true }] });
    }
    return {
      namespace: pod.namespace,
      name: pod.name,
      ip: pod.ip,
      node: pod.node,
      containers: [{ name: 'app', image: 'example/app:1' }],
      ownerReferences: [{ kind: 'ReplicaSet', name: rs, controller: true }],
    };
  });
  const services = [
    { namespace: 'default', name: 'kubernetes', clusterIPs: ['10.96.0.1'] },
    { namespace: 'kube-system', name: 'kube-dns', clusterIPs: ['10.96.0.10'] },
    { namespace: 'reins', name: 'reins', clusterIPs: ['10.96.7.7'] },
    ...Array.from({ length: IN_CLUSTER_SERVICES }, (_, i) => ({ namespace: 'shared', name: `backend-${i}`, clusterIPs: [serviceIp(i)] })),
  ];
  return {
    fetchedAtUnix: nowUnix,
    complete: true,
    pods,
    replicaSets: [...replicaSets.values()],
    jobs: [],
    // The Deployment objects themselves (the informers list them so that a workload with no pod has its row too).
    workloads: [...new Set([...replicaSets.values()].map((rs) => `${rs.namespace}/${rs.ownerReferences[0]!.name}`))].map((key) => {
      const [namespace, name] = key.split('/') as [string, string];
      return { namespace, kind: 'Deployment', name };
    }),
    services,
    endpointSlices: [{ namespace: 'default', serviceName: 'kubernetes', endpoints: [{ addresses: ['172.20.5.5'] }] }],
    nodes: model.nodes.map((name, i) => ({ name, addresses: [nodeAddress(i), name] })),
    apiServerAddresses: ['127.0.0.1'],
    clusterDnsAddresses: ['10.96.0.10'],
    selfService: { namespace: 'reins', name: 'reins' },
    selfPods: [],
  };
}

/** run.ts's ingest, report for report: each sender's share of the nodes, slice by slice, with its own seed. */
function modelObservations(model: ClusterModel, index: ObservationIndex, startUnix: number, endUnix: number): void {
  const reports = Math.ceil(OBSERVATIONS / REPORT_SIZE);
  const perNode = Math.ceil(reports / model.nodes.length);
  const sliceSeconds = (endUnix - startUnix) / perNode;
  let sent = 0;
  for (let s = 0; s < SENDERS; s++) {
    const random = rng(100 + s);
    for (let slice = 0; slice < perNode; slice++) {
      for (let n = s; n < model.nodes.length; n += SENDERS) {
        if (sent >= reports) break;
        sent += 1;
        const from = Math.floor(startUnix + slice * sliceSeconds);
        const body = JSON.parse(reportBody(model, n, REPORT_SIZE, from, Math.max(from + 1, Math.floor(from + sliceSeconds)), random)) as {
          observations: Omit<Observation, 'podIP'>[];
        };
        for (const o of body.observations) index.add(o as Observation);
      }
    }
  }
}

/** run.ts's audit events (rng(11)), summed per (type, identity, host) as GovernedCallFeed does. */
function modelCalls(model: ClusterModel, calls: GovernedCallIndex, startUnix: number, endUnix: number): void {
  for (const [type, subject, host, at] of auditEvents(model, AUDIT_EVENTS, startUnix, endUnix)) calls.add(type as GovernedCallType, subject, host, at);
}

const round = (n: number): number => Math.round(n * 10) / 10;
const pct = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!;

const t0 = performance.now();
const model = buildModel();
const endUnix = NOW_UNIX - 600;
const startUnix = endUnix - 23 * 3600 - 50 * 60;
const index = new ObservationIndex();
const calls = new GovernedCallIndex();
let rowsRepresented = 0;
let fromCache = false;
// "m2": the healthy-cluster model (README.md, "The model"); the earlier model's caches are not reused.
const cachePath = join(tmpdir(), `reins-engine-input-m2-${OBSERVATIONS}-${AUDIT_EVENTS}-w${WORKLOADS}.json`);
if (!args.rebuild && existsSync(cachePath)) {
  // The window's sums stand for the rows: one row per engine slot and per call tuple gives the same aggregate.
  const cached = JSON.parse(readFileSync(cachePath, 'utf8')) as { rows: number; observations: Observation[]; calls: GovernedCall[] };
  for (const o of cached.observations) index.add(o);
  for (const c of cached.calls) for (let k = 0; k < c.count!; k++) calls.add(c.type, c.identityId!, c.host ?? null, c.atUnix);
  rowsRepresented = cached.rows;
  fromCache = true;
} else {
  modelObservations(model, index, startUnix, endUnix);
  modelCalls(model, calls, startUnix, endUnix);
  rowsRepresented = index.size;
  const w = resolveWindow(NOW_UNIX, '24h');
  writeFileSync(cachePath, JSON.stringify({ rows: index.size, observations: index.aggregate(w), calls: calls.aggregate(w) }));
}
const facts = modelFacts(model, NOW_UNIX);
const window = resolveWindow(NOW_UNIX, '24h');
const setupMs = performance.now() - t0;

if (args['warm-up']) {
  if (!warmUp) throw new Error(`--warm-up: ${engineDir}/warm-up.ts has no warmUpAnswerPath`);
  const w0 = performance.now();
  warmUp();
  process.stderr.write(`warm-up ${round(performance.now() - w0)} ms\n`);
}

/** Garbage-collection pauses (main thread), to tell allocation cost from the engine's own work. */
const gcPauses: Array<{ start: number; duration: number }> = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gcPauses.push({ start: entry.startTime, duration: entry.duration });
}).observe({ entryTypes: ['gc'] });
const gcWithin = (from: number, to: number): number =>
  gcPauses.filter((p) => p.start >= from && p.start <= to).reduce((sum, p) => sum + p.duration, 0);

interface Run {
  aggregate: number;
  calls: number;
  engine: number;
  /** CPU time of the process (user + system, GC threads included) during `reconcile`: steadier than wall time on a shared machine. */
  engineCpu: number;
  /** Main-thread GC pauses that began during `reconcile` (observed after the run: filled in below). */
  engineGc: number;
  stringify: number;
}
const runs: Run[] = [];
let hash = '';
let slots = 0;
let rows = 0;
let bytes = 0;
for (let i = 0; i <= RUNS; i++) {
  const a0 = performance.now();
  const observations = index.aggregate(window);
  const a1 = performance.now();
  const governedCalls = calls.aggregate(window);
  const cpu = process.cpuUsage();
  const a2 = performance.now();
  // The replica's facts() is a new object per request over arrays kept while nothing changed.
  if (args.churn && i > 0) {
    // A pod added (scaled up) on a new address: a new pods array, nothing the observations read changed.
    const template = facts.pods[i % facts.pods.length]!;
    facts.pods = [...facts.pods, { ...template, name: `${template.name}-scaled-${i}`, ip: `10.250.${i >> 8}.${i & 255}` }];
  }
  const result = engine.reconcile({ observations, facts: { ...facts }, governedCalls, window, egressPlaneEnabled: true, nowUnix: NOW_UNIX }, rowMemo);
  const a3 = performance.now();
  const used = process.cpuUsage(cpu);
  const json = toJson({ enabled: true, reason: '', ...result, ingestLag: { lag: 0, scrapedAtUnix: NOW_UNIX, scrapeError: '' } });
  const a4 = performance.now();
  // GC entries are delivered asynchronously: let the observer catch up before reading them.
  await new Promise((r) => setTimeout(r, 50));
  runs.push({ aggregate: a1 - a0, calls: a2 - a1, engine: a3 - a2, engineCpu: (used.user + used.system) / 1000, engineGc: gcWithin(a2, a3), stringify: a4 - a3 });
  const h = createHash('sha256').update(JSON.stringify(result)).digest('hex');
  if (hash !== '' && h !== hash) throw new Error('the engine answered differently for the same input');
  hash = h;
  slots = observations.length;
  rows = result.rows.length;
  bytes = json.length;
}

const [cold, ...warm] = runs;
const stat = (name: keyof Run) => {
  const sorted = warm.map((r) => r[name]).sort((a, b) => a - b);
  return { p50: round(pct(sorted, 0.5)), p95: round(pct(sorted, 0.95)), min: round(sorted[0]!) };
};
const summary = {
  engine: engineDir,
  setupMs: round(setupMs),
  rows: rowsRepresented,
  /** From the cache the index holds one row per slot: `aggregate` is then not the million-row figure. */
  fromCache,
  engineSlots: slots,
  reconciliationRows: rows,
  answerBytes: bytes,
  outputSha256: hash,
  cold: {
    aggregate: round(cold!.aggregate),
    calls: round(cold!.calls),
    engine: round(cold!.engine),
    engineCpu: round(cold!.engineCpu),
    engineGc: round(cold!.engineGc),
    stringify: round(cold!.stringify),
  },
  warm: {
    aggregate: stat('aggregate'),
    calls: stat('calls'),
    engine: stat('engine'),
    engineCpu: stat('engineCpu'),
    engineGc: stat('engineGc'),
    stringify: stat('stringify'),
  },
};
if (args.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const w = summary.warm;
  process.stdout.write(
    [
      `engine ${engineDir}`,
      `input: ${rowsRepresented} rows${fromCache ? ` (cached sums: aggregate timed over ${index.size} rows)` : ''}, ${slots} engine slots, ${rows} rows out, ${bytes} bytes (setup ${summary.setupMs} ms)`,
      `output sha256 ${hash}`,
      `cold: engine ${summary.cold.engine} ms (CPU ${summary.cold.engineCpu}), aggregate ${summary.cold.aggregate}, calls ${summary.cold.calls}, stringify ${summary.cold.stringify}`,
      `warm (${warm.length}) p50/p95/min ms: engine ${w.engine.p50}/${w.engine.p95}/${w.engine.min} (CPU ${w.engineCpu.p50}/${w.engineCpu.p95}/${w.engineCpu.min}, GC pauses ${w.engineGc.p50}/${w.engineGc.p95}/${w.engineGc.min}), aggregate ${w.aggregate.p50}/${w.aggregate.p95}/${w.aggregate.min}, calls ${w.calls.p50}/${w.calls.p95}/${w.calls.min}, stringify ${w.stringify.p50}/${w.stringify.p95}/${w.stringify.min}`,
      '',
    ].join('\n'),
  );
}
