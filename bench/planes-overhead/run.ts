/**
 * bench/planes-overhead: what Reins adds on its two other planes, against calling the same upstream directly and
 * against a bare Node proxy with no governance: an MCP `tools/call` through /mcp/<server>, and an HTTPS request
 * through the egress proxy's CONNECT tunnel.
 *
 *   node --import tsx bench/planes-overhead/run.ts [--quick] [--rounds N] [--only bare,reins,reins-pg] [--out DIR] [--no-pin] [--strict]
 *
 * README.md beside this file says what is measured and how to read it. The process model, CPU placement and
 * interleaved rounds are bench/gateway-overhead's (its processes.ts is reused as is).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import os from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type LatencySummary, summarize } from '../gateway-overhead/load.js';
import { type Child, JobChild, canPin, delay, packageVersion as installedVersion, pinPostgres, processCpuMs, REINS_NODE_FLAGS, startServer, stealMs, machineFacts, busyAtStartWarnings } from '../gateway-overhead/processes.js';
import { createBenchDatabase } from '../gateway-overhead/bench-database.js';
import type { PlanesJob, PlanesResult } from './load.js';
import { MCP_SERVER_NAME, TLS_DIR, type EgressTarget, type McpTarget } from './payloads.js';
import { countAuditEvents, openMcpSession, setUpAgent } from './reins-setup.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const TSX = ['--import', 'tsx'];

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    only: { type: 'string' },
    out: { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
  },
});

/** A full run takes about two and a half minutes on 2 cores (build included). */
const SETTINGS = args.quick
  ? { rounds: 1, warmMcpS: 1, warmConnections: 100, mcpWarmup: 100, mcpRequests: 300, maxConnections: 8, maxWarmupS: 0.5, maxS: 1, newWarmup: 50, newRequests: 200, reuseWarmup: 100, reuseRequests: 300 }
  : { rounds: 3, warmMcpS: 2, warmConnections: 300, mcpWarmup: 300, mcpRequests: 1500, maxConnections: 8, maxWarmupS: 0.5, maxS: 2, newWarmup: 100, newRequests: 700, reuseWarmup: 300, reuseRequests: 1500 };
if (args.rounds !== undefined) {
  if (!/^[1-9]\d*$/.test(args.rounds)) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
  SETTINGS.rounds = Number(args.rounds);
}
/**
 * Issue target: governance adds at most this to the p50 of the bare proxy of the same plane, measured in the same
 * run, for a tools/call and for the egress CONNECT set-up. A ratio to bare, not an absolute limit: the machine's
 * floor for one more hop moves between runs on a shared machine by more than the whole budget.
 */
const TARGET_OVER_BARE_P50_MS = 0.1;

const PIN = !args['no-pin'] && canPin();
const CPU = { generator: PIN ? 0 : null, upstream: PIN ? 0 : null, gateway: PIN ? 1 : null };

const ALL_TARGETS = ['direct', 'bare', 'floor', 'floor-pg', 'reins', 'reins-pg'] as const;
type TargetName = (typeof ALL_TARGETS)[number];
const only = new Set((args.only ?? 'bare,floor,floor-pg,reins,reins-pg').split(',').map((s) => s.trim()));
/** The local PostgreSQL server on the generator's CPU, off Reins' (bench/gateway-overhead/processes.ts pinPostgres). */
const POSTGRES_PLACEMENT = PIN && (only.has('reins-pg') || only.has('floor-pg')) ? pinPostgres(0) : null;
/** Each Reins' audited floor: the one of the same store (README.md, "The audited floors"). */
const FLOOR_OF: Partial<Record<TargetName, TargetName>> = { reins: 'floor', 'reins-pg': 'floor-pg' };
for (const name of only) if (!(ALL_TARGETS as readonly string[]).includes(name)) throw new Error(`--only: unknown target "${name}"`);
only.add('direct');

const SCENARIOS = ['mcp-seq', 'mcp-max', 'egress-new', 'egress-reuse'] as const;
type Scenario = (typeof SCENARIOS)[number];
/** What is pooled across rounds: the latency scenarios, and egress-new's set-up phase on its own. */
type Pooled = Exclude<Scenario, 'mcp-max'> | 'egress-connect';
const LABELS: Record<TargetName, string> = {
  direct: 'upstream, direct',
  bare: 'bare Node proxy (no governance)',
  floor: 'audited floor, PGlite',
  'floor-pg': 'audited floor, PostgreSQL',
  reins: 'Reins, PGlite (audit on)',
  'reins-pg': 'Reins, PostgreSQL (audit on)',
};

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

function packageVersion(name: string): string {
  return installedVersion(ROOT, name);
}

// ------------------------------------------------------------------ the load generator

/** The load generator: one long-lived process for the run, so its JIT is equally warm for every target. */
class Loader extends JobChild<PlanesJob, PlanesResult> {
  constructor() {
    super('load generator', [...TSX, join(HERE, 'load.ts')], CPU.generator);
  }
}

// ------------------------------------------------------------------ targets

interface RoundResult extends Omit<PlanesResult, 'samples' | 'tunnelSamples'> {
  round: number;
  targetCpuMs: number | null;
  /** tools/call the MCP upstream served, and /small requests and TLS connections the origin served, during the job. */
  upstreamToolCalls: number;
  originServed: number;
  originConnections: number;
  stealMs: number;
}

interface Running {
  name: TargetName;
  label: string;
  mcp: McpTarget;
  egress: EgressTarget;
  /** The process serving each plane: one Reins serves both, the bare baseline is two; null for the upstreams themselves. */
  pids: { mcp: number | null; egress: number | null };
  admin?: { base: string; token: string };
  /** An audited floor's `GET /__audited` per plane (the rows each wrote), checked against two a call and two a tunnel. */
  audited?: { mcp: string; egress: string };
  /** What went through this target, warm-up included: tools/call forwarded, tunnels opened. */
  toolCalls: number;
  tunnels: number;
  rounds: Record<Scenario, RoundResult[]>;
  notes: string[];
}

function originCount(origin: string): Promise<{ served: number; connections: number }> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(`${origin}/__count`, { ca: readFileSync(join(TLS_DIR, 'ca.pem')), servername: 'localhost', agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(JSON.parse(text) as { served: number; connections: number }));
    });
    req.on('error', reject);
  });
}

async function upstreamToolCalls(mcpUrl: string): Promise<number> {
  const res = await fetch(new URL('/__count', mcpUrl));
  return ((await res.json()) as { toolCalls: number }).toolCalls;
}

function jobFor(scenario: Scenario, t: Running): PlanesJob {
  const s = SETTINGS;
  switch (scenario) {
    case 'mcp-seq':
      return { kind: 'mcp-seq', target: t.mcp, warmup: s.mcpWarmup, requests: s.mcpRequests };
    case 'mcp-max':
      return { kind: 'mcp-max', target: t.mcp, connections: s.maxConnections, warmupSeconds: s.maxWarmupS, seconds: s.maxS };
    case 'egress-new':
      return { kind: 'egress-new', target: t.egress, warmup: s.newWarmup, requests: s.newRequests };
    case 'egress-reuse':
      return { kind: 'egress-reuse', target: t.egress, warmup: s.reuseWarmup, requests: s.reuseRequests };
  }
}


// ------------------------------------------------------------------ summaries

interface Figures {
  p50: number;
  p99: number;
  count: number;
  /** This target minus the direct path (null for the direct path itself). */
  addedP50: number | null;
  addedP99: number | null;
  /** This target minus the bare proxy: what governance costs over a plain proxy (null for direct and bare). */
  overBareP50: number | null;
  overBareP99: number | null;
  /** Reins minus the audited floor of its store (null for the others, and when that floor was not measured). */
  overFloorP50: number | null;
}

interface TargetSummary {
  name: TargetName;
  label: string;
  latency: Partial<Record<Pooled, Figures>>;
  /** egress-new: pooled p50 of each phase, from the rounds' own phase p50s (median of rounds). */
  phasesP50?: { tunnel: number; tls: number; request: number };
  max?: { rps: number; p50: number; p99: number; cpuUsPerCall: number | null };
  /** egress-new: the egress process's CPU per new connection (tunnel set-up, relay, close), median of the rounds. */
  cpuUsPerConnection?: number | null;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n === 0 ? Number.NaN : n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

const LATENCY_FIGURES: readonly Pooled[] = ['mcp-seq', 'egress-connect', 'egress-new', 'egress-reuse'];

function summarizeAll(runs: Running[], pooled: Map<TargetName, Partial<Record<Pooled, number[]>>>): TargetSummary[] {
  const of = (name: TargetName, figure: Pooled): LatencySummary | null => summarize(pooled.get(name)?.[figure] ?? []);
  const measuredBare = runs.some((r) => r.name === 'bare');
  return runs.map((r) => {
    const out: TargetSummary = { name: r.name, label: r.label, latency: {} };
    for (const figure of LATENCY_FIGURES) {
      const l = of(r.name, figure);
      if (!l) continue;
      const d = r.name === 'direct' ? null : of('direct', figure);
      const b = r.name === 'direct' || r.name === 'bare' || !measuredBare ? null : of('bare', figure);
      const floor = FLOOR_OF[r.name];
      const f = floor && runs.some((x) => x.name === floor) ? of(floor, figure) : null;
      out.latency[figure] = {
        p50: l.p50,
        p99: l.p99,
        count: l.count,
        addedP50: d ? l.p50 - d.p50 : null,
        addedP99: d ? l.p99 - d.p99 : null,
        overBareP50: b ? l.p50 - b.p50 : null,
        overBareP99: b ? l.p99 - b.p99 : null,
        overFloorP50: f ? l.p50 - f.p50 : null,
      };
    }
    const news = r.rounds['egress-new'].filter((x) => x.phases);
    if (news.length > 0) {
      out.phasesP50 = {
        tunnel: median(news.map((x) => x.phases!.tunnel?.p50 ?? Number.NaN)),
        tls: median(news.map((x) => x.phases!.tls?.p50 ?? Number.NaN)),
        request: median(news.map((x) => x.phases!.request?.p50 ?? Number.NaN)),
      };
      out.cpuUsPerConnection = r.pids.egress === null ? null : median(news.map((x) => ((x.targetCpuMs ?? 0) * 1000) / Math.max(1, x.connectionsOpened)));
    }
    const maxes = r.rounds['mcp-max'];
    if (maxes.length > 0) {
      out.max = {
        rps: median(maxes.map((x) => x.rps)),
        p50: median(maxes.map((x) => x.latency?.p50 ?? Number.NaN)),
        p99: median(maxes.map((x) => x.latency?.p99 ?? Number.NaN)),
        cpuUsPerCall: r.pids.mcp === null ? null : median(maxes.map((x) => ((x.targetCpuMs ?? 0) * 1000) / Math.max(1, x.ok + x.warmupOk))),
      };
    }
    return out;
  });
}

interface Check {
  target: TargetName;
  what: string;
  limit: string;
  value: string;
  /** null: not measured, or the bare proxy's figure, shown as the floor and not judged. */
  pass: boolean | null;
}

const CHECKED: readonly (readonly [Pooled, string])[] = [
  ['mcp-seq', 'MCP tools/call p50 (sequential)'],
  ['egress-connect', 'egress CONNECT set-up p50 (TCP connect + CONNECT 200)'],
];

/**
 * Each Reins variant against the bare proxy of the same plane in the same run, as the issue words the target; and
 * against the audited floor of the same store (README.md, "The audited floors"): the restatement, read when that
 * floor alone is more than the budget over the bare proxy, as no proxy that audits every call can then meet it.
 */
function checks(summaries: TargetSummary[]): Check[] {
  const out: Check[] = [];
  for (const t of summaries.filter((x) => x.name === 'reins' || x.name === 'reins-pg')) {
    for (const [figure, what] of CHECKED) {
      const over = t.latency[figure]?.overBareP50 ?? null;
      out.push({
        target: t.name,
        what: `${what}, Reins minus the bare proxy`,
        limit: `<= +${TARGET_OVER_BARE_P50_MS} ms`,
        value: over === null ? 'not measured (no bare proxy in the run)' : `${signed(over)} ms`,
        pass: over === null ? null : over <= TARGET_OVER_BARE_P50_MS,
      });
      const overFloor = t.latency[figure]?.overFloorP50 ?? null;
      out.push({
        target: t.name,
        what: `${what}, Reins minus the audited floor of its store (${FLOOR_OF[t.name]})`,
        limit: `<= +${TARGET_OVER_BARE_P50_MS} ms`,
        value: overFloor === null ? 'not measured (no audited floor of this store in the run)' : `${signed(overFloor)} ms`,
        pass: overFloor === null ? null : overFloor <= TARGET_OVER_BARE_P50_MS,
      });
    }
  }
  return out;
}

/** What each audited floor alone adds over the bare proxy of each plane: why the targets are also read against it. */
function floorLines(summaries: TargetSummary[]): string[] {
  const lines: string[] = [];
  for (const t of summaries.filter((x) => x.name === 'floor' || x.name === 'floor-pg')) {
    for (const [figure, what] of CHECKED) {
      const over = t.latency[figure]?.overBareP50 ?? null;
      if (over === null) continue;
      const budget = over > TARGET_OVER_BARE_P50_MS ? `more than the whole +${TARGET_OVER_BARE_P50_MS} ms budget before any of Reins' own work` : `within the +${TARGET_OVER_BARE_P50_MS} ms budget`;
      lines.push(`${t.label}: ${what} ${signed(over)} ms over the bare proxy, ${budget}`);
    }
  }
  return lines;
}

function verdict(c: Check): string {
  return c.pass === null ? 'not measured' : c.pass ? 'pass' : 'FAIL';
}

const ms = (v: number | null | undefined, digits = 3) => (v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits));
const signed = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${v >= 0 ? '+' : ''}${v.toFixed(3)}`);
const micros = (v: number | null | undefined) => (v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(0));

function tableRows(summaries: TargetSummary[]): string[][] {
  const f = (t: TargetSummary, figure: Pooled) => t.latency[figure];
  const rows: [string, (t: TargetSummary) => string][] = [
    ['MCP p50', (t) => ms(f(t, 'mcp-seq')?.p50)],
    ['MCP p99', (t) => ms(f(t, 'mcp-seq')?.p99)],
    ['MCP added p50', (t) => signed(f(t, 'mcp-seq')?.addedP50)],
    ['MCP added p99', (t) => signed(f(t, 'mcp-seq')?.addedP99)],
    ['MCP over bare p50', (t) => signed(f(t, 'mcp-seq')?.overBareP50)],
    ['MCP over bare p99', (t) => signed(f(t, 'mcp-seq')?.overBareP99)],
    ['MCP over its floor p50', (t) => signed(f(t, 'mcp-seq')?.overFloorP50)],
    ['MCP max calls/s', (t) => (t.max ? t.max.rps.toFixed(0) : '-')],
    ['CPU µs/call', (t) => micros(t.max?.cpuUsPerCall)],
    ['CONNECT set-up p50', (t) => ms(f(t, 'egress-connect')?.p50)],
    ['CONNECT set-up p99', (t) => ms(f(t, 'egress-connect')?.p99)],
    ['CONNECT set-up added p50', (t) => signed(f(t, 'egress-connect')?.addedP50)],
    ['CONNECT set-up over bare p50', (t) => signed(f(t, 'egress-connect')?.overBareP50)],
    ['CONNECT set-up over its floor p50', (t) => signed(f(t, 'egress-connect')?.overFloorP50)],
    ['new conn p50', (t) => ms(f(t, 'egress-new')?.p50)],
    ['new conn p99', (t) => ms(f(t, 'egress-new')?.p99)],
    ['new conn added p50', (t) => signed(f(t, 'egress-new')?.addedP50)],
    ['new conn added p99', (t) => signed(f(t, 'egress-new')?.addedP99)],
    ['new conn over bare p50', (t) => signed(f(t, 'egress-new')?.overBareP50)],
    ['new conn over bare p99', (t) => signed(f(t, 'egress-new')?.overBareP99)],
    ['CPU µs/connection', (t) => micros(t.cpuUsPerConnection)],
    ['open tunnel p50', (t) => ms(f(t, 'egress-reuse')?.p50)],
    ['open tunnel added p50', (t) => signed(f(t, 'egress-reuse')?.addedP50)],
    ['open tunnel added p99', (t) => signed(f(t, 'egress-reuse')?.addedP99)],
    ['open tunnel over bare p50', (t) => signed(f(t, 'egress-reuse')?.overBareP50)],
  ];
  // One column per target, one row per figure, so it fits a terminal and the Markdown page.
  return [['target', ...summaries.map((t) => t.label)], ...rows.map(([name, cell]) => [name, ...summaries.map(cell)])];
}

function consoleTable(summaries: TargetSummary[]): string {
  const rows = tableRows(summaries);
  const widths = rows[0]!.map((_, j) => Math.max(...rows.map((r) => r[j]!.length)));
  return rows.map((r) => r.map((c, j) => (j === 0 ? c.padEnd(widths[j]!) : c.padStart(widths[j]!))).join('  ')).join('\n');
}

function markdownTable(summaries: TargetSummary[]): string {
  const [header, ...rows] = tableRows(summaries);
  return [`| ${header!.join(' | ')} |`, `| --- |${header!.slice(1).map(() => ' ---: |').join('')}`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

// ------------------------------------------------------------------ the machine's hop floor

interface HopFloor {
  direct: { p50: number; p99: number };
  relay: { p50: number; p99: number };
  /** Median over the rounds of (relay p50 - direct p50). */
  addedP50: number;
}

/**
 * hop-floor.ts: a 400-byte round trip to a TCP echo server, directly and through a byte relay placed where the
 * proxies are; what one more hop costs before any HTTP is parsed. Rounds alternate the two, like the targets'.
 */
async function measureHopFloor(children: Child[]): Promise<HopFloor> {
  const script = join(HERE, 'hop-floor.ts');
  const echo = await startServer('hop echo', [...TSX, script, 'echo'], { cpu: CPU.upstream });
  children.push(echo.child);
  const echoPort = new URL(echo.url).port;
  const relay = await startServer('hop relay', [...TSX, script, 'relay', echoPort], { cpu: CPU.gateway });
  children.push(relay.child);
  const [warmup, count] = args.quick ? [500, 2000] : [1000, 5000];
  const client = (port: string) => {
    const argv = [...TSX, script, 'client', port, String(warmup), String(count)];
    const out = CPU.generator === null ? execFileSync(process.execPath, argv) : execFileSync('taskset', ['--cpu-list', String(CPU.generator), process.execPath, ...argv]);
    return JSON.parse(out.toString('utf8').trim()) as { p50: number; p99: number };
  };
  const rounds: { direct: { p50: number; p99: number }; relay: { p50: number; p99: number } }[] = [];
  for (let round = 0; round < SETTINGS.rounds; round++) {
    const direct = client(echoPort);
    const relayed = client(new URL(relay.url).port);
    rounds.push({ direct, relay: relayed });
  }
  await Promise.all([echo.child.stop(), relay.child.stop()]);
  return {
    direct: { p50: median(rounds.map((r) => r.direct.p50)), p99: median(rounds.map((r) => r.direct.p99)) },
    relay: { p50: median(rounds.map((r) => r.relay.p50)), p99: median(rounds.map((r) => r.relay.p99)) },
    addedP50: median(rounds.map((r) => r.relay.p50 - r.direct.p50)),
  };
}

function hopFloorSentence(f: HopFloor): string {
  return (
    `a 400-byte round trip to a TCP echo server takes ${ms(f.direct.p50)} ms (p50) directly and ${ms(f.relay.p50)} ms through a relay ` +
    `that only copies bytes, placed where the proxies are: one more hop adds ${ms(f.addedP50)} ms before any HTTP is parsed`
  );
}

// ------------------------------------------------------------------ the run

async function main(): Promise<number> {
  const started = Date.now();
  const date = new Date().toISOString();
  const info = machineFacts(ROOT, ['@modelcontextprotocol/sdk', 'undici']);
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const stopAll = async () => {
    await Promise.all(children.map((c) => c.stop()));
    for (const c of cleanups.splice(0)) await c().catch(() => {});
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => void stopAll().then(() => process.exit(130)));

  // Reins runs from dist/, as `npm start` runs it: build it now so the figures are of the current sources.
  execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

  try {
    log(
      `planes-overhead${args.quick ? ' (quick)' : ''}: ${SETTINGS.rounds} round(s); ` +
        (PIN ? 'Reins and the bare proxies on CPU 1; generator, MCP upstream and TLS origin on CPU 0' : 'CPU placement left to the kernel'),
    );
    const mcpUpstream = await startServer('mcp upstream', [...TSX, join(HERE, 'mcp-upstream.ts')], { cpu: CPU.upstream });
    children.push(mcpUpstream.child);
    const origin = await startServer('tls origin', [...TSX, join(HERE, 'tls-origin.ts')], { cpu: CPU.upstream });
    children.push(origin.child);
    const originUrl = new URL(origin.url);
    const hopFloor = await measureHopFloor(children);
    log(`  hop floor: ${hopFloorSentence(hopFloor)}`);
    const loader = new Loader();
    children.push(loader.child);

    const emptyRounds = (): Record<Scenario, RoundResult[]> => ({ 'mcp-seq': [], 'mcp-max': [], 'egress-new': [], 'egress-reuse': [] });
    const originTarget = { host: originUrl.hostname, port: Number(originUrl.port) };
    const runs: Running[] = [];
    const notMeasured: { name: TargetName; label: string; reason: string }[] = [];
    runs.push({
      name: 'direct',
      label: LABELS.direct,
      mcp: await openMcpSession(mcpUpstream.url, {}),
      egress: { origin: originTarget, proxy: null },
      pids: { mcp: null, egress: null },
      toolCalls: 0,
      tunnels: 0,
      rounds: emptyRounds(),
      notes: [],
    });

    if (only.has('bare')) {
      // Two processes, one per plane, each pinned where Reins is: the MCP pass-through is bench/gateway-overhead's
      // bare proxy (node:http + undici Pool, body streamed up, answer streamed back, nothing parsed).
      const mcpBare = await startServer('bare mcp proxy', [...TSX, join(HERE, '../gateway-overhead/bare-proxy.ts'), new URL(mcpUpstream.url).origin], { cpu: CPU.gateway });
      children.push(mcpBare.child);
      const egressBare = await startServer('bare egress proxy', [...TSX, join(HERE, 'bare-egress-proxy.ts')], { cpu: CPU.gateway });
      children.push(egressBare.child);
      const proxy = new URL(egressBare.url);
      runs.push({
        name: 'bare',
        label: LABELS.bare,
        mcp: await openMcpSession(`${mcpBare.url}${new URL(mcpUpstream.url).pathname}`, {}),
        egress: {
          origin: originTarget,
          // Not checked by the bare proxy; sent so that the CONNECT request is as long as the one Reins reads.
          proxy: { host: proxy.hostname, port: Number(proxy.port), authorization: `Basic ${Buffer.from(`agent:${'0'.repeat(48)}`).toString('base64')}` },
        },
        pids: { mcp: mcpBare.child.pid, egress: egressBare.child.pid },
        toolCalls: 3,
        tunnels: 0,
        rounds: emptyRounds(),
        notes: [],
      });
    }

    // The audited floors (README.md, "The audited floors"): two processes, one per plane as the bare baseline is,
    // pinned where Reins is, each with its own store. MCP: bench/gateway-overhead's governed floor on the MCP plane;
    // egress: egress-floor.ts.
    for (const name of (['floor', 'floor-pg'] as const).filter((n) => only.has(n))) {
      try {
        const store = async (): Promise<string> => {
          if (name !== 'floor-pg') return 'memory';
          const db = await createBenchDatabase();
          cleanups.push(db.drop);
          return db.url;
        };
        const key = randomBytes(24).toString('hex');
        const mcpFloor = await startServer(`${name} mcp`, [...REINS_NODE_FLAGS, ...TSX, join(HERE, '../gateway-overhead/governed-floor.ts'), new URL(mcpUpstream.url).origin, key, await store(), 'search', 'mcp'], { cpu: CPU.gateway });
        children.push(mcpFloor.child);
        const egressFloor = await startServer(`${name} egress`, [...REINS_NODE_FLAGS, ...TSX, join(HERE, 'egress-floor.ts'), key, await store()], { cpu: CPU.gateway });
        children.push(egressFloor.child);
        const proxy = new URL(egressFloor.url);
        runs.push({
          name,
          label: LABELS[name],
          mcp: await openMcpSession(`${mcpFloor.url}${new URL(mcpUpstream.url).pathname}`, { authorization: `Bearer ${key}` }),
          egress: { origin: originTarget, proxy: { host: proxy.hostname, port: Number(proxy.port), authorization: `Basic ${Buffer.from(`agent:${key}`).toString('base64')}` } },
          pids: { mcp: mcpFloor.child.pid, egress: egressFloor.child.pid },
          audited: { mcp: `${mcpFloor.url}/__audited`, egress: `${egressFloor.url}/__audited` },
          toolCalls: 3, // the session check's calls
          tunnels: 0,
          rounds: emptyRounds(),
          notes: [],
        });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        log(`  ${name}: NOT MEASURED: ${reason}`);
        notMeasured.push({ name, label: LABELS[name], reason });
      }
    }

    for (const name of (['reins', 'reins-pg'] as const).filter((n) => only.has(n))) {
      try {
        let databaseUrl: string | null = null;
        if (name === 'reins-pg') {
          const db = await createBenchDatabase();
          cleanups.push(db.drop);
          databaseUrl = db.url;
        }
        const token = randomBytes(24).toString('hex');
        let egressUrl = '';
        const s = await startServer(name, [...REINS_NODE_FLAGS, ...TSX, join(HERE, 'reins-server.ts'), mcpUpstream.url, token, ...(databaseUrl ? [databaseUrl] : [])], {
          cpu: CPU.gateway,
          onLine: (line) => {
            if (line.startsWith('{"egress":')) egressUrl = (JSON.parse(line) as { egress: string }).egress;
          },
        });
        children.push(s.child);
        const agentKey = await setUpAgent(s.url, token);
        const proxy = new URL(egressUrl);
        const running: Running = {
          name,
          label: LABELS[name],
          mcp: await openMcpSession(`${s.url}/mcp/${MCP_SERVER_NAME}`, { authorization: `Bearer ${agentKey}` }),
          egress: {
            origin: originTarget,
            proxy: { host: proxy.hostname, port: Number(proxy.port), authorization: `Basic ${Buffer.from(`agent:${agentKey}`).toString('base64')}` },
          },
          pids: { mcp: s.child.pid, egress: s.child.pid },
          admin: { base: s.url, token },
          toolCalls: 3, // the session check's calls
          tunnels: 0,
          rounds: emptyRounds(),
          notes: [],
        };
        runs.push(running);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        log(`  ${name}: NOT MEASURED: ${reason}`);
        notMeasured.push({ name, label: LABELS[name], reason });
      }
    }

    const warnings: string[] = busyAtStartWarnings(info);
    const pooled = new Map<TargetName, Partial<Record<Pooled, number[]>>>();
    const measure = async (running: Running, job: PlanesJob, round: number): Promise<RoundResult> => {
      const pid = job.kind.startsWith('mcp') ? running.pids.mcp : running.pids.egress;
      const idle = [...new Set(runs.flatMap((r) => [r.pids.mcp, r.pids.egress]))].filter((p): p is number => p !== null && p !== pid);
      const snapshot = async () => ({
        cpu: pid === null ? 0 : processCpuMs(pid),
        tools: await upstreamToolCalls(mcpUpstream.url),
        origin: await originCount(origin.url),
        steal: stealMs(),
      });
      // Every other proxy process is frozen while one is measured: it shares the CPU, and its own periodic work would land here.
      for (const pid of idle) process.kill(pid, 'SIGSTOP');
      let before: Awaited<ReturnType<typeof snapshot>>;
      let after: typeof before;
      let result: PlanesResult;
      try {
        before = await snapshot();
        result = await loader.run(job);
        after = await snapshot();
      } finally {
        for (const pid of idle) process.kill(pid, 'SIGCONT');
      }
      const tools = after.tools - before.tools;
      running.toolCalls += tools;
      if (job.kind === 'egress-new' || job.kind === 'egress-reuse') running.tunnels += result.connectionsOpened;
      const { samples, tunnelSamples, ...rest } = result;
      if (round >= 0) {
        const mine = pooled.get(running.name) ?? {};
        if (samples && job.kind !== 'mcp-max') (mine[job.kind] ??= []).push(...samples);
        if (tunnelSamples) (mine['egress-connect'] ??= []).push(...tunnelSamples);
        pooled.set(running.name, mine);
      }
      const r: RoundResult = {
        ...rest,
        round,
        targetCpuMs: pid === null ? null : after.cpu - before.cpu,
        upstreamToolCalls: tools,
        originServed: after.origin.served - before.origin.served,
        originConnections: after.origin.connections - before.origin.connections,
        stealMs: after.steal - before.steal,
      };
      const at = `${running.name}, ${job.kind}, ${round < 0 ? 'warm-up' : `round ${round + 1}`}`;
      if (r.failed > 0) warnings.push(`${at}: ${r.failed} failed (${r.firstError})`);
      const answered = r.ok + r.warmupOk;
      if (job.kind.startsWith('mcp') && tools < answered) warnings.push(`${at}: ${answered} answers but the MCP upstream served ${tools} tools/call`);
      if (job.kind.startsWith('egress') && r.originServed < answered) warnings.push(`${at}: ${answered} answers but the origin served ${r.originServed}`);
      if (job.kind === 'egress-new' && r.originConnections < answered) warnings.push(`${at}: ${answered} new connections answered but the origin accepted ${r.originConnections} TLS connections`);
      return r;
    };

    const active = runs;
    for (const running of active) {
      await measure(running, { kind: 'mcp-max', target: running.mcp, connections: SETTINGS.maxConnections, warmupSeconds: 0, seconds: SETTINGS.warmMcpS }, -1);
      await measure(running, { kind: 'egress-new', target: running.egress, warmup: 0, requests: SETTINGS.warmConnections }, -1);
    }
    for (const scenario of SCENARIOS) {
      for (let round = 0; round < SETTINGS.rounds; round++) {
        const order = active.map((_, i) => active[(i + round) % active.length]!);
        for (const running of order) {
          const r = await measure(running, jobFor(scenario, running), round);
          running.rounds[scenario].push(r);
          const l = r.latency;
          log(
            `  ${scenario.padEnd(12)} round ${round + 1} ${running.name.padEnd(8)} ` +
              (scenario === 'mcp-max' ? `${r.rps.toFixed(0)} calls/s  p50 ${l?.p50.toFixed(3)} ms` : `p50 ${l?.p50.toFixed(3)} ms  p99 ${l?.p99.toFixed(3)} ms`) +
              `  (${r.ok} ok, ${r.failed} failed)`,
          );
        }
      }
    }

    // Every tools/call and every tunnel writes one decision event when decided (and an end event when over, not counted).
    await delay(1500);
    for (const r of runs.filter((x) => x.admin)) {
      const mcp = await countAuditEvents(r.admin!.base, r.admin!.token, 'mcp', new Date(started), new Date());
      const egress = await countAuditEvents(r.admin!.base, r.admin!.token, 'egress', new Date(started), new Date());
      r.notes.push(`audit: ${mcp ?? 'unknown'} mcp events for ${r.toolCalls} tools/call forwarded; ${egress ?? 'unknown'} egress events for ${r.tunnels} tunnels opened`);
      if (mcp !== r.toolCalls) warnings.push(`${r.name}: ${mcp ?? 'unknown'} mcp audit events for ${r.toolCalls} tools/call forwarded`);
      if (egress !== r.tunnels) warnings.push(`${r.name}: ${egress ?? 'unknown'} egress audit events for ${r.tunnels} tunnels`);
    }
    for (const r of runs.filter((x) => x.audited)) {
      const rowsOf = async (url: string) => ((await (await fetch(url)).json()) as { rows: number }).rows;
      const mcpRows = await rowsOf(r.audited!.mcp);
      const egressRows = await rowsOf(r.audited!.egress);
      // Two rows a POST (the decision and the end): every tools/call, and the session's initialize and notification.
      const posts = r.toolCalls + 2;
      r.notes.push(`audit: ${mcpRows} mcp rows for ${posts} MCP POSTs (${r.toolCalls} tools/call); ${egressRows} egress rows for ${r.tunnels} tunnels (two each: the decision and the end)`);
      if (mcpRows !== 2 * posts) warnings.push(`${r.name}: ${mcpRows} mcp audit rows for ${posts} MCP POSTs (two each expected)`);
      if (egressRows !== 2 * r.tunnels) warnings.push(`${r.name}: ${egressRows} egress audit rows for ${r.tunnels} tunnels (two each expected)`);
    }
    for (const r of runs) {
      for (const scenario of SCENARIOS) {
        for (const x of r.rounds[scenario]) {
          const wallMs = x.seconds * 1000;
          if (x.stealMs > 0.05 * wallMs * os.cpus().length) warnings.push(`${r.name}, ${scenario}, round ${x.round + 1}: the hypervisor took ${x.stealMs} ms of CPU (steal)`);
        }
      }
    }

    const summaries = summarizeAll(runs, pooled);
    const checked = checks(summaries);
    const elapsedS = (Date.now() - started) / 1000;
    process.stdout.write(`\n${consoleTable(summaries)}\n\n`);
    process.stdout.write(
      `latencies in ms over ${SETTINGS.rounds} interleaved round(s) pooled; "added" = minus direct, "over bare" = minus the bare proxy; ` +
        'MCP max calls/s, CPU µs/call and /connection: median of the rounds\n',
    );
    for (const t of summaries.filter((x) => x.phasesP50)) {
      const p = t.phasesP50!;
      process.stdout.write(`new connection phases p50 (${t.name}): ${t.name === 'direct' ? 'TCP connect' : 'TCP connect + CONNECT 200'} ${ms(p.tunnel)}, TLS handshake ${ms(p.tls)}, GET ${ms(p.request)}\n`);
    }
    for (const n of notMeasured) process.stdout.write(`${n.label}: not measured: ${n.reason}\n`);
    process.stdout.write(`hop floor: ${hopFloorSentence(hopFloor)}\n`);
    if (checked.length > 0) {
      process.stdout.write('\ntargets:\n');
      for (const c of checked) process.stdout.write(`  ${c.target}: ${c.what} ${c.limit}: ${c.value} ${verdict(c)}\n`);
      for (const line of floorLines(summaries)) process.stdout.write(`  why: ${line}\n`);
    }
    const notes = runs.flatMap((r) => r.notes.map((n) => `${r.label}: ${n}`));
    for (const n of notes) process.stdout.write(`${n}\n`);
    if (warnings.length > 0) process.stdout.write(`\nwarnings:\n${warnings.map((w) => `  ${w}`).join('\n')}\n`);
    process.stdout.write(`\n(${elapsedS.toFixed(0)} s)\n`);

    const outDir = resolve(args.out ?? (args.quick ? join(os.tmpdir(), 'reins-planes-overhead') : join(ROOT, 'bench/results')));
    const base = args.quick ? 'planes-overhead.quick' : 'planes-overhead';
    mkdirSync(outDir, { recursive: true });
    const json = {
      date,
      elapsedSeconds: elapsedS,
      quick: args.quick,
      settings: SETTINGS,
      cpuPlacement: { ...CPU, postgres: POSTGRES_PLACEMENT },
      targetOverBareP50Ms: TARGET_OVER_BARE_P50_MS,
      hopFloor,
      machine: info,
      summaries,
      checks: checked,
      warnings,
      notMeasured,
      targets: runs.map((r) => ({ name: r.name, label: r.label, toolCalls: r.toolCalls, tunnels: r.tunnels, notes: r.notes, rounds: r.rounds })),
    };
    writeFileSync(join(outDir, `${base}.json`), `${JSON.stringify(json, null, 2)}\n`);
    writeFileSync(join(outDir, `${base}.md`), markdown(date, info, hopFloor, summaries, checked, notes, warnings, notMeasured, elapsedS));
    log(`wrote ${relative(process.cwd(), join(outDir, base))}.{json,md}`);
    return args.strict && checked.some((c) => c.pass !== true) ? 2 : 0;
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
  hopFloor: HopFloor,
  summaries: TargetSummary[],
  checked: Check[],
  notes: string[],
  warnings: string[],
  notMeasured: { label: string; reason: string }[],
  elapsedS: number,
): string {
  const s = SETTINGS;
  const versions = info.versions as Record<string, string>;
  const lines = [
    `# MCP and egress overhead${args.quick ? ' (quick smoke run: too short to quote)' : ''}`,
    '',
    `${date}, ${info.cores} × ${info.cpuModel}, ${info.memoryGiB} GiB, ${info.kernel}, Node ${info.node} (OpenSSL ${info.openssl}); ` +
      `Reins ${String(info.reinsCommit).slice(0, 12)}${info.reinsSrcUncommittedChanges ? ' with uncommitted changes in src/' : ''}; ` +
      `@modelcontextprotocol/sdk ${versions['@modelcontextprotocol/sdk']}. Run took ${elapsedS.toFixed(0)} s. ` +
      `Machine speed ${String(info.speedMs)} ms (a fixed workload, lower is faster; bench/gateway-overhead/processes.ts machineSpeedMs). Load average (1/5/15 min) at start ${loadText(info.loadAverageAtStart)}, at end ${loadText(os.loadavg())}${info.nice ? `; every process of the run at nice ${String(info.nice)}` : ''}: the machine is shared, so read Reins against the bare proxies measured beside it. ` +
      'How to run and what each figure means: bench/planes-overhead/README.md.',
    '',
    PIN
      ? 'CPU placement: Reins and the bare proxies on CPU 1 (all their threads; only the one measured runs, the others are frozen); ' +
        'the load generator, the MCP upstream and the TLS origin on CPU 0' +
        (POSTGRES_PLACEMENT ? `, and ${POSTGRES_PLACEMENT}.` : '; the PostgreSQL server where the kernel puts it.')
      : 'CPU placement: left to the kernel (--no-pin).',
    '',
    `The machine's floor for one more hop: ${hopFloorSentence(hopFloor)} (bench/planes-overhead/hop-floor.ts; median of the rounds' p50s).`,
    '',
    `Latencies in ms, over every answer of the ${s.rounds} round(s) pooled; "added" is a proxy's figure minus the direct one, ` +
      '"over bare" is a figure minus the bare proxy\'s (what governance costs on top of any proxy), "over its floor" Reins\' figure minus the audited floor of its store. ' +
      `MCP sequential: one keep-alive connection, ${s.mcpRequests} tools/call per round after ${s.mcpWarmup} warm-up. ` +
      `MCP max: closed loop over ${s.maxConnections} connections, ${s.maxS} s per round after ${s.maxWarmupS} s warm-up (median of the rounds; ` +
      "CPU µs/call is the proxy's own process). " +
      'CONNECT set-up: TCP connect to the proxy, CONNECT and its 200 (direct: the TCP connect to the origin); that is what the tunnel adds ' +
      'before the first byte. New connection: the set-up, then a full TLS handshake and one GET relayed through the tunnel, then close; ' +
      `${s.newRequests} per round after ${s.newWarmup} warm-up (CPU µs/connection: the egress process's own). Open tunnel: one GET at a time on a connection opened before, ` +
      `${s.reuseRequests} per round after ${s.reuseWarmup} warm-up.`,
    '',
    markdownTable(summaries),
    '',
  ];
  const phased = summaries.filter((t) => t.phasesP50);
  if (phased.length > 0) {
    lines.push('New-connection phases, p50 in ms (median of the rounds):', '', '| target | TCP connect (+ CONNECT 200) | TLS handshake | GET |', '| --- | ---: | ---: | ---: |');
    for (const t of phased) lines.push(`| ${t.label} | ${ms(t.phasesP50!.tunnel)} | ${ms(t.phasesP50!.tls)} | ${ms(t.phasesP50!.request)} |`);
    lines.push('');
  }
  if (notMeasured.length > 0) {
    lines.push('## Not measured', '');
    for (const n of notMeasured) lines.push(`- ${n.label}: ${n.reason}`);
    lines.push('');
  }
  if (checked.length > 0) {
    lines.push(
      `## Targets (issue: governance adds at most ${TARGET_OVER_BARE_P50_MS} ms p50 over the bare proxy of the same plane)`,
      '',
      'Measured side by side in this run: the bare proxy is the floor any proxy sets on this machine at this moment; the audited floor ' +
        'of each store is the bare proxy of each plane plus the least per-call work of a proxy that authenticates, decides and ' +
        "keeps a searchable audit log (two rows a call or tunnel in Reins' own audit table): each target is read against it too (README.md, \"The audited floors\").",
      '',
      ...floorLines(summaries).map((line) => `- why: ${line}`),
      '',
      '| proxy | figure | target | value | result |',
      '| --- | --- | --- | --- | --- |',
    );
    for (const c of checked) lines.push(`| ${c.target} | ${c.what} | ${c.limit} | ${c.value} | ${c.pass === false ? '**fail**' : verdict(c)} |`);
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
    log(`planes-overhead: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
