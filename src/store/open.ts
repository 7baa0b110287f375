import type { Config } from '../config/config.js';
import type { Db } from './db.js';
import { PgliteDb, type PgliteOpenOptions } from './pglite.js';
import { PostgresDb } from './postgres.js';

/** Opens the configured store. An embedded directory is locked to this process until the store is closed (data-dir-lock.ts). */
export async function openStore(store: Config['store'], onError?: (err: Error) => void, pglite: PgliteOpenOptions = {}): Promise<Db> {
  if (store.kind === 'postgres') {
    const db = new PostgresDb(store.url, onError);
    try {
      await db.ping();
    } catch (err) {
      await db.close().catch(() => {});
      throw new Error(`cannot reach PostgreSQL at DATABASE_URL: ${(err as Error).message}`);
    }
    return db;
  }
  return PgliteDb.open(store.dataDir, pglite);
}
