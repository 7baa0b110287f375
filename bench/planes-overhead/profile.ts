/**
 * Where Reins' CPU goes on one plane, and what a change did to it. One Reins replica (from dist/, built first) with
 * the bench's upstreams, a fixed load on one plane, and the proxy's own CPU time per call or per connection, read
 * from the kernel's per-thread run time (/proc/<pid>/task/<tid>/schedstat, ns; GC and libuv threads included).
 *
 *   node --import tsx bench/planes-overhead/profile.ts [--plane mcp|egress] [--store postgres|pglite|pglite,postgres]
 *        [--calls N] [--repeat N] [--bare | --bare-only] [--compare DIR] [--cpu-prof DIR] [--focus name,name]
 *        [--floor] [--perf DIR] [--top N] [--no-pin] [--no-build]
 *
 * mcp: `tools/call` one at a time on one keep-alive connection (run.ts's mcp-seq); egress: one new connection at a
 * time, CONNECT, TLS handshake, one GET, close (run.ts's egress-new). After one warm-up job per proxy, `--repeat`
 * rounds of one `--calls` job per proxy, in turns, each proxy alone on its CPU while the others are frozen.
 *
 * CPU per call moves less than latency when the machine is busy with other work, but it still moves (caches,
 * clock): compare two proxies in turns, round by round, rather than runs taken minutes apart. Two proxies at once:
 *   --bare          Reins and the plane's bare proxy (run.ts's baseline): what governance costs over a plain proxy
 *   --floor         Reins and the audited floor of the first store (run.ts's `floor`, `floor-pg`): what Reins spends
 *                   beyond the least a proxy that audits every call spends
 *   --compare DIR   Reins of this checkout and of another (DIR/bench/planes-overhead/reins-server.ts, DIR/dist):
 *                   what a change did
 *   --store pglite,postgres   one Reins per store
 * With two, the first's figures minus the second's are printed round by round, with their median.
 * --bare-only measures the bare proxy alone.
 *
 * --cpu-prof DIR: a V8 sampling profile of this checkout's Reins over the measured rounds only (reins-server.ts
 * starts and stops it on SIGUSR2), summarised by area, by self time and by time inside the --focus functions.
 * The profiler costs CPU itself (an in-process inspector session): take CPU figures from a run without it.
 *
 * --perf DIR: Linux perf on every proxy over its measured jobs (each started with --perf-basic-prof), every sample
 * charged to the first JavaScript function on its stack (bench/gateway-overhead/perf-samples.ts), as µs per call;
 * with two proxies, the first's minus the second's function by function (--top N rows, default 40). Unlike V8's
 * profiler, perf samples CPU time only, so these are microseconds, not shares. Needs perf and the right to use it.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase } from '../gateway-overhead/bench-database.js';
import { type Child, JobChild, canPin, pinPostgres, startServer } from '../gateway-overhead/processes.js';
import type { PlanesJob, PlanesResult } from './load.js';
import { addInto, attributePerf, differenceLines, requirePerf, startPerf, topLines, totalOf } from '../gateway-overhead/perf-samples.js';
import { MCP_SERVER_NAME, type EgressTarget, type McpTarget } from './payloads.js';
import { openMcpSession, setUpAgent } from './reins-setup.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const TSX = ['--import', 'tsx'];

const { values: args } = parseArgs({
  options: {
    plane: { type: 'string', default: 'mcp' },
    store: { type: 'string', default: 'postgres' },
    calls: { type: 'string' },
    repeat: { type: 'string', default: '5' },
    'cpu-prof': { type: 'string' },
    focus: { type: 'string' },
    'no-pin': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    bare: { type: 'boolean', default: false },
    'bare-only': { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    compare: { type: 'string' },
    perf: { type: 'string' },
    top: { type: 'string', default: '40' },
  },
});
if (args.plane !== 'mcp' && args.plane !== 'egress') throw new Error(`--plane: mcp or egress, got "${args.plane}"`);
const stores = args.store!.split(',');
for (const store of stores) if (store !== 'postgres' && store !== 'pglite') throw new Error(`--store: postgres, pglite or both (comma-separated), got "${args.store}"`);
const plane = args.plane;
const calls = Number(args.calls ?? (plane === 'mcp' ? 3000 : 1000));
const repeat = Number(args.repeat);
if (!Number.isInteger(calls) || calls < 1 || !Number.isInteger(repeat) || repeat < 1) throw new Error('--calls and --repeat: whole numbers from 1');
const PIN = !args['no-pin'] && canPin();
// The PostgreSQL server off the measured proxy's core, as in run.ts.
if (PIN && stores.includes('postgres')) pinPostgres(0);
const perfDir = args.perf ? resolve(args.perf) : null;
if (perfDir) {
  requirePerf();
  mkdirSync(perfDir, { recursive: true });
}
/** Node's flag that writes /tmp/perf-<pid>.map, from which perf names the compiled JavaScript functions. */
const PERF_MAP = perfDir ? ['--perf-basic-prof'] : [];
const CPU = { generator: PIN ? 0 : null, upstream: PIN ? 0 : null, gateway: PIN ? 1 : null };

function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** CPU run time of every thread of a process, in ns (the kernel's own accounting, not 10 ms ticks). */
function runTimeNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return total;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
}

// ------------------------------------------------------------------ the profile

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

function frameName(n: ProfileNode): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const file = url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '');
  return `${functionName || '(anonymous)'} ${file ? `${file}:${lineNumber + 1}` : ''}`.trim();
}

/** Where a frame's code lives: a package, a folder of dist/, node's internals, or V8 (GC, program, idle). */
function area(n: ProfileNode): string {
  const url = n.callFrame.url;
  if (url === '') return n.callFrame.functionName.startsWith('(') ? n.callFrame.functionName : '(native)';
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/')[1] ?? url.slice(5)}`;
  const dist = /\/dist\/(.*)$/.exec(url);
  if (dist) return `reins ${dist[1]!.split('/').slice(0, -1).join('/') || '.'}/${dist[1]!.split('/').pop()}`;
  return url.replace(`file://${ROOT}/`, '');
}

function summariseProfile(path: string, perCall: number, focus: string[]): void {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  // A gap far longer than the sampling interval is the process frozen while another proxy was measured (the
  // sampler stops with it), not time spent where the next sample happens to land.
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    if (us < 5_000) selfUs.set(id, (selfUs.get(id) ?? 0) + us);
  });
  let busy = 0;
  const byFrame = new Map<string, number>();
  const byArea = new Map<string, number>();
  const inside = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') continue;
    busy += us;
    byFrame.set(frameName(n), (byFrame.get(frameName(n)) ?? 0) + us);
    byArea.set(area(n), (byArea.get(area(n)) ?? 0) + us);
    // Time inside each focused function: every sample with it on the stack, counted once per sample.
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = byId.get(at)!.callFrame.functionName;
      if (focus.includes(name) && !seen.has(name)) {
        seen.add(name);
        inside.set(name, (inside.get(name) ?? 0) + us);
      }
    }
  }
  const show = (title: string, m: Map<string, number>, rows: number) => {
    log(`\n${title} (µs per ${plane === 'mcp' ? 'call' : 'connection'}, share of busy time):`);
    for (const [name, us] of [...m].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
      log(`  ${(us / perCall).toFixed(1).padStart(7)}  ${((us / busy) * 100).toFixed(1).padStart(5)}%  ${name}`);
    }
  };
  log(`\nprofile ${path}: ${(busy / 1000).toFixed(0)} ms busy over ${perCall} ${plane === 'mcp' ? 'calls' : 'connections'}`);
  show('by area', byArea, 25);
  show('by function, self time', byFrame, 45);
  if (focus.length > 0) show('inside', inside, focus.length);
}

// ------------------------------------------------------------------ the run

/** One proxy process being measured: its pid, where the generator sends the plane's load, and its profiler switch. */
interface Subject {
  label: string;
  pid: number;
  target: PlanesJob['target'];
  toggleProfile?: (() => Promise<string>) | undefined;
}

/** A proxy child that profile-switch.ts can profile: `toggle` starts or stops its profiler and waits for its answer. */
async function startProxy(name: string, args: string[], profileDir: string | null, onLine?: (line: string) => void) {
  let said: (value: string) => void = () => {};
  const s = await startServer(name, args, {
    cpu: CPU.gateway,
    env: profileDir ? { ...process.env, BENCH_CPU_PROFILE_DIR: profileDir } : process.env,
    onLine: (line) => {
      if (line.startsWith('{"profile":')) said((JSON.parse(line) as { profile: string }).profile);
      else onLine?.(line);
    },
  });
  const toggle = () => {
    const answer = new Promise<string>((r) => (said = r));
    process.kill(s.child.pid, 'SIGUSR2');
    return answer;
  };
  return { ...s, ...(profileDir ? { toggleProfile: toggle } : {}) };
}

async function main(): Promise<void> {
  const roots = args['bare-only'] ? [] : [ROOT, ...(args.compare ? [resolve(args.compare)] : [])];
  if (!args['no-build']) {
    for (const root of roots) execFileSync(process.execPath, [join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
  }
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const mcpUpstream = await startServer('mcp upstream', [...TSX, join(HERE, 'mcp-upstream.ts')], { cpu: CPU.upstream });
    children.push(mcpUpstream.child);
    const origin = await startServer('tls origin', [...TSX, join(HERE, 'tls-origin.ts')], { cpu: CPU.upstream });
    children.push(origin.child);
    const originUrl = new URL(origin.url);
    const originAt = { host: originUrl.hostname, port: Number(originUrl.port) };
    const loader = new JobChild<PlanesJob, PlanesResult>('load generator', [...TSX, join(HERE, 'load.ts')], CPU.generator);
    children.push(loader.child);
    const profileDir = args['cpu-prof'] ? resolve(args['cpu-prof']) : null;
    if (profileDir) mkdirSync(profileDir, { recursive: true });

    const subjects: Subject[] = [];
    for (const [root, store] of roots.flatMap((r) => stores.map((st) => [r, st] as const))) {
      let databaseUrl: string | null = null;
      if (store === 'postgres') {
        const db = await createBenchDatabase();
        cleanups.push(db.drop);
        databaseUrl = db.url;
      }
      const token = randomBytes(24).toString('hex');
      let egressUrl = '';
      // Each checkout's own reins-server.ts runs its own dist/; only this checkout's first store is profiled.
      const reins = await startProxy(
        `reins (${root})`,
        [...PERF_MAP, ...TSX, join(root, 'bench/planes-overhead/reins-server.ts'), mcpUpstream.url, token, ...(databaseUrl ? [databaseUrl] : [])],
        root === ROOT && store === stores[0] ? profileDir : null,
        (line) => {
          if (line.startsWith('{"egress":')) egressUrl = (JSON.parse(line) as { egress: string }).egress;
        },
      );
      children.push(reins.child);
      const agentKey = await setUpAgent(reins.url, token);
      const proxy = new URL(egressUrl);
      const target: PlanesJob['target'] =
        plane === 'mcp'
          ? await openMcpSession(`${reins.url}/mcp/${MCP_SERVER_NAME}`, { authorization: `Bearer ${agentKey}` })
          : { origin: originAt, proxy: { host: proxy.hostname, port: Number(proxy.port), authorization: `Basic ${Buffer.from(`agent:${agentKey}`).toString('base64')}` } };
      subjects.push({ label: `Reins on ${store}${roots.length > 1 ? ` (${root})` : ''}`, pid: reins.child.pid, target, toggleProfile: reins.toggleProfile });
    }

    // Last, so that with two proxies the difference printed is Reins' minus the bare proxy's.
    if (args.bare || args['bare-only']) {
      // bench/gateway-overhead's bare proxy has no profiler switch; the bare egress proxy has.
      const bare =
        plane === 'mcp'
          ? await startProxy('bare mcp proxy', [...PERF_MAP, ...TSX, join(HERE, '../gateway-overhead/bare-proxy.ts'), new URL(mcpUpstream.url).origin], null)
          : await startProxy('bare egress proxy', [...PERF_MAP, ...TSX, join(HERE, 'bare-egress-proxy.ts')], profileDir);
      children.push(bare.child);
      const target: PlanesJob['target'] =
        plane === 'mcp'
          ? await openMcpSession(`${bare.url}${new URL(mcpUpstream.url).pathname}`, {})
          : { origin: originAt, proxy: { host: '127.0.0.1', port: Number(new URL(bare.url).port), authorization: 'Basic x' } };
      subjects.push({ label: 'the bare proxy', pid: bare.child.pid, target, toggleProfile: bare.toggleProfile });
    }
    // The audited floor of the first store (run.ts's `floor`, `floor-pg`), last for the same reason.
    if (args.floor) {
      let store = 'memory';
      if (stores[0] === 'postgres') {
        const db = await createBenchDatabase();
        cleanups.push(db.drop);
        store = db.url;
      }
      const key = randomBytes(24).toString('hex');
      const floor =
        plane === 'mcp'
          ? await startProxy('audited mcp floor', [...PERF_MAP, ...TSX, join(HERE, '../gateway-overhead/governed-floor.ts'), new URL(mcpUpstream.url).origin, key, store, 'search', 'mcp'], null)
          : await startProxy('audited egress floor', [...PERF_MAP, ...TSX, join(HERE, 'egress-floor.ts'), key, store], null);
      children.push(floor.child);
      const target: PlanesJob['target'] =
        plane === 'mcp'
          ? await openMcpSession(`${floor.url}${new URL(mcpUpstream.url).pathname}`, { authorization: `Bearer ${key}` })
          : { origin: originAt, proxy: { host: '127.0.0.1', port: Number(new URL(floor.url).port), authorization: `Basic ${Buffer.from(`agent:${key}`).toString('base64')}` } };
      subjects.push({ label: `the audited floor on ${stores[0]}`, pid: floor.child.pid, target });
    }
    await measureCpu(loader, subjects);
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    for (const c of cleanups) await c().catch(() => {});
  }
}

/**
 * One warm-up job per subject, then `repeat` rounds of one job each, the subjects in turns and each measured
 * alone (the others frozen), with the CPU per call of each job. Two subjects (--compare) are also compared round by
 * round: a pair of jobs run seconds apart sees the same machine, so the median of the pairs' differences is
 * steadier than either median.
 */
async function measureCpu(loader: JobChild<PlanesJob, PlanesResult>, subjects: Subject[]): Promise<void> {
  const job = (target: PlanesJob['target'], n: number): PlanesJob =>
    plane === 'mcp' ? { kind: 'mcp-seq', target: target as McpTarget, warmup: 0, requests: n } : { kind: 'egress-new', target: target as EgressTarget, warmup: 0, requests: n };
  const unit = plane === 'mcp' ? 'call' : 'connection';
  log(`profile: ${plane}, ${calls} per job, ${repeat} measured round(s) after one warm-up job; ${PIN ? 'proxies on CPU 1' : 'unpinned'}`);
  const frozen = async <T>(subject: Subject, run: () => Promise<T>): Promise<T> => {
    const others = subjects.filter((s) => s !== subject);
    for (const o of others) process.kill(o.pid, 'SIGSTOP');
    try {
      return await run();
    } finally {
      for (const o of others) process.kill(o.pid, 'SIGCONT');
    }
  };
  for (const s of subjects) await frozen(s, () => loader.run(job(s.target, calls)));
  for (const s of subjects) if (s.toggleProfile) await s.toggleProfile();
  const perCall = subjects.map(() => [] as number[]);
  const p50s = subjects.map(() => [] as number[]);
  const samples = subjects.map(() => [] as number[]);
  const phases = subjects.map(() => ({ tunnel: [] as number[], tls: [] as number[], request: [] as number[] }));
  const perfBy = subjects.map(() => new Map<string, number>());
  for (let round = 0; round < repeat; round++) {
    for (let k = 0; k < subjects.length; k++) {
      const i = (k + round) % subjects.length;
      const s = subjects[i]!;
      const { r, used } = await frozen(s, async () => {
        const data = perfDir ? join(perfDir, `${i}-${round}.perf.data`) : null;
        const perf = data ? startPerf(s.pid, data) : null;
        const before = runTimeNs(s.pid);
        const r = await loader.run(job(s.target, calls));
        const used = runTimeNs(s.pid) - before;
        await perf?.stop();
        // µs per call of all the rounds together: each round's share is its calls over all of them.
        if (data) addInto(perfBy[i]!, attributePerf(data, r.ok * repeat));
        return { r, used };
      });
      if (r.failed > 0) throw new Error(`${s.label}: ${r.failed} failed: ${r.firstError}`);
      perCall[i]!.push(used / 1000 / r.ok);
      p50s[i]!.push(r.latency?.p50 ?? Number.NaN);
      samples[i]!.push(...(r.samples ?? []));
      if (r.phases) for (const k of ['tunnel', 'tls', 'request'] as const) phases[i]![k].push(r.phases[k]?.p50 ?? Number.NaN);
      log(`  round ${round + 1}, ${s.label}: ${(used / 1000 / r.ok).toFixed(1)} µs of CPU per ${unit}; latency p50 ${r.latency?.p50.toFixed(3)} ms`);
    }
  }
  subjects.forEach((s, i) => {
    const v = perCall[i]!;
    process.stdout.write(
      `${plane}, ${s.label}: CPU per ${unit}: min ${Math.min(...v).toFixed(1)} µs, median ${median(v).toFixed(1)} µs ` +
        `(${v.map((x) => x.toFixed(0)).join(', ')}); latency p50 median ${median(p50s[i]!).toFixed(3)} ms\n`,
    );
    const sorted = Float64Array.from(samples[i]!).sort();
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
    process.stdout.write(`  latency, every job pooled (ms): ${[0.1, 0.25, 0.5, 0.75, 0.9, 0.99].map((q) => `p${q * 100} ${at(q).toFixed(3)}`).join(', ')}\n`);
    const ph = phases[i]!;
    if (ph.tunnel.length > 0) {
      process.stdout.write(`  phases, median of the jobs' p50 (ms): set-up ${median(ph.tunnel).toFixed(3)}, TLS handshake ${median(ph.tls).toFixed(3)}, GET ${median(ph.request).toFixed(3)}\n`);
    }
  });
  if (subjects.length === 2) {
    const diffs = perCall[0]!.map((v, round) => v - perCall[1]![round]!);
    process.stdout.write(
      `${plane}: first minus second, CPU per ${unit}, round by round: median ${median(diffs).toFixed(1)} µs (${diffs.map((x) => x.toFixed(0)).join(', ')}); ` +
        `latency p50: median ${median(p50s[0]!.map((v, round) => v - p50s[1]![round]!)).toFixed(3)} ms\n`,
    );
  }
  if (perfDir) {
    const top = Number(args.top);
    const lines: string[] = [];
    subjects.forEach((s, i) => {
      lines.push(`\n${s.label}: perf ${totalOf(perfBy[i]!).toFixed(1)} µs per ${unit}, by first JavaScript frame:`, ...topLines(perfBy[i]!, top));
    });
    if (subjects.length === 2) {
      lines.push(`\n${subjects[0]!.label} minus ${subjects[1]!.label}: ${(totalOf(perfBy[0]!) - totalOf(perfBy[1]!)).toFixed(1)} µs per ${unit} (perf); by function (first, second):`);
      lines.push(...differenceLines(perfBy[0]!, perfBy[1]!, top));
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    writeFileSync(join(perfDir, 'attribution.txt'), `${lines.join('\n')}\n`);
  }
  for (const s of subjects) if (s.toggleProfile) summariseProfile(await s.toggleProfile(), calls * repeat, (args.focus ?? '').split(',').filter(Boolean));
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`profile: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
