/**
 * bench/gateway-overhead: what a gateway adds on top of calling the provider directly, for Reins and for Portkey,
 * measured side by side in one run on one machine with one fake upstream and one load generator.
 *
 *   node --import tsx bench/gateway-overhead/run.ts [--quick] [--rounds N] [--only bare,reins,reins-pg,portkey]
 *        [--out DIR] [--no-pin] [--diagnose] [--allow-partial-reins] [--strict] [--no-build] [--cpu-prof DIR]
 *
 * README.md beside this file says what is measured and how to read it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Diagnosis } from './diagnostics.js';
import type { LoadJob, LoadResult } from './load.js';
import { REQUEST_BODY, type Target, UPSTREAM_KEY, looksLikeTheCompletion } from './payloads.js';
import { checkPoliciesOffline } from './policies.js';
import { type Child, JobChild, canPin, delay, freePort, packageVersion as installedVersion, pinPostgres, processCpuMs, postgresCpuMs, cpuSpentBetween, REINS_NODE_FLAGS, startChild, startServer, stealMs, machineFacts, instrumentsFirst, instrumentFlags, busyAtStartWarnings } from './processes.js';
import { createBenchDatabase } from './bench-database.js';
import { FLOOR_NAMES, type FloorName, startGovernedFloor } from './floor-child.js';
import { ReinsNotReady, auditQueueDrained, countAllAuditEvents, setUpReins } from './reins-setup.js';
import {
  type Check,
  LIMITS,
  type Pooled,
  type RoundResult,
  SCENARIOS,
  type Scenario,
  type TargetRecord,
  checkTargets,
  checksText,
  consoleTable,
  diagnosisLines,
  floorWhy,
  markdownTable,
  summarize,
  verdictOf,
} from './report.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const TSX = ['--import', 'tsx'];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    only: { type: 'string' },
    out: { type: 'string' },
    'allow-partial-reins': { type: 'boolean', default: false },
    'no-pin': { type: 'boolean', default: false },
    'no-realtime': { type: 'boolean', default: false },
    diagnose: { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    // A V8 CPU profile of every gateway (bare proxy and Reins alike), written to DIR when it stops.
    'cpu-prof': { type: 'string' },
  },
});
const PROFILE = args['cpu-prof'] !== undefined ? ['--cpu-prof', `--cpu-prof-dir=${resolve(args['cpu-prof'])}`] : [];

/** How much of each scenario a run does. A full run takes about 8-9 minutes on 2 cores. */
const SETTINGS = args.quick
  ? { warmS: 1, rounds: 1, seqWarmup: 100, seqRequests: 300, rate: 1000, pacedConnections: 32, pacedWarmupS: 0.5, pacedS: 1.5, maxConnections: 50, maxWarmupS: 1, maxS: 1 }
  : { warmS: 3, rounds: 5, seqWarmup: 300, seqRequests: 1500, rate: 1000, pacedConnections: 32, pacedWarmupS: 1, pacedS: 3, maxConnections: 50, maxWarmupS: 1, maxS: 2 };
const WARM_CONNECTIONS = 10;
if (args.rounds !== undefined) {
  if (!/^[1-9]\d*$/.test(args.rounds)) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
  SETTINGS.rounds = Number(args.rounds);
}

/**
 * CPU placement. By default the gateway under test gets CPU 1 to itself (all its threads) and the load generator
 * and the fake upstream share CPU 0, in every scenario and for the direct baseline too: each gateway is measured on
 * one core, the unit a single-threaded Node server scales by, and the kernel cannot move the generator onto the
 * gateway's core in one round and not in the next (unpinned, the max-throughput figures varied by half between
 * rounds). The local PostgreSQL server goes to the generator's CPU too (pinPostgres): the gateway's core is its own,
 * as with the database on a machine of its own. --no-pin leaves placement to the kernel.
 */
const PIN = !args['no-pin'] && canPin();
const CPU = { generator: PIN ? 0 : null, upstream: PIN ? 0 : null, gateway: PIN ? 1 : null };
/**
 * During the paced job the load generator's and the fake upstream's main threads run at real-time priority
 * (instrumentsFirst), so that the PostgreSQL server on their core, standing for a database on a machine of its own,
 * does not delay the instruments timing the answers. Not in the sequential job: a closed loop keeps the generator
 * and the direct upstream busy back to back, and real-time threads busy for 95% of a second are stopped by the
 * kernel for the rest of it (a 0.9 s stall in one run). Cleared when this user may not raise them (the report says
 * which). --no-realtime measures without it.
 */
let REALTIME: 'on' | 'off' | 'refused' = PIN && !args['no-realtime'] ? 'on' : 'off';

const ALL_TARGETS = ['direct', 'bare', 'floor', 'floor-search', 'floor-pglite', 'floor-pglite-search', 'reins', 'reins-pg', 'portkey'] as const;
type TargetName = (typeof ALL_TARGETS)[number];
const only = new Set((args.only ?? ALL_TARGETS.join(',')).split(',').map((s) => s.trim()));
for (const name of only) {
  if (!(ALL_TARGETS as readonly string[]).includes(name)) throw new Error(`--only: unknown target "${name}" (${ALL_TARGETS.join(', ')})`);
}
only.add('direct'); // every added-latency figure is relative to it
/** Where the PostgreSQL server runs, as the report says it (null: left to the kernel). */
const POSTGRES_PLACEMENT = PIN && (only.has('reins-pg') || only.has('floor') || only.has('floor-search')) ? pinPostgres(0) : null;

// Reins runs from dist/, as `npm start` runs it: build it now so the figures are of the current sources.
// --no-build: dist/ was just built from these sources (a loaded machine takes minutes per tsc run).
if ((only.has('reins') || only.has('reins-pg')) && !args['no-build']) {
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
}

const LABELS: Record<TargetName, string> = {
  direct: 'upstream, direct',
  bare: 'bare Node proxy',
  floor: 'governed floor, PostgreSQL',
  'floor-search': 'search floor, PostgreSQL',
  'floor-pglite': 'governed floor, PGlite',
  'floor-pglite-search': 'search floor, PGlite',
  reins: 'Reins, PGlite (20 policies, audit)',
  'reins-pg': 'Reins, PostgreSQL (20 policies, audit)',
  portkey: `Portkey gateway ${packageVersion('@portkey-ai/gateway')}`,
};

function isFloor(name: string): name is FloorName {
  return (FLOOR_NAMES as readonly string[]).includes(name);
}

function packageVersion(name: string): string {
  return installedVersion(ROOT, name);
}

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

// ------------------------------------------------------------------ the load generator, one process for the run

/** The load generator: one long-lived process for the run, so its JIT is equally warm for every target. */
class Loader extends JobChild<LoadJob, LoadResult> {
  constructor() {
    super('load generator', [...instrumentFlags(CPU.generator), ...TSX, join(HERE, 'load.ts')], CPU.generator);
  }
}

// ------------------------------------------------------------------ --diagnose

/** Talks to diagnostics.ts inside a server child: `reset` before a job, `report` after it. */
class DiagChannel {
  private waiting: ((d: Diagnosis) => void) | null = null;
  child: Child | null = null;

  readonly onLine = (line: string) => {
    if (!line.startsWith('{"diag":')) return;
    const w = this.waiting;
    this.waiting = null;
    w?.((JSON.parse(line) as { diag: Diagnosis }).diag);
  };

  reset(): void {
    this.child?.proc.stdin!.write('reset\n');
  }

  report(): Promise<Diagnosis> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.child?.proc.stdin!.write('report\n');
    });
  }
}

const DIAG_ENV = { ...process.env, BENCH_DIAGNOSE: '1' };

// ------------------------------------------------------------------ targets

interface Running {
  record: TargetRecord;
  target: Target | null;
  /** The process whose CPU time is the target's (null for the direct upstream: it is the upstream). */
  pid: number | null;
  /** Completions the upstream served through this target, warm-up and every job included. */
  forwarded: number;
  diag?: DiagChannel;
  /** Reins only: its control plane, for the audit count at the end. */
  admin?: { base: string; admin: string };
}

async function preflight(target: Target): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const res = await fetch(target.url, { method: 'POST', headers: { ...target.headers, 'content-type': 'application/json' }, body: REQUEST_BODY });
    const wrong = looksLikeTheCompletion(res.status, await res.text());
    if (wrong) throw new Error(`the benchmark request through ${target.name} failed: ${wrong}`);
  }
}

async function startPortkey(upstream: string): Promise<{ child: Child; base: string }> {
  const port = await freePort();
  const script = join(ROOT, 'node_modules/@portkey-ai/gateway/build/start-server.js');
  // --headless: no log console, as one runs it as a service. Its npm postinstall (patch-package) never ran here;
  // the published package ships no patches/ folder, so that step has nothing to apply (README.md, Portkey).
  // Exits with the runner, like the other children; Portkey's own code is left as it is.
  const exitWithRunner = 'data:text/javascript,process.stdin.on("end",()=>process.exit(0)).resume()';
  const child = startChild('portkey', ['--import', exitWithRunner, script, `--port=${port}`, '--headless'], { cpu: CPU.gateway });
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.proc.exitCode !== null) throw new Error(`portkey exited with code ${child.proc.exitCode}:\n${child.tail()}`);
    try {
      const res = await fetch(`${base}/`);
      if (res.ok) return { child, base };
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`portkey did not answer on ${base} within 30 s:\n${child.tail()}`);
    await delay(100);
  }
}

function emptyRounds(): Record<Scenario, RoundResult[]> {
  return { sequential: [], paced: [], max: [] };
}

function notMeasured(name: TargetName, reason: string): Running {
  log(`  ${name}: NOT MEASURED: ${reason}`);
  return { record: { name, label: LABELS[name], measured: false, reason, caveats: [], notes: [], rounds: emptyRounds() }, target: null, pid: null, forwarded: 0 };
}

function measuredRecord(name: TargetName, caveats: string[] = [], notes: string[] = []): TargetRecord {
  return { name, label: LABELS[name], measured: true, caveats, notes, rounds: emptyRounds() };
}

async function startReins(name: 'reins' | 'reins-pg', upstream: string, databaseUrl: string | null, children: Child[]): Promise<Running> {
  const admin = randomBytes(24).toString('hex');
  const diag = args.diagnose ? new DiagChannel() : undefined;
  const s = await startServer(name, [...REINS_NODE_FLAGS, ...PROFILE, ...TSX, join(HERE, 'reins-server.ts'), upstream, admin, ...(databaseUrl ? [databaseUrl] : [])], {
    cpu: CPU.gateway,
    ...(diag ? { env: DIAG_ENV, onLine: diag.onLine } : {}),
  });
  if (diag) diag.child = s.child;
  children.push(s.child);
  let setup: Awaited<ReturnType<typeof setUpReins>>;
  try {
    setup = await setUpReins(s.url, admin, { allowPartial: args['allow-partial-reins'] ?? false });
  } catch (err) {
    await s.child.stop(); // not measured: it must not sit on the gateways' CPU while the others are
    throw err;
  }
  for (const c of setup.caveats) log(`  ${name}: CAVEAT: ${c}`);
  return {
    record: measuredRecord(name, setup.caveats, setup.notes),
    target: setup.target,
    pid: s.child.pid,
    // The set-up's five gateway calls reached the upstream too.
    forwarded: 5,
    admin: { base: s.url, admin },
    ...(diag ? { diag } : {}),
  };
}

// ------------------------------------------------------------------ one job

function jobFor(scenario: Scenario, target: Target): LoadJob {
  const s = SETTINGS;
  switch (scenario) {
    case 'sequential':
      return { kind: 'sequential', target, warmup: s.seqWarmup, requests: s.seqRequests };
    case 'paced':
      return { kind: 'paced', target, rate: s.rate, warmupSeconds: s.pacedWarmupS, seconds: s.pacedS, connections: s.pacedConnections };
    case 'max':
      return { kind: 'max', target, connections: s.maxConnections, warmupSeconds: s.maxWarmupS, seconds: s.maxS };
  }
}

async function upstreamServed(upstream: string): Promise<number> {
  const res = await fetch(`${upstream}/__count`);
  return ((await res.json()) as { served: number }).served;
}

interface Bystanders {
  upstreamPid: number;
  /** The other gateways, idle while one is measured. */
  idlePids: number[];
}

async function measure(
  loader: Loader,
  upstream: string,
  running: Running,
  job: LoadJob,
  round: number,
  bystanders: Bystanders,
): Promise<RoundResult> {
  const snapshot = async () => ({
    target: running.pid === null ? 0 : processCpuMs(running.pid),
    upstream: processCpuMs(bystanders.upstreamPid),
    idle: bystanders.idlePids.reduce((n, pid) => n + processCpuMs(pid), 0),
    served: await upstreamServed(upstream),
    steal: stealMs(),
    store: postgresCpuMs(),
  });
  // The other gateways are frozen while one is measured: they share its CPU, and their own periodic work
  // (Reins re-reads and recompiles its policies every 30 s) would land in a neighbour's figures.
  for (const pid of bystanders.idlePids) process.kill(pid, 'SIGSTOP');
  let before: Awaited<ReturnType<typeof snapshot>>;
  let after: typeof before;
  let result: LoadResult;
  let restore: (() => void) | null = null;
  try {
    before = await snapshot();
    running.diag?.reset();
    if (REALTIME === 'on' && job.kind === 'paced') {
      restore = instrumentsFirst([loader.child.pid, bystanders.upstreamPid]);
      if (restore === null) REALTIME = 'refused';
    }
    result = await loader.run(job);
    after = await snapshot();
  } finally {
    restore?.();
    for (const pid of bystanders.idlePids) process.kill(pid, 'SIGCONT');
  }
  const diagnosis = running.diag ? await running.diag.report() : undefined;
  running.forwarded += after.served - before.served;
  return {
    ...result,
    ...(diagnosis ? { diagnosis } : {}),
    round,
    targetCpuMs: running.pid === null ? null : after.target - before.target,
    upstreamCpuMs: after.upstream - before.upstream,
    idleGatewaysCpuMs: after.idle - before.idle,
    upstreamServed: after.served - before.served,
    stealMs: after.steal - before.steal,
    storeCpuMs: cpuSpentBetween(before.store, after.store),
  };
}

function warningsOf(r: RoundResult, target: string, scenario: Scenario): string[] {
  const out: string[] = [];
  const at = `${target}, ${scenario}, round ${r.round + 1}`;
  if (r.failed > 0) out.push(`${at}: ${r.failed} requests failed (non-200, connection error or time-out)`);
  if (r.upstreamServed < r.ok + r.warmupOk) out.push(`${at}: ${r.ok + r.warmupOk} answers but the upstream served only ${r.upstreamServed}`);
  if (scenario === 'paced' && r.rps < SETTINGS.rate * 0.98) out.push(`${at}: reached ${r.rps.toFixed(0)} requests/s of ${SETTINGS.rate}`);
  if (r.pacing && r.pacing.lagMax > 50) out.push(`${at}: the generator sent a request ${r.pacing.lagMax.toFixed(0)} ms late (the machine stalled)`);
  // Sent on time but answered in a bunch: something held every answer back for a while (seen 2026-11-29: rounds of
  // any target with answers up to 0.95 s late and the target's event loop free; README.md, "CPU placement"). The
  // pooled p99 carries such a round whole.
  if (scenario === 'paced' && r.pacing && r.pacing.busiest50ms >= 2.5 * r.pacing.even50ms) {
    out.push(
      `${at}: answers came bunched (${r.pacing.busiest50ms} in the busiest 50 ms against ${r.pacing.even50ms} on an even schedule), the latest ${r.latency?.max?.toFixed(0) ?? '?'} ms late, with the generator using ${r.loaderCpuMs.toFixed(0)} ms of CPU: a stall in the round, whose p99 the pooled figure carries`,
    );
  }
  const wallMs = (r.seconds + (scenario === 'sequential' ? 0 : scenario === 'paced' ? SETTINGS.pacedWarmupS : SETTINGS.maxWarmupS)) * 1000;
  if (r.stealMs > 0.05 * wallMs * os.cpus().length) out.push(`${at}: the hypervisor took ${r.stealMs} ms of CPU (steal) during ${wallMs.toFixed(0)} ms`);
  return out;
}

// ------------------------------------------------------------------ the run


async function main(): Promise<number> {
  const started = Date.now();
  const date = new Date().toISOString();
  const info = machineFacts(ROOT, ['@portkey-ai/gateway', 'autocannon', 'undici', 'fastify']); // at the start: the commit measured, the load the machine had before the run
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    await Promise.all(children.map((c) => c.stop()));
    for (const c of cleanups.splice(0)) await c().catch(() => {});
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      void stopAll().then(() => process.exit(130));
    });
  }

  try {
    const policies = checkPoliciesOffline();
    log(
      `gateway-overhead${args.quick ? ' (quick)' : ''}: ${SETTINGS.rounds} round(s); ` +
        `${PIN ? 'gateway on CPU 1, generator and upstream on CPU 0' : 'CPU placement left to the kernel'}; ` +
        `${policies.total} policies compile and leave the benchmark request alone`,
    );

    const upstreamServer = await startServer('fake upstream', [...instrumentFlags(CPU.upstream), ...TSX, join(HERE, 'fake-upstream.ts')], { cpu: CPU.upstream });
    children.push(upstreamServer.child);
    const upstream = upstreamServer.url;
    const loader = new Loader();
    children.push(loader.child);

    const runs: Running[] = [];
    const direct: Target = { name: 'direct', url: `${upstream}/v1/chat/completions`, headers: { authorization: `Bearer ${UPSTREAM_KEY}` } };
    runs.push({ record: measuredRecord('direct'), target: direct, pid: null, forwarded: 0 });

    for (const name of ALL_TARGETS.filter((n) => n !== 'direct' && only.has(n))) {
      try {
        if (name === 'bare') {
          const diag = args.diagnose ? new DiagChannel() : undefined;
          const s = await startServer('bare proxy', [...PROFILE, ...TSX, join(HERE, 'bare-proxy.ts'), upstream], {
            cpu: CPU.gateway,
            ...(diag ? { env: DIAG_ENV, onLine: diag.onLine } : {}),
          });
          if (diag) diag.child = s.child;
          children.push(s.child);
          runs.push({
            record: measuredRecord('bare'),
            target: { name, url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${UPSTREAM_KEY}` } },
            pid: s.child.pid,
            forwarded: 0,
            ...(diag ? { diag } : {}),
          });
        } else if (isFloor(name)) {
          const diag = args.diagnose ? new DiagChannel() : undefined;
          const s = await startGovernedFloor(name, LABELS[name], upstream, [...PROFILE, ...TSX], { cpu: CPU.gateway, ...(diag ? { env: DIAG_ENV, onLine: diag.onLine } : {}) }, cleanups);
          if (diag) diag.child = s.child;
          children.push(s.child);
          runs.push({
            record: measuredRecord(name),
            target: s.target,
            pid: s.child.pid,
            forwarded: 0,
            ...(diag ? { diag } : {}),
          });
        } else if (name === 'portkey') {
          const p = await startPortkey(upstream);
          children.push(p.child);
          runs.push({
            record: measuredRecord('portkey'),
            target: {
              name,
              url: `${p.base}/v1/chat/completions`,
              headers: { authorization: `Bearer ${UPSTREAM_KEY}`, 'x-portkey-provider': 'openai', 'x-portkey-custom-host': `${upstream}/v1` },
            },
            pid: p.child.pid,
            forwarded: 0,
          });
        } else if (name === 'reins' || name === 'reins-pg') {
          let databaseUrl: string | null = null;
          if (name === 'reins-pg') {
            const db = await createBenchDatabase();
            cleanups.push(db.drop);
            databaseUrl = db.url;
          }
          runs.push(await startReins(name, upstream, databaseUrl, children));
        }
      } catch (err) {
        if (err instanceof ReinsNotReady || name === 'reins' || name === 'reins-pg') {
          runs.push(notMeasured(name, err instanceof Error ? err.message : String(err)));
        } else {
          throw err;
        }
      }
    }
    for (const r of runs) if (r.target && !r.admin) await preflight(r.target);

    const warnings: string[] = busyAtStartWarnings(info);
    const pooled: Pooled = new Map();
    const active = runs.filter((r) => r.target !== null);
    // Every target first runs under load, unmeasured, until its JIT (and Reins' PGlite WebAssembly) has tiered
    // up: otherwise whichever scenario comes first pays for compilation.
    const bystanders = (running: Running): Bystanders => ({
      upstreamPid: upstreamServer.child.pid,
      idlePids: active.filter((r) => r !== running && r.pid !== null).map((r) => r.pid!),
    });
    for (const running of active) {
      const warm: LoadJob = { kind: 'max', target: running.target!, connections: WARM_CONNECTIONS, warmupSeconds: 0, seconds: SETTINGS.warmS };
      await measure(loader, upstream, running, warm, -1, bystanders(running));
    }
    for (const scenario of SCENARIOS) {
      for (let round = 0; round < SETTINGS.rounds; round++) {
        // The order turns each round, so no target always follows the same neighbour.
        const order = active.map((_, i) => active[(i + round) % active.length]!);
        for (const running of order) {
          const r = await measure(loader, upstream, running, jobFor(scenario, running.target!), round, bystanders(running));
          if (r.samples) {
            const mine = pooled.get(running.record.name) ?? {};
            (mine[scenario] ??= []).push(...r.samples);
            pooled.set(running.record.name, mine);
            delete r.samples; // hundreds of thousands of numbers: pooled here, left out of the JSON
          }
          running.record.rounds[scenario].push(r);
          warnings.push(...warningsOf(r, running.record.name, scenario));
          const l = r.latency;
          log(
            `  ${scenario.padEnd(10)} round ${round + 1} ${running.record.name.padEnd(8)} ` +
              (scenario === 'max'
                ? `${r.rps.toFixed(0)} req/s`
                : `p50 ${l?.p50.toFixed(3)} ms  p99 ${l?.p99.toFixed(3)} ms  (${r.ok} ok, ${r.failed} failed)`),
          );
        }
      }
    }

    await delay(500); // the audit writer flushes every few tens of ms
    // A job that closes its connections with requests in flight leaves calls audited without reaching the upstream,
    // or reaching it after the client left: the two counts may differ by that much. autocannon ended the max jobs so
    // until 2026-11-29; the closed loop that replaced it waits for its answers, so the allowance is an upper bound.
    const inFlightAtStop = SETTINGS.maxConnections * SETTINGS.rounds * 2 + WARM_CONNECTIONS;
    for (const reinsRun of runs.filter((r) => r.admin && r.target !== null)) {
      const calls = reinsRun.forwarded;
      // The audit writer may still be draining a backlog (at its maximum the embedded store's worker writes behind
      // the answers: 6,302 events were queued when one run of 2026-11-28 stopped): wait until Reins' own gauge of
      // queued audit events reads 0, then count, and count again until two counts agree, so a backlog is never
      // reported as a loss nor a loss hidden by a deadline.
      const queued = await auditQueueDrained(reinsRun.admin!.base, 120_000);
      if (queued !== 0) warnings.push(`${reinsRun.record.name}: its audit queue still held ${queued ?? 'an unknown number of'} events after 120 s`);
      let audited: number | null = null;
      for (let pass = 0; pass < 5; pass++) {
        const counted = await countAllAuditEvents(reinsRun.admin!.base, reinsRun.admin!.admin, new Date(started), new Date());
        const agreed = counted === audited;
        audited = counted;
        if (agreed || counted === null) break;
        await delay(500);
      }
      const line = `audit: ${audited ?? 'unknown'} llm audit events for ${calls} calls Reins forwarded to the upstream`;
      reinsRun.record.notes.push(line);
      if (audited === null) warnings.push(`${reinsRun.record.name}: could not count audit events`);
      else if (Math.abs(audited - calls) > inFlightAtStop) warnings.push(`${reinsRun.record.name}: ${line}: more apart than aborted calls explain`);
    }

    // The floors, too, must have done their work: two audit rows for every call they forwarded.
    for (const floorRun of runs.filter((r) => r.target !== null && r.record.name.startsWith('floor'))) {
      await delay(100);
      const origin = new URL(floorRun.target!.url).origin;
      const rows = ((await (await fetch(`${origin}/__audited`)).json()) as { rows: number }).rows;
      const line = `audit: ${rows} rows for ${floorRun.forwarded} calls the floor forwarded to the upstream (two a call: the decision and the end)`;
      floorRun.record.notes.push(line);
      if (Math.abs(rows - 2 * floorRun.forwarded) > 2 * inFlightAtStop) warnings.push(`${floorRun.record.name}: ${line}: more apart than aborted calls explain`);
    }

    const records = runs.map((r) => r.record);
    const summaries = summarize(records, pooled);
    for (const t of summaries) {
      // A target that cannot serve the rate with room to spare measures its own queue at that rate, not its overhead.
      if (t.name !== 'direct' && t.max && t.max.rps < SETTINGS.rate * 1.25) {
        warnings.push(
          `${t.name}: its maximum here is ${Math.round(t.max.rps)} requests/s, so at ${SETTINGS.rate}/s it runs at ` +
            `${Math.round((SETTINGS.rate / t.max.rps) * 100)}% of capacity and its @${SETTINGS.rate}/s latencies are mostly queueing`,
        );
      }
    }
    const diagnosis = diagnosisLines(records);
    const checks: Check[] = checkTargets(summaries, SETTINGS.rate);
    const elapsedS = (Date.now() - started) / 1000;

    const table = consoleTable(summaries, SETTINGS.rate);
    process.stdout.write(
      `\n${table}\n\nlatencies in ms over ${SETTINGS.rounds} interleaved round(s) pooled; "added" = target minus the direct upstream; ` +
        'max req/s and CPU: median of the rounds; "vs bare" and the throughput, CPU and added p99 targets: median of the rounds\' own ratios\n',
    );
    for (const r of records.filter((x) => !x.measured)) process.stdout.write(`${r.label}: not measured: ${r.reason}\n`);
    for (const r of records.filter((x) => x.caveats.length > 0)) process.stdout.write(`${r.label}: figures do not count yet: ${r.caveats.join('; ')}\n`);
    const why = floorWhy(summaries);
    if (why.length > 0) process.stdout.write(`\nthe floors against the bare proxy:\n${why.map((l) => `  ${l}`).join('\n')}\n`);
    if (checks.length > 0) process.stdout.write(`\ntargets:\n${checksText(checks).map((l) => `  ${l}`).join('\n')}\n`);
    if (diagnosis.length > 0) process.stdout.write(`\ndiagnosis:\n${diagnosis.map((l) => `  ${l}`).join('\n')}\n`);
    if (warnings.length > 0) process.stdout.write(`\nwarnings:\n${warnings.map((w) => `  ${w}`).join('\n')}\n`);
    process.stdout.write(`\n(${elapsedS.toFixed(0)} s)\n`);

    // A quick run is a smoke test, too short to quote: it stays out of bench/results unless told otherwise.
    const outDir = resolve(args.out ?? (args.quick ? join(os.tmpdir(), 'reins-gateway-overhead') : join(ROOT, 'bench/results')));
    const base = args.quick ? 'gateway-overhead.quick' : 'gateway-overhead';
    mkdirSync(outDir, { recursive: true });
    const json = { date, elapsedSeconds: elapsedS, loadAverageAtEnd: os.loadavg(), quick: args.quick, settings: SETTINGS, cpuPlacement: { ...CPU, postgres: POSTGRES_PLACEMENT, realtimeInstrumentsAt1000: REALTIME }, limits: LIMITS, machine: info, policies, summaries, checks, warnings, targets: records };
    writeFileSync(join(outDir, `${base}.json`), `${JSON.stringify(json, null, 2)}\n`);
    writeFileSync(join(outDir, `${base}.md`), markdown(date, info, records, summaries, checks, warnings, diagnosis, elapsedS));
    log(`wrote ${relative(process.cwd(), join(outDir, base))}.{json,md}`);

    const failedCheck = checks.some((c) => c.pass !== true);
    return args.strict && failedCheck ? 2 : 0;
  } finally {
    await stopAll();
  }
}

function loadText(load: unknown): string {
  return Array.isArray(load) ? load.map((l: number) => l.toFixed(2)).join(' / ') : 'unknown';
}

function markdown(
  date: string,
  info: Record<string, unknown>,
  records: TargetRecord[],
  summaries: ReturnType<typeof summarize>,
  checks: Check[],
  warnings: string[],
  diagnosis: string[],
  elapsedS: number,
): string {
  const s = SETTINGS;
  const versions = info.versions as Record<string, string>;
  const lines = [
    `# Gateway overhead${args.quick ? ' (quick smoke run: too short to quote)' : ''}`,
    '',
    `${date}, ${info.cores} × ${info.cpuModel}, ${info.memoryGiB} GiB, ${info.kernel}, Node ${info.node}; Reins ${String(info.reinsCommit).slice(0, 12)}` +
      `${info.reinsSrcUncommittedChanges ? ' with uncommitted changes in src/' : ''}; Portkey ${versions['@portkey-ai/gateway']}, autocannon ${versions.autocannon}. ` +
      `Run took ${elapsedS.toFixed(0)} s. Machine speed ${String(info.speedMs)} ms (a fixed workload, lower is faster; processes.ts machineSpeedMs). Load average (1/5/15 min) at start ${loadText(info.loadAverageAtStart)}, at end ${loadText(os.loadavg())}${info.nice ? `; every process of the run at nice ${String(info.nice)}` : ''}: ` +
      'the machine is shared, so read the ratios to the bare proxy, which were measured side by side. ' +
      'How to run and what each figure means: bench/gateway-overhead/README.md.',
    '',
    PIN
      ? 'CPU placement: the gateway under test alone on CPU 1 (all its threads); the load generator and the fake upstream on CPU 0' +
        (POSTGRES_PLACEMENT ? `, and ${POSTGRES_PLACEMENT}` : '; the PostgreSQL server where the kernel puts it') +
        '. Throughput is therefore per core of gateway. ' +
        (REALTIME === 'on'
          ? 'During the @1000/s job the load generator\'s and the fake upstream\'s main threads ran at real-time priority, so that work of the database on their core does not delay them (README.md, "Where the tail waits").'
          : REALTIME === 'refused'
            ? 'The load generator and the fake upstream could not be raised to real-time priority (no CAP_SYS_NICE): the database\'s work on their core delays the instruments in the @1000/s job.'
            : 'The @1000/s job ran with the load generator and the fake upstream at normal priority (--no-realtime).')
      : 'CPU placement: left to the kernel (--no-pin); the generator, the upstream and the gateway share both cores.',
    '',
    `Latencies in ms, over every answer of the ${s.rounds} round(s) pooled; "added" is the target's figure minus the direct upstream's. ` +
      `Max req/s and CPU µs/req: median of the rounds. "vs bare" and the throughput, CPU and added p99 targets: each round's ratio of the two figures, ` +
      `then the median of those (two figures of one round were measured a minute apart at most; the machine's speed moves more between rounds; ` +
      `a round's added p99 is its p99 less the direct upstream's in the same round). ` +
      `The rounds interleave the targets. ` +
      `Sequential: one connection, ${s.seqRequests} requests per round after ${s.seqWarmup} warm-up. ` +
      `@${s.rate}/s: open-loop, ${s.rate} requests/s evenly spaced over up to ${s.pacedConnections} connections, ${s.pacedS} s per round after ${s.pacedWarmupS} s warm-up. ` +
      `Max: a closed loop over ${s.maxConnections} keep-alive connections, ${s.maxS} s per round after ${s.maxWarmupS} s warm-up. ` +
      'CPU µs/req: CPU time of the target\'s own process per answered request during the max-throughput job (each at its own maximum); ' +
      `CPU µs/req @${s.rate}/s: the same during the paced job, every target at the same load. ` +
      "PostgreSQL CPU µs/req: CPU time of the local PostgreSQL server's processes per answered request during the max-throughput job (the other gateways frozen): " +
      'the store work of the target\'s audit writes, which on this machine shares the cores with everything else; "-" where no local server was readable.',
    '',
    markdownTable(summaries, s.rate),
    '',
  ];
  const missing = records.filter((r) => !r.measured);
  if (missing.length > 0) {
    lines.push('## Not measured', '');
    for (const r of missing) lines.push(`- ${r.label}: ${r.reason}`);
    lines.push('');
  }
  const caveated = records.filter((r) => r.caveats.length > 0);
  if (caveated.length > 0) {
    lines.push('## Figures that do not count yet', '');
    for (const r of caveated) for (const c of r.caveats) lines.push(`- ${r.label}: ${c}`);
    lines.push('');
  }
  const why = floorWhy(summaries);
  if (checks.length > 0) {
    lines.push(
      '## Targets (issue: bench/gateway-overhead)',
      '',
      'Each ratio target is checked against the bare proxy of the same run, as the issue words it, and restated against ' +
        "the floors of the same store measured: the governed floor (the bare proxy plus only the work any gateway that governs and audits every call must do: " +
        'bench/gateway-overhead/README.md, "Why the floor") and the search floor (the same, its audit rows in Reins\' own audit table with the indexes the audit search reads: ' +
        '"The search floor"). The rest compare with Portkey.',
      '',
      ...why.map((l) => `- Why: ${l}.`),
      ...(why.length > 0 ? [''] : []),
      '| Reins | target | figure | result |',
      '| --- | --- | --- | --- |',
    );
    for (const c of checks) {
      lines.push(`| ${c.target} | ${c.limit} | ${c.value} | ${verdictOf(c)} |`);
    }
    lines.push('');
  }
  const notes = records.flatMap((r) => r.notes.map((n) => `${r.label}: ${n}`));
  if (diagnosis.length > 0) {
    lines.push('## Diagnosis (--diagnose: figures taken with the probes on)', '');
    for (const d of diagnosis) lines.push(`- ${d}`);
    lines.push('');
  }
  if (notes.length > 0 || warnings.length > 0) {
    lines.push('## Notes and warnings', '');
    for (const n of notes) lines.push(`- ${n}`);
    for (const w of warnings) lines.push(`- warning: ${w}`);
    lines.push('');
  }
  return lines.join('\n');
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`gateway-overhead: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
