/**
 * Starts the governed floor (governed-floor.ts) as a child process on its store: a fresh PostgreSQL database
 * (`floor`, dropped by `cleanups`) or PGlite in memory in its own process (`floor-pglite`), with a key of its own.
 */
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createBenchDatabase } from './bench-database.js';
import type { Target } from './payloads.js';
import { type Child, type ChildOptions, startServer } from './processes.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** `nodeArgs` go before the script (profiling flags, `--import tsx`); the database's drop is pushed on `cleanups`. */
export async function startGovernedFloor(
  name: 'floor' | 'floor-pglite',
  label: string,
  upstream: string,
  nodeArgs: string[],
  options: ChildOptions,
  cleanups: (() => Promise<void>)[],
): Promise<{ child: Child; target: Target }> {
  let store = 'memory';
  if (name === 'floor') {
    const db = await createBenchDatabase();
    cleanups.push(db.drop);
    store = db.url;
  }
  const key = `rk-floor-${randomBytes(16).toString('hex')}`;
  const s = await startServer(label, [...nodeArgs, join(HERE, 'governed-floor.ts'), upstream, key, store], options);
  return { child: s.child, target: { name, url: `${s.url}/v1/chat/completions`, headers: { authorization: `Bearer ${key}` } } };
}
