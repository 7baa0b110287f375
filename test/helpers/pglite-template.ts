/**
 * The embedded store every suite starts from: a PGlite data directory with every migration applied, dumped to a tar
 * file once and loaded by each suite's in-memory store (PgliteDb's `loadDataDir`). Creating a database runs initdb
 * in WebAssembly, about 7 s of CPU here, and the migrations half a second more; loading the dump takes about 2. The
 * suite opens some ninety embedded stores, on two cores.
 *
 * The file lives in the system's temporary directory, shared by the test processes of a run (and by later runs
 * that would build the same one). Its name carries what it depends on: PGlite's version, every migration's name and
 * text, and the day (migration 017 makes the audit partitions from its own day to a week ahead, so a template is
 * not used on a later day). A process that finds none builds it and renames it into place whole, so a reader never
 * sees half of one; processes starting together may each build one, once.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import type { Db } from '../../src/store/db.js';
import { listMigrations, migrate } from '../../src/store/migrate.js';

let made: Promise<string> | null = null;

/** The path of the migrated template, built first if this run has none yet. */
export function migratedTemplate(): Promise<string> {
  made ??= build();
  return made;
}

function templatePath(): string {
  // Not require('…/package.json'): the package's exports do not list it.
  const manifest = new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url);
  const pgliteVersion = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
  const hash = createHash('sha256').update(pgliteVersion).update(new Date().toISOString().slice(0, 10));
  for (const m of listMigrations()) hash.update(`${m.version} ${m.name}\n${m.sql}`);
  return join(tmpdir(), `reins-test-pglite-${hash.digest('hex').slice(0, 16)}.tar`);
}

async function build(): Promise<string> {
  const path = templatePath();
  if (existsSync(path)) return path;
  const pg = await PGlite.create();
  try {
    await migrateInProcess(pg);
    await pg.query('CHECKPOINT');
    const dump = await pg.dumpDataDir('none');
    const partial = `${path}.${process.pid}.partial`;
    writeFileSync(partial, Buffer.from(await dump.arrayBuffer()));
    renameSync(partial, path);
  } finally {
    await pg.close();
  }
  return path;
}

/**
 * Every migration, applied to a PGlite of this process rather than through PgliteDb's thread (which has no dump
 * message). Also the gateway bench's search floor (bench/gateway-overhead/governed-floor.ts), which keeps its audit
 * rows in Reins' table in its own process.
 */
export async function migrateInProcess(pg: PGlite): Promise<void> {
  // migrate() reads and writes through `query` and `transaction` only.
  const db = {
    kind: 'pglite',
    query: (sql: string, params?: unknown[]) => pg.query(sql, params as unknown[]).then((r) => ({ rows: r.rows, rowCount: r.affectedRows ?? r.rows.length })),
    transaction: <T>(fn: (tx: Pick<Db, 'query'>) => Promise<T>) =>
      pg.transaction((t) => fn({ query: (sql, params) => t.query(sql, params as unknown[]).then((r) => ({ rows: r.rows as never[], rowCount: r.affectedRows ?? r.rows.length })) })),
  } as unknown as Db;
  await migrate(db);
}
