import type { Config } from '../config/config.js';
import type { Db } from './db.js';
import { PgliteDb } from './pglite.js';
import { PostgresDb } from './postgres.js';

export async function openStore(store: Config['store'], onError?: (err: Error) => void): Promise<Db> {
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
  return PgliteDb.open(store.dataDir);
}
