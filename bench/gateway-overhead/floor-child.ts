/**
 * Starts a governed floor (governed-floor.ts) as a child process on its store: a fresh PostgreSQL database
 * (`floor`, `floor-search`; dropped by `cleanups`) or PGlite in memory in its own process (`floor-pglite`,
 * `floor-pglite-search`), with a key of its own. The `-search` floors keep their audit rows in Reins' audit table,
 * with the audit search's indexes; the others in a table with a primary key only.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './bench-database.js';
import type { Target } from './payloads.js';
import { type Child, type ChildOptions, startServer } from './processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));

export type FloorName = 'floor' | 'floor-pglite' | 'floor-search' | 'floor-pglite-search';
export const FLOOR_NAMES: readonly FloorName[] = ['floor', 'floor-pglite', 'floor-search', 'floor-pglite-search'];

/** `nodeArgs` go before the script (profiling flags, `--import tsx`); the database's drop is pushed on `cleanups`. */
export async function startGovernedFloor(
  name: FloorName,
  label: string,
  upstream: string,
  nodeArgs: string[],
  options: ChildOptions,
  cleanups: (() => Promise<void>)[],
): Promise<{ child: Child; target: Target }> {
  let store = 'memory';
  if (!name.startsWith('floor-pglite')) {
    const db = await createBenchDatabase();
    cleanups.push(db.drop);
    store = db.url;
  }
  const key = `rk-floor-${randomBytes(16).toString('hex')}`;
  const s = await startServer(label, [...nodeArgs, join(HERE, 'governed-floor.ts'), upstream, key, store, name.endsWith('-search') ? 'search' : 'own'], options);
  return { child: s.child, target: { name, url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${key}` } } };
}
