/**
 * Where the tail at 1,000 requests/s comes from: each target alone on CPU 1 (the fake upstream, the load generator
 * and the local PostgreSQL server on CPU 0, as run.ts places them) under the main bench's paced job, with
 * `perf sched record` of the whole machine attached. For the three threads an answer waits on (the load generator,
 * which takes the time; the fake upstream; the gateway's event loop) it reports how long each waited for its CPU
 * after being woken, and, over the waits longer than 0.5 ms, which other tasks held that CPU meanwhile.
 *
 *   node --import tsx bench/gateway-overhead/tail-sched.ts [--targets bare,floor,reins-pg,reins] [--seconds 4] [--by-thread] [--realtime] [--keep DIR] [--no-build]
 *
 * `--realtime` runs the load generator's and the fake upstream's main threads at real-time priority during the
 * measured seconds, as run.ts does in its latency jobs. `--keep DIR` keeps perf's data (`perf sched timehist -i DIR/<target>.sched.data`). `--by-thread` names each of the gateway's other threads by its id instead of counting them together (the embedded
 * store's thread is the one started last, with the highest id; V8's helper threads are started with the process).
 * Writes bench/results/tail-sched.md (the machine line first). Needs `perf` (Debian's linux-perf) and the right to
 * trace the scheduler (root, or kernel.perf_event_paranoid <= 1). Reins runs from dist/ (built first unless --no-build).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadJob } from './load.js';
import { requirePerf } from './perf-samples.js';
import { type Child, canPin, instrumentsFirst, machineFacts, pinPostgres } from './processes.js';
import { GATEWAY_NAMES, type GatewayName, startGateway, startUpstreamAndLoader } from './rig.js';
import { type Slice, type Waits, parseTimehist, waitsOf } from './sched-waits.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const NAMES = GATEWAY_NAMES;
type Name = GatewayName;
const LABELS: Record<Name, string> = {
  bare: 'bare Node proxy',
  floor: 'governed floor, PostgreSQL',
  'floor-pglite': 'governed floor, PGlite',
  'floor-search': 'search floor, PostgreSQL',
  'floor-pglite-search': 'search floor, PGlite',
  reins: 'Reins, PGlite',
  'reins-pg': 'Reins, PostgreSQL',
};

const { values: args } = parseArgs({
  options: {
    targets: { type: 'string', default: 'bare,floor,reins-pg,reins' },
    seconds: { type: 'string', default: '4' },
    'by-thread': { type: 'boolean', default: false },
    keep: { type: 'string' },
    realtime: { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
  },
});
const targets = args.targets.split(',').map((t) => t.trim()) as Name[];
for (const t of targets) if (!NAMES.includes(t)) throw new Error(`--targets: unknown target "${t}" (one of ${NAMES.join(', ')})`);
const seconds = Number(args.seconds);
if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
requirePerf();
if (!canPin()) throw new Error('tail-sched.ts needs two CPUs and taskset: the question it answers is who shares a core');
const CPU = { gateway: 1, rest: 0 };
const facts = machineFacts(ROOT, []);
const placement = pinPostgres(CPU.rest);
if (targets.some((t) => t.startsWith('reins')) && !args['no-build']) {
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')], { stdio: 'inherit' });
}

interface Measured {
  name: Name;
  p50: number;
  p90: number;
  p99: number;
  threads: { who: string; waits: Waits }[];
}

async function measure(name: Name, scratch: string): Promise<Measured> {
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const { upstream, upstreamPid, loader } = await startUpstreamAndLoader(CPU.rest, children);
    const { pid, target } = await startGateway(name, upstream, [], CPU.gateway, children, cleanups);
    const job: LoadJob = { kind: 'paced', target, rate: 1000, warmupSeconds: 0, seconds, connections: 32 };
    await loader.run({ ...job, seconds: 3 });
    const data = join(scratch, `${name}.sched.data`);
    const perf = spawn('perf', ['sched', 'record', '-a', '-o', data], { stdio: 'ignore' });
    const recorded = new Promise<void>((done) => perf.once('exit', () => done()));
    // --realtime: the instruments as run.ts runs them in its latency jobs.
    const restore = args.realtime ? instrumentsFirst([loader.child.pid, upstreamPid]) : null;
    if (args.realtime && restore === null) throw new Error('--realtime: this user may not raise threads to real-time priority');
    const result = await loader.run(job).finally(() => restore?.());
    perf.kill('SIGINT');
    await recorded;
    const text = execFileSync('perf', ['sched', 'timehist', '-i', data], { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] }).toString();
    const slices = parseTimehist(text);
    const label = (s: Slice): string => {
      if (s.pid === pid) return s.tid === pid ? `${name}: event loop` : args['by-thread'] ? `${name}: thread ${s.tid}` : `${name}: its other threads`;
      if (s.pid === loader.child.pid) return 'load generator';
      if (s.pid === upstreamPid) return 'fake upstream';
      return s.comm === 'postgres' ? 'PostgreSQL' : s.comm;
    };
    const watched: [string, number][] = [
      ['load generator', loader.child.pid],
      ['fake upstream', upstreamPid],
      [`${name}: event loop`, pid],
    ];
    return {
      name,
      p50: result.latency?.p50 ?? Number.NaN,
      p90: result.latency?.p90 ?? Number.NaN,
      p99: result.latency?.p99 ?? Number.NaN,
      threads: watched.map(([who, tid]) => ({ who, waits: waitsOf(slices, tid, label) })),
    };
  } finally {
    for (const c of children.reverse()) await c.stop();
    for (const c of cleanups) await c();
  }
}

const scratch = args.keep ? resolve(args.keep) : mkdtempSync(join(tmpdir(), 'tail-sched-'));
mkdirSync(scratch, { recursive: true });
const lines: string[] = [
  '# Where the tail at 1,000 requests/s waits',
  '',
  `${new Date().toISOString()}, ${facts.cores} × ${facts.cpuModel}, ${facts.kernel}, Node ${facts.node}; Reins ${String(facts.reinsCommit).slice(0, 12)}. ` +
    `Machine speed ${facts.speedMs} ms (processes.ts machineSpeedMs, lower is faster). Placement: each target alone on CPU 1; the load generator and the fake upstream on CPU 0${placement ? `, and ${placement}` : ""}. ` +
    `Each target: ${seconds} s at 1,000 requests/s after 3 s unmeasured, \`perf sched record -a\` over the measured seconds${args.realtime ? ', the load generator\'s and the fake upstream\'s main threads at real-time priority meanwhile (--realtime)' : ''}. ` +
    'How to read it: bench/gateway-overhead/README.md, "Where the tail waits".',
  '',
  '| target | p50 | p90 | p99 | thread | runs | waited p50 | p99 | max | waits > 0.5 ms | what ran on its CPU meanwhile (ms in all) |',
  '| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |',
];
try {
  for (const name of targets) {
    process.stderr.write(`${name} …\n`);
    const m = await measure(name, scratch);
    m.threads.forEach(({ who, waits }, i) => {
      const head = i === 0 ? `| ${LABELS[name]} | ${m.p50.toFixed(3)} | ${m.p90.toFixed(3)} | ${m.p99.toFixed(3)}` : '| | | |';
      const blockers = waits.blockers.slice(0, 4).map(([b, ms]) => `${b} ${ms.toFixed(1)}`).join(', ') || '-';
      lines.push(`${head} | ${who} | ${waits.runs} | ${waits.p50.toFixed(3)} | ${waits.p99.toFixed(3)} | ${waits.max.toFixed(3)} | ${waits.long} | ${blockers} |`);
    });
    process.stdout.write(`${lines.slice(-3).join('\n')}\n`);
  }
} finally {
  if (!args.keep) rmSync(scratch, { recursive: true, force: true });
}
lines.push('', 'Latencies and waits in ms. "runs": times perf saw the thread put on a CPU in the measured seconds.', '');
writeFileSync(join(ROOT, 'bench/results/tail-sched.md'), `${lines.join('\n')}`);
process.stdout.write('bench/results/tail-sched.md written\n');
