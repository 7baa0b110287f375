/**
 * Where a gateway's CPU per request goes, compared between gateways: Linux `perf` samples each one (all its
 * threads) under the same load, and every sample is charged to the first JavaScript function on its stack (the
 * function that called into V8's builtins, the runtime, the kernel or the garbage collector), as µs per request.
 *
 *   node --import tsx bench/gateway-overhead/perf-attribution.ts [--targets reins-pg,floor] [--rate N | --max]
 *        [--seconds S] [--top N] [--out DIR] [--no-build]
 *
 * Targets: bare, floor, floor-pglite, floor-search, floor-pglite-search, reins, reins-pg (run.ts's names). Each runs alone on CPU 1 with the fake upstream
 * and the load generator on CPU 0, one after the other: 3 s of load unmeasured, then `--seconds` (default 8) of load
 * with `perf record -F 4000 -g` attached; the gateway's own CPU time over the window comes from /proc. The load is
 * paced at `--rate` requests/s (default 1,000: every target at the same load) or, with `--max`, the closed loop's 50
 * connections. Printed per target: CPU µs per request (/proc), perf's µs per request, and the functions that cost
 * most; with two or more targets, the first's figure minus each other's, function by function: what the first
 * spends that the other does not. `--out DIR` keeps perf's data and the tables.
 *
 * Why perf and not V8's profiler (run.ts `--cpu-prof`): V8's sampler runs on the wall clock and an in-process
 * thread, so a sample taken while the process waits to be scheduled (a socket write that woke a process on this
 * core) is charged to that write, and its own cost grows with the stack depth (Reins' 170 µs a request read as
 * 380 µs under it). perf samples CPU time only, from the kernel, at a cost of a few percent. `--perf-basic-prof`
 * makes Node write the names of its compiled functions for perf to read. Needs `perf` (Debian's linux-perf) and
 * the right to profile a process (root, or kernel.perf_event_paranoid <= 1).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadJob } from './load.js';
import type { Target } from './payloads.js';
import { attributePerf, differenceLines, requirePerf, startPerf, topLines, totalOf } from './perf-samples.js';
import { canPin, processCpuMs, type Child } from './processes.js';
import { GATEWAY_NAMES, type GatewayName, startGateway, startUpstreamAndLoader } from './rig.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const NAMES = GATEWAY_NAMES;
type Name = GatewayName;

const { values: args } = parseArgs({
  options: {
    targets: { type: 'string', default: 'reins-pg,floor' },
    rate: { type: 'string', default: '1000' },
    max: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '8' },
    top: { type: 'string', default: '40' },
    out: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
  },
});

const targets = args.targets.split(',').map((t) => t.trim()) as Name[];
for (const t of targets) if (!NAMES.includes(t)) throw new Error(`--targets: unknown target "${t}" (one of ${NAMES.join(', ')})`);
const seconds = Number(args.seconds);
const rate = Number(args.rate);
if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
if (!args.max && !(rate > 0)) throw new Error('--rate must be a positive number of requests per second');
requirePerf();
const pin = canPin();
const CPU = { gateway: pin ? 1 : null, rest: pin ? 0 : null };
const out = args.out ? resolve(args.out) : mkdtempSync(join(tmpdir(), 'perf-attribution-'));
mkdirSync(out, { recursive: true });

if (targets.some((t) => t.startsWith('reins')) && !args['no-build']) {
  process.stderr.write('building dist/ …\n');
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

interface Measured {
  name: Name;
  requests: number;
  cpuUsPerRequest: number;
  /** µs per request charged to each first JavaScript frame (or "(no JavaScript)"), from perf's samples. */
  byFunction: Map<string, number>;
  perfUsPerRequest: number;
}

function loadJob(target: Target, measuredSeconds: number, warmupSeconds: number): LoadJob {
  return args.max
    ? { kind: 'max', target, connections: 50, warmupSeconds, seconds: measuredSeconds }
    : { kind: 'paced', target, rate, warmupSeconds, seconds: measuredSeconds, connections: 32 };
}

async function measure(name: Name): Promise<Measured> {
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    const { upstream, loader } = await startUpstreamAndLoader(CPU.rest, children);
    const { pid, target } = await startGateway(name, upstream, ['--perf-basic-prof'], CPU.gateway, children, cleanups);
    await loader.run(loadJob(target, 3, 1));
    const data = join(out, `${name}.perf.data`);
    const cpuBefore = processCpuMs(pid);
    const perf = startPerf(pid, data);
    const result = await loader.run(loadJob(target, seconds, 0));
    const cpuMs = processCpuMs(pid) - cpuBefore;
    await perf.stop();
    const requests = result.ok;
    const byFunction = attributePerf(data, requests);
    const perfUs = totalOf(byFunction);
    // Kept with --out, so that `perf report -i DIR/<target>.perf.data` can still name the functions.
    if (!args.out) rmSync(`/tmp/perf-${pid}.map`, { force: true });
    return { name, requests, cpuUsPerRequest: (cpuMs * 1000) / requests, byFunction, perfUsPerRequest: perfUs };
  } finally {
    for (const c of children.reverse()) await c.stop();
    for (const c of cleanups) await c();
  }
}

const top = Number(args.top);
const lines: string[] = [];
const say = (line: string) => {
  lines.push(line);
  process.stdout.write(`${line}\n`);
};
const results: Measured[] = [];
for (const name of targets) {
  process.stderr.write(`${name} …\n`);
  const m = await measure(name);
  results.push(m);
  say(`\n${name}: ${m.requests} requests in ${seconds} s (${args.max ? 'max' : `${rate}/s paced`}); CPU ${m.cpuUsPerRequest.toFixed(1)} µs/request (/proc), perf ${m.perfUsPerRequest.toFixed(1)} µs/request`);
  for (const line of topLines(m.byFunction, top)) say(line);
}
const [first, ...others] = results;
for (const other of others) {
  say(`\n${first!.name} minus ${other.name}: ${(first!.perfUsPerRequest - other.perfUsPerRequest).toFixed(1)} µs/request (perf), ${(first!.cpuUsPerRequest - other.cpuUsPerRequest).toFixed(1)} (/proc); by function (first, other):`);
  for (const line of differenceLines(first!.byFunction, other.byFunction, top)) say(line);
}
if (args.out) {
  writeFileSync(join(out, 'attribution.txt'), `${lines.join('\n')}\n`);
  process.stderr.write(`perf data and attribution.txt in ${out}\n`);
} else {
  rmSync(out, { recursive: true, force: true });
}
