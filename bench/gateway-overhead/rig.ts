/**
 * The pieces the side-by-side tools share (perf-attribution.ts, flags-ab.ts): the fake upstream and the load
 * generator on the other CPU, and a Reins replica set up as the main bench sets it up (reins-setup.ts).
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './bench-database.js';
import type { LoadJob, LoadResult } from './load.js';
import type { Target } from './payloads.js';
import { type Child, JobChild, startServer } from './processes.js';
import { setUpReins } from './reins-setup.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const TSX = ['--import', 'tsx'];

/** The fake upstream and the load generator, both on `cpu` (null: unpinned); stopped with `children`. */
export async function startUpstreamAndLoader(cpu: number | null, children: Child[]): Promise<{ upstream: string; loader: JobChild<LoadJob, LoadResult> }> {
  const upstream = await startServer('fake upstream', [...TSX, join(HERE, 'fake-upstream.ts')], { cpu });
  children.push(upstream.child);
  const loader = new JobChild<LoadJob, LoadResult>('load generator', [...TSX, join(HERE, 'load.ts')], cpu);
  children.push(loader.child);
  return { upstream: upstream.url, loader };
}

/**
 * A Reins replica from dist/ (reins-server.ts) started with `nodeFlags`, on a fresh PostgreSQL database (`store`
 * 'pg', dropped by `cleanups`) or on PGlite in memory, set up with the bench's agent and policies. `root`: the
 * checkout whose reins-server.ts (and so whose dist/) runs; this one by default.
 */
export async function startBenchReins(
  label: string,
  store: 'pg' | 'pglite',
  nodeFlags: string[],
  upstream: string,
  cpu: number | null,
  children: Child[],
  cleanups: (() => Promise<void>)[],
  root: string = join(HERE, '../..'),
): Promise<{ pid: number; target: Target }> {
  const database: string[] = [];
  if (store === 'pg') {
    const db = await createBenchDatabase();
    cleanups.push(db.drop);
    database.push(db.url);
  }
  const admin = randomBytes(24).toString('hex');
  const s = await startServer(label, [...nodeFlags, ...TSX, join(root, 'bench/gateway-overhead/reins-server.ts'), upstream, admin, ...database], { cpu });
  children.push(s.child);
  const setup = await setUpReins(s.url, admin, { allowPartial: false });
  return { pid: s.child.pid, target: setup.target };
}
