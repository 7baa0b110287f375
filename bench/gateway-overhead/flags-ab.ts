/**
 * Reins under two sets of Node flags, side by side: both replicas run at once (each on its own fresh database,
 * both pinned to CPU 1 with the fake upstream and the load generator on CPU 0), and the rounds alternate between
 * them, the one not measured frozen (SIGSTOP). Each round measures both at their maximum (CPU per request,
 * requests/s) and at a paced rate (p99, CPU per request); the report gives B against A round by round, since the
 * machine's speed moves between rounds by more than the differences a flag makes.
 *
 *   node --import tsx bench/gateway-overhead/flags-ab.ts --b=--single-threaded-gc [--a='…'] [--rounds 8] [--store pg|pglite]
 *
 * Reins runs from dist/ (built first unless --no-build), started as reins-server.ts starts it for the main bench.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadJob } from './load.js';
import { type Child, canPin, processCpuMs } from './processes.js';
import { median } from './report.js';
import { startBenchReins, startUpstreamAndLoader } from './rig.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');

const { values: args } = parseArgs({
  options: {
    a: { type: 'string', default: '' },
    b: { type: 'string' },
    rounds: { type: 'string', default: '8' },
    store: { type: 'string', default: 'pg' },
    rate: { type: 'string', default: '1000' },
    'no-build': { type: 'boolean', default: false },
  },
});
if (args.b === undefined) throw new Error("--b: the Node flags of variant B are required (--a defaults to none), e.g. --b=--single-threaded-gc");
const store = args.store;
if (store !== 'pg' && store !== 'pglite') throw new Error(`--store: pg or pglite, got "${store}"`);
const rounds = Number(args.rounds);
const rate = Number(args.rate);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
if (!(rate > 0)) throw new Error(`--rate: requests per second, got "${args.rate}"`);
const flags = { A: args.a.split(' ').filter((f) => f !== ''), B: args.b.split(' ').filter((f) => f !== '') };
const pin = canPin();
const CPU = { gateway: pin ? 1 : null, rest: pin ? 0 : null };

if (!args['no-build']) execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

interface Figures {
  maxRps: number;
  maxCpuUs: number;
  pacedP99: number;
  pacedCpuUs: number;
}

const children: Child[] = [];
const cleanups: (() => Promise<void>)[] = [];
try {
  const { upstream, loader } = await startUpstreamAndLoader(CPU.rest, children);
  const variants: ({ name: 'A' | 'B' } & Awaited<ReturnType<typeof startBenchReins>>)[] = [];
  for (const name of ['A', 'B'] as const) {
    variants.push({ name, ...(await startBenchReins(`reins ${name}`, store, flags[name], upstream, CPU.gateway, children, cleanups)) });
  }
  const run = async (v: (typeof variants)[number], job: LoadJob) => {
    const other = variants.find((x) => x !== v)!;
    process.kill(other.pid, 'SIGSTOP');
    try {
      const before = processCpuMs(v.pid);
      const result = await loader.run(job);
      return { result, cpuUs: ((processCpuMs(v.pid) - before) * 1000) / (result.ok + result.warmupOk) };
    } finally {
      process.kill(other.pid, 'SIGCONT');
    }
  };
  // Warm both (JIT) before any round counts.
  for (const v of variants) await run(v, { kind: 'max', target: v.target, connections: 50, warmupSeconds: 0, seconds: 3 });
  const byRound: Record<'A' | 'B', Figures>[] = [];
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? variants : [...variants].reverse();
    const got: Partial<Record<'A' | 'B', Figures>> = {};
    for (const v of order) {
      const max = await run(v, { kind: 'max', target: v.target, connections: 50, warmupSeconds: 1, seconds: 2 });
      const paced = await run(v, { kind: 'paced', target: v.target, rate, warmupSeconds: 0.5, seconds: 2, connections: 32 });
      got[v.name] = { maxRps: max.result.rps, maxCpuUs: max.cpuUs, pacedP99: paced.result.latency?.p99 ?? Number.NaN, pacedCpuUs: paced.cpuUs };
    }
    byRound.push(got as Record<'A' | 'B', Figures>);
    const f = (x: Figures) => `${Math.round(x.maxRps)}/s ${x.maxCpuUs.toFixed(0)} µs, paced p99 ${x.pacedP99.toFixed(2)} ms ${x.pacedCpuUs.toFixed(0)} µs`;
    process.stdout.write(`round ${r + 1}: A ${f(got.A!)} | B ${f(got.B!)}\n`);
  }
  const ratio = (pick: (x: Figures) => number) => byRound.map((r) => pick(r.B) / pick(r.A));
  const line = (label: string, xs: number[]) =>
    `${label}: B/A median ${median(xs).toFixed(3)}; rounds ${xs.map((x) => x.toFixed(2)).join(' ')}; B lower in ${xs.filter((x) => x < 1).length} of ${xs.length}`;
  process.stdout.write(
    [
      '',
      `A: node ${flags.A.join(' ') || '(no flags)'}; B: node ${flags.B.join(' ')}; store ${args.store}; ${rounds} rounds; ${pin ? 'both on CPU 1' : 'unpinned'}`,
      line('max requests/s', ratio((x) => x.maxRps)),
      line('CPU µs/request at the maximum', ratio((x) => x.maxCpuUs)),
      line(`p99 at ${rate}/s`, ratio((x) => x.pacedP99)),
      line(`CPU µs/request at ${rate}/s`, ratio((x) => x.pacedCpuUs)),
      '',
    ].join('\n'),
  );
} finally {
  for (const c of children.reverse()) await c.stop();
  for (const c of cleanups) await c();
}
