/**
 * Bytes a gateway allocates per request, by function, compared between gateways: V8's sampling heap profiler inside
 * each (allocation-sampler.mjs, preloaded), counting collected objects too, one gateway after the other under the
 * same load. Unlike CPU time, the bytes a request allocates do not move with the machine's speed or with what else
 * runs, so two runs minutes apart compare; and the young-generation collections that those bytes cause run on the
 * event loop, inside whichever function was allocating (README.md, "The governance hooks alone").
 *
 *   node --import tsx bench/gateway-overhead/allocations.ts [--targets reins-pg,floor] [--rate 1000] [--seconds 8] [--top 40] [--no-build]
 *
 * Targets: bare, floor, floor-pglite, floor-search, floor-pglite-search, reins, reins-pg (run.ts's names), each alone on CPU 1 with the fake upstream and
 * the load generator on CPU 0, paced at `--rate` requests/s: 3 s unmeasured, then `--seconds` sampled (every 512
 * bytes on average). Printed per target: bytes per request in all and by allocating function; with two or more
 * targets, the first's figure minus each other's, function by function.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { differenceLines, topLines, totalOf } from './perf-samples.js';
import { canPin, delay, type Child } from './processes.js';
import { GATEWAY_NAMES, type GatewayName, startGateway, startUpstreamAndLoader } from './rig.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');

const { values: args } = parseArgs({
  options: {
    targets: { type: 'string', default: 'reins-pg,floor' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '8' },
    top: { type: 'string', default: '40' },
    'no-build': { type: 'boolean', default: false },
  },
});
const targets = args.targets.split(',').map((t) => t.trim()) as GatewayName[];
for (const t of targets) if (!GATEWAY_NAMES.includes(t)) throw new Error(`--targets: unknown target "${t}" (one of ${GATEWAY_NAMES.join(', ')})`);
const rate = Number(args.rate);
const seconds = Number(args.seconds);
const top = Number(args.top);
if (!(rate > 0)) throw new Error('--rate must be a positive number of requests per second');
if (!(seconds > 0)) throw new Error('--seconds must be a positive number');
if (!Number.isInteger(top) || top < 1) throw new Error('--top must be a whole number from 1');
if (targets.some((t) => t.startsWith('reins')) && !args['no-build']) {
  process.stderr.write('building dist/ …\n');
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}
const pin = canPin();

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: ProfileNode[];
}
interface Profile {
  head: ProfileNode;
  samples: { size: number; nodeId: number }[];
}

/** Bytes per request charged to each allocating function (the leaf of the sample's stack). */
function byFunction(profile: Profile, requests: number): Map<string, number> {
  const nodes = new Map<number, ProfileNode>();
  const walk = (n: ProfileNode): void => {
    nodes.set(n.id, n);
    for (const c of n.children) walk(c);
  };
  walk(profile.head);
  const by = new Map<string, number>();
  for (const s of profile.samples) {
    const f = nodes.get(s.nodeId)!.callFrame;
    const url = f.url.replace(`file://${ROOT}/`, '').replace(`${ROOT}/node_modules/`, '').replace(`${ROOT}/`, '');
    const name = `${f.functionName || '(anonymous)'} ${url}:${f.lineNumber + 1}`;
    by.set(name, (by.get(name) ?? 0) + s.size / requests);
  }
  return by;
}

async function measure(name: GatewayName, dir: string): Promise<{ requests: number; by: Map<string, number> }> {
  const children: Child[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  const file = join(dir, `${name}.heapprofile`);
  process.env.ALLOCATION_PROFILE = file;
  try {
    const { upstream, loader } = await startUpstreamAndLoader(pin ? 0 : null, children);
    const { pid, target } = await startGateway(name, upstream, ['--import', join(HERE, 'allocation-sampler.mjs')], pin ? 1 : null, children, cleanups);
    await loader.run({ kind: 'paced', target, rate, warmupSeconds: 0, seconds: 3, connections: 32 });
    process.kill(pid, 'SIGUSR2');
    await delay(200);
    const result = await loader.run({ kind: 'paced', target, rate, warmupSeconds: 0, seconds, connections: 32 });
    process.kill(pid, 'SIGUSR2');
    for (let waited = 0; !existsSync(file) && waited < 30_000; waited += 100) await delay(100);
    // The profile is written in one call; give a large one time to be complete on disk.
    await delay(500);
    return { requests: result.ok, by: byFunction(JSON.parse(readFileSync(file, 'utf8')) as Profile, result.ok) };
  } finally {
    for (const c of children.reverse()) await c.stop();
    for (const c of cleanups) await c();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'allocations-'));
const results: { name: GatewayName; requests: number; by: Map<string, number> }[] = [];
try {
  for (const name of targets) {
    process.stderr.write(`${name} …\n`);
    const m = await measure(name, dir);
    results.push({ name, ...m });
    process.stdout.write(`\n${name}: ${m.requests} requests in ${seconds} s (${rate}/s paced); ${totalOf(m.by).toFixed(0)} bytes allocated per request\n`);
    for (const line of topLines(m.by, top)) process.stdout.write(`${line}\n`);
  }
  const [first, ...others] = results;
  for (const other of others) {
    process.stdout.write(`\n${first!.name} minus ${other.name}: ${(totalOf(first!.by) - totalOf(other.by)).toFixed(0)} bytes per request; by function (first, other):\n`);
    for (const line of differenceLines(first!.by, other.by, top)) process.stdout.write(`${line}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
