/**
 * Two variants of Reins side by side (other Node flags, or another checkout's build): both replicas run at once (each on its own fresh database,
 * both pinned to CPU 1 with the fake upstream and the load generator on CPU 0), and the rounds alternate between
 * them, the one not measured frozen (SIGSTOP). Each round measures both at their maximum (CPU per request,
 * requests/s), at a paced rate (p99, CPU per request) and one request at a time (p50); the report gives B against A round by round, since the
 * machine's speed moves between rounds by more than the differences compared here. It sits twice, with fresh
 * processes and the start order swapped (see `sittings`).
 *
 *   node --import tsx bench/gateway-overhead/flags-ab.ts --b=--single-threaded-gc [--a='…'] [--rounds 8] [--store pg|pglite] [--no-realtime]
 *
 * Reins runs from dist/ (built first unless --no-build), started as reins-server.ts starts it for the main bench.
 * `--a-root DIR` / `--b-root DIR` run a variant from another checkout (its own dist/, built there beforehand), so
 * the same comparison sets two builds side by side: `git worktree add /tmp/base main`, `ln -s` this node_modules
 * into it, `npx tsc -p tsconfig.build.json` there, then `--a-root /tmp/base`.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadJob } from './load.js';
import { type Child, canPin, instrumentsFirst, pinPostgres, processCpuMs } from './processes.js';
import { median } from './report.js';
import { startBenchReins, startUpstreamAndLoader } from './rig.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');

const { values: args } = parseArgs({
  options: {
    a: { type: 'string', default: '' },
    b: { type: 'string', default: '' },
    'a-root': { type: 'string' },
    'b-root': { type: 'string' },
    rounds: { type: 'string', default: '8' },
    store: { type: 'string', default: 'pg' },
    rate: { type: 'string', default: '1000' },
    'no-build': { type: 'boolean', default: false },
    'no-realtime': { type: 'boolean', default: false },
  },
});
const roots = { A: args['a-root'] === undefined ? ROOT : resolve(args['a-root']), B: args['b-root'] === undefined ? ROOT : resolve(args['b-root']) };
if (args.a === args.b && roots.A === roots.B) throw new Error('A and B are the same: give B other flags (--b=…) or another checkout (--b-root DIR)');
if (args.store !== 'pg' && args.store !== 'pglite') throw new Error(`--store: pg or pglite, got "${args.store}"`);
const store: 'pg' | 'pglite' = args.store;
const rounds = Number(args.rounds);
const rate = Number(args.rate);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
if (!(rate > 0)) throw new Error(`--rate: requests per second, got "${args.rate}"`);
const flags = { A: args.a.split(' ').filter((f) => f !== ''), B: args.b.split(' ').filter((f) => f !== '') };
const pin = canPin();
const CPU = { gateway: pin ? 1 : null, rest: pin ? 0 : null };
// The PostgreSQL server off the gateways' core, as in run.ts.
if (pin && args.store === 'pg') pinPostgres(0);

if (!args['no-build']) execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });

interface Figures {
  maxRps: number;
  maxCpuUs: number;
  pacedP99: number;
  pacedCpuUs: number;
  /** p50 of one request at a time on one connection (run.ts's sequential job): what the path costs run cold. */
  seqP50: number;
}

/**
 * One sitting: both replicas started in `startOrder`, warmed, then `rounds` alternating rounds. Returns each
 * round's figures of A and B.
 */
async function sitting(startOrder: readonly ('A' | 'B')[]): Promise<Record<'A' | 'B', Figures>[]> {
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const { upstream, upstreamPid, loader } = await startUpstreamAndLoader(CPU.rest, children);
    const variants: ({ name: 'A' | 'B' } & Awaited<ReturnType<typeof startBenchReins>>)[] = [];
    for (const name of startOrder) {
      variants.push({ name, ...(await startBenchReins(`reins ${name}`, store, flags[name], upstream, CPU.gateway, children, cleanups, roots[name])) });
    }
    // The paced job as run.ts runs it: the instruments' main threads at real-time priority, so that the database's
    // work on their CPU does not delay the clock that times the answers (README.md, "Where the tail waits").
    const run = async (v: (typeof variants)[number], job: LoadJob) => {
      const other = variants.find((x) => x !== v)!;
      process.kill(other.pid, 'SIGSTOP');
      const restore = job.kind === 'paced' && pin && !args['no-realtime'] ? instrumentsFirst([loader.child.pid, upstreamPid]) : null;
      try {
        const before = processCpuMs(v.pid);
        const result = await loader.run(job);
        return { result, cpuUs: ((processCpuMs(v.pid) - before) * 1000) / (result.ok + result.warmupOk) };
      } finally {
        restore?.();
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
        const seq = await run(v, { kind: 'sequential', target: v.target, warmup: 300, requests: 1500 });
        got[v.name] = {
          maxRps: max.result.rps,
          maxCpuUs: max.cpuUs,
          pacedP99: paced.result.latency?.p99 ?? Number.NaN,
          pacedCpuUs: paced.cpuUs,
          seqP50: seq.result.latency?.p50 ?? Number.NaN,
        };
      }
      byRound.push(got as Record<'A' | 'B', Figures>);
      const f = (x: Figures) =>
        `${Math.round(x.maxRps)}/s ${x.maxCpuUs.toFixed(0)} µs, paced p99 ${x.pacedP99.toFixed(2)} ms ${x.pacedCpuUs.toFixed(0)} µs, sequential p50 ${x.seqP50.toFixed(3)} ms`;
      process.stdout.write(`${startOrder.join(' then ')} started, round ${r + 1}: A ${f(got.A!)} | B ${f(got.B!)}\n`);
    }
    return byRound;
  } finally {
    for (const c of children.reverse()) await c.stop();
    for (const c of cleanups) await c();
  }
}

// Two identical replicas measured this way differed by 5-6% in CPU per request (an A/A run, 2026-11-28: 8 of 8
// rounds, for the one started second): each process brings its own luck. So the comparison sits twice with fresh
// processes, B started second and then first, and B against A is the geometric mean of the two sittings' medians.
const sittings = [await sitting(['A', 'B']), await sitting(['B', 'A'])];
const line = (label: string, pick: (x: Figures) => number) => {
  const medians = sittings.map((rs) => median(rs.map((r) => pick(r.B) / pick(r.A))));
  const lower = sittings.map((rs) => rs.filter((r) => pick(r.B) < pick(r.A)).length);
  return (
    `${label}: B/A ${Math.sqrt(medians[0]! * medians[1]!).toFixed(3)} (medians ${medians.map((m) => m.toFixed(3)).join(' with B started second, ')} with B first; ` +
    `B lower in ${lower[0]} and ${lower[1]} of ${rounds} rounds)`
  );
};
process.stdout.write(
  [
    '',
    `A: node ${flags.A.join(' ') || '(no flags)'} from ${roots.A}; B: node ${flags.B.join(' ') || '(no flags)'} from ${roots.B}; store ${store}; ${rounds} rounds in each of two sittings; ${pin ? 'both on CPU 1' : 'unpinned'}`,
    line('max requests/s', (x) => x.maxRps),
    line('CPU µs/request at the maximum', (x) => x.maxCpuUs),
    line(`p99 at ${rate}/s`, (x) => x.pacedP99),
    line(`CPU µs/request at ${rate}/s`, (x) => x.pacedCpuUs),
    line('p50 sequential', (x) => x.seqP50),
    '',
  ].join('\n'),
);
