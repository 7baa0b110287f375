/**
 * The embedded store's thread at its shipped priority (nice 5 below the event loop) against the kernel's idle
 * policy (`SCHED_IDLE`, preempted as soon as another thread of its CPU wakes), in one Reins replica on PGlite:
 *
 *   node --import tsx bench/gateway-overhead/store-thread-ab.ts [--rounds 6] [--no-build]
 *
 * Reins alone on CPU 1, the load generator and the fake upstream on CPU 0, 1,000 requests/s; each round runs the
 * two policies one after the other (the order turned every round), switched on the live thread with `chrt`, so the
 * process, its heap and its JIT are the same for both and only the policy differs. The store's thread is the one
 * thread of the replica with a positive nice value (src/store/pglite-worker.ts lowers its own). Prints each round's
 * latencies; README.md, "Where the tail waits", has what it showed.
 */
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LoadJob } from './load.js';
import { type Child, canPin, helperThreads, threadNice } from './processes.js';
import { startGateway, startUpstreamAndLoader } from './rig.js';

const { values: args } = parseArgs({ options: { rounds: { type: 'string', default: '6' }, 'no-build': { type: 'boolean', default: false } } });
const rounds = Number(args.rounds);
if (!Number.isInteger(rounds) || rounds < 1) throw new Error(`--rounds: a whole number from 1, got "${args.rounds}"`);
if (!canPin()) throw new Error('needs taskset and two CPUs: the replica alone on CPU 1');
if (!args['no-build']) {
  const root = join(dirname(fileURLToPath(import.meta.url)), '../..');
  execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
}

const children: Child[] = [];
const cleanups: (() => Promise<void>)[] = [];
try {
  const { upstream, loader } = await startUpstreamAndLoader(0, children);
  const { pid, target } = await startGateway('reins', upstream, [], 1, children, cleanups);
  const store = helperThreads(pid).filter((tid) => threadNice(pid, tid) > 0);
  if (store.length !== 1) throw new Error(`expected one thread below the event loop's priority (the store's), found ${store.length}`);
  const tid = String(store[0]!);
  const job: LoadJob = { kind: 'paced', target, rate: 1000, warmupSeconds: 1, seconds: 3, connections: 32 };
  await loader.run({ ...job, warmupSeconds: 0, seconds: 4 });
  console.log(`Reins on PGlite, pid ${pid}, store thread ${tid}; latencies in ms at 1,000 requests/s`);
  for (let round = 0; round < rounds; round++) {
    for (const policy of round % 2 === 0 ? ['nice 5', 'idle'] : ['idle', 'nice 5']) {
      // chrt --other keeps the thread's nice value (5), which pglite-worker.ts set.
      execFileSync('chrt', [policy === 'idle' ? '--idle' : '--other', '--pid', '0', tid]);
      const r = await loader.run(job);
      const l = r.latency!;
      console.log(`round ${round + 1} ${policy.padEnd(6)} p50 ${l.p50.toFixed(3)}  p90 ${l.p90.toFixed(3)}  p99 ${l.p99.toFixed(2)}  max ${l.max.toFixed(1)}  (${r.ok} ok, ${r.failed} failed)`);
    }
  }
} finally {
  for (const c of children) await c.stop().catch(() => {});
  for (const c of cleanups) await c().catch(() => {});
}
process.exit(0);
