/**
 * The pieces the side-by-side tools share (perf-attribution.ts, flags-ab.ts): the fake upstream and the load
 * generator on the other CPU, and a Reins replica set up as the main bench sets it up (reins-setup.ts).
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './bench-database.js';
import { startGovernedFloor } from './floor-child.js';
import type { LoadJob, LoadResult } from './load.js';
import { type Target, UPSTREAM_KEY } from './payloads.js';
import { type Child, JobChild, REINS_NODE_FLAGS, instrumentFlags, startServer } from './processes.js';
import { setUpReins } from './reins-setup.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const TSX = ['--import', 'tsx'];

/**
 * The fake upstream and the load generator, both on `cpu` (null: unpinned); stopped with `children`. `upstreamPid`
 * is for raising the instruments' priority during a paced job (processes.ts instrumentsFirst).
 */
export async function startUpstreamAndLoader(
  cpu: number | null,
  children: Child[],
): Promise<{ upstream: string; upstreamPid: number; loader: JobChild<LoadJob, LoadResult> }> {
  const upstream = await startServer('fake upstream', [...instrumentFlags(cpu), ...TSX, join(HERE, 'fake-upstream.ts')], { cpu });
  children.push(upstream.child);
  const loader = new JobChild<LoadJob, LoadResult>('load generator', [...instrumentFlags(cpu), ...TSX, join(HERE, 'load.ts')], cpu);
  children.push(loader.child);
  return { upstream: upstream.url, upstreamPid: upstream.child.pid, loader };
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

/** The gateways the side-by-side tools measure one at a time (run.ts's names). */
export const GATEWAY_NAMES = ['bare', 'floor', 'floor-pglite', 'floor-search', 'floor-pglite-search', 'reins', 'reins-pg'] as const;
export type GatewayName = (typeof GATEWAY_NAMES)[number];

/**
 * One gateway on `cpu`, started with `nodeFlags` (profiling flags; Reins also gets the start script's flags) and set
 * up as the main bench sets it up: the bare proxy, the governed floor on either store, or Reins on either store.
 */
export async function startGateway(
  name: GatewayName,
  upstream: string,
  nodeFlags: string[],
  cpu: number | null,
  children: Child[],
  cleanups: (() => Promise<void>)[],
): Promise<{ pid: number; target: Target }> {
  if (name === 'bare') {
    const s = await startServer(name, [...nodeFlags, ...TSX, join(HERE, 'bare-proxy.ts'), upstream], { cpu });
    children.push(s.child);
    return { pid: s.child.pid, target: { name, url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${UPSTREAM_KEY}` } } };
  }
  if (name !== 'reins' && name !== 'reins-pg') {
    const s = await startGovernedFloor(name, name, upstream, [...nodeFlags, ...TSX], { cpu }, cleanups);
    children.push(s.child);
    return { pid: s.child.pid, target: s.target };
  }
  return startBenchReins(name, name === 'reins-pg' ? 'pg' : 'pglite', [...REINS_NODE_FLAGS, ...nodeFlags], upstream, cpu, children, cleanups);
}
